//! The client's side of the `initialize` handshake: the protocol version and the
//! name it announces, and a server that wants OAuth named as such.

use std::sync::{Arc, Mutex};

use brute_mcp::{McpError, McpTools};
use rmcp::model::{InitializeRequestParams, InitializeResult, ServerCapabilities, ServerConfig};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A server with no tools that keeps the `initialize` request it was sent.
#[derive(Clone, Default)]
struct Recorder {
    seen: Arc<Mutex<Option<InitializeRequestParams>>>,
}

impl ServerHandler for Recorder {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        *self.seen.lock().expect("not poisoned") = Some(request.clone());
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }
}

#[tokio::test]
async fn the_client_announces_the_version_it_speaks_and_its_own_name() {
    let recorder = Recorder::default();
    let seen = recorder.seen.clone();
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let running = recorder
            .serve(server_io)
            .await
            .expect("the handshake succeeds");
        let _ = running.waiting().await;
    });
    let tools = McpTools::connect("recorder", client_io)
        .await
        .expect("the client connects");
    let request = seen
        .lock()
        .expect("not poisoned")
        .clone()
        .expect("the server saw an initialize request");
    // The client runs the initialize lifecycle, so it announces the latest revision
    // that has one, not rmcp's newest (which has no initialize handshake).
    assert_eq!(request.protocol_version.to_string(), "2025-11-25");
    assert_eq!(request.client_info.name, "brute-mcp");
    assert_eq!(request.client_info.version, env!("CARGO_PKG_VERSION"));
    drop(tools);
}

/// Answers every HTTP request on a listener of 127.0.0.1 with 401 and an OAuth
/// challenge, as a server that needs OAuth does; returns its URL.
async fn oauth_only_server() -> String {
    answering(|address| {
        let challenge = format!(
            "Bearer resource_metadata=\"http://{address}/.well-known/oauth-protected-resource\""
        );
        format!(
            "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: {challenge}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
    })
    .await
}

/// Answers every HTTP request on a listener of 127.0.0.1 with `response(address)`;
/// returns the URL of its `/mcp`.
async fn answering(response: fn(std::net::SocketAddr) -> String) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a local port");
    let address = listener.local_addr().expect("an address");
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                // The request's head (and whatever of its body came with it).
                let mut buf = vec![0u8; 64 * 1024];
                let _ = socket.read(&mut buf).await;
                let _ = socket.write_all(response(address).as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    format!("http://{address}/mcp")
}

#[tokio::test]
async fn a_server_that_needs_oauth_is_named_as_such() {
    let url = oauth_only_server().await;
    let error = McpTools::http("secure", url.clone())
        .await
        .expect_err("the server refuses every request");
    let McpError::AuthRequired {
        server,
        url: named,
        challenge,
    } = &error
    else {
        panic!("expected AuthRequired, got {error:?}: {error}");
    };
    assert_eq!(server, "secure");
    assert_eq!(named, &url);
    assert!(challenge.contains("resource_metadata"), "{challenge}");
    let text = error.to_string();
    assert!(text.contains(&format!("401 from {url}")), "{text}");
    assert!(text.contains("needs OAuth"), "{text}");
    // No transport type names in what a user reads.
    assert!(!text.contains("rmcp::"), "{text}");
}

#[tokio::test]
async fn a_failed_handshake_says_why_without_rust_type_names() {
    let url = answering(|_| {
        "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            .to_string()
    })
    .await;
    let error = McpTools::http("broken", url)
        .await
        .expect_err("the server fails every request");
    assert!(matches!(error, McpError::Initialize { .. }), "{error:?}");
    let text = error.to_string();
    assert!(text.contains("the handshake failed"), "{text}");
    assert!(
        !text.contains("rmcp::") && !text.contains("reqwest::"),
        "{text}"
    );
}

/// Serves `tools` over streamable HTTP on 127.0.0.1 (rmcp's service, as
/// `serve_http` does) and sends a message on `deletes` for each `DELETE` it gets;
/// returns the URL.
async fn serving_with_deletes<T: brute::tools::ToolSet + 'static>(
    tools: brute_mcp::ToolSetServer<T>,
    deletes: tokio::sync::mpsc::UnboundedSender<()>,
) -> String {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a local port");
    let address = listener.local_addr().expect("an address");
    let service = StreamableHttpService::new(
        move || Ok(tools.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (service, deletes) = (service.clone(), deletes.clone());
            let handler = hyper::service::service_fn(move |request: hyper::Request<_>| {
                let (service, deletes) = (service.clone(), deletes.clone());
                async move {
                    if request.method() == hyper::Method::DELETE {
                        let _ = deletes.send(());
                    }
                    Ok::<_, std::convert::Infallible>(service.handle(request).await)
                }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), handler),
            );
        }
    });
    format!("http://{address}/mcp")
}

#[tokio::test]
async fn closing_the_client_ends_its_http_session_with_delete() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let server = brute_mcp::ToolSetServer::new(
        brute::tools::Tools::READ_ONLY,
        brute::tools::ToolContext::new(dir.path()).expect("a context"),
    );
    let (deletes, mut deleted) = tokio::sync::mpsc::unbounded_channel();
    let url = serving_with_deletes(server, deletes).await;
    let tools = McpTools::http("local", url)
        .await
        .expect("the client connects");
    drop(tools.clone());
    assert!(deleted.try_recv().is_err(), "a clone's drop ends nothing");
    tools.close().await;
    assert!(
        deleted.try_recv().is_ok(),
        "close returns after the session was deleted"
    );
}
