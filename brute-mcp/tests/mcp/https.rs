//! The MCP client over HTTPS and with credentials: a brute tool set served over
//! streamable HTTP behind a TLS listener on 127.0.0.1 with a self-signed certificate,
//! reached with that certificate trusted (and refused without it); and the bearer
//! token and headers as a server receives them.

use std::net::SocketAddr;
use std::sync::Arc;

use brute::middleware::Loop;
use brute::providers::ScriptedModel;
use brute::tools::{DefaultToolPipeline, ToolContext, ToolSet, Tools};
use brute::{Message, ToolCall, brute_agent};
use brute_mcp::{HttpServer, McpError, McpTools, ToolSetServer};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio_rustls::TlsAcceptor;

/// A self-signed certificate for `localhost` and `127.0.0.1`.
fn certificate() -> rcgen::CertifiedKey<rcgen::KeyPair> {
    rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()])
        .expect("a self-signed certificate")
}

/// Serves brute's read-only tools, confined to `root`, over plain streamable HTTP on
/// 127.0.0.1, behind a TLS listener with `certificate`; the URL is `https://`. Both
/// stop when the returned sender is dropped.
async fn serve_https(
    root: &std::path::Path,
    certificate: &rcgen::CertifiedKey<rcgen::KeyPair>,
) -> (String, oneshot::Sender<()>) {
    let plain = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
    let backend = plain.local_addr().expect("an address");
    let server = ToolSetServer::new(Tools::READ_ONLY, ToolContext::new(root).expect("a root"));
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let shutdown = async move {
            let _ = stopped.await;
        };
        brute_mcp::serve_http(server, plain, shutdown)
            .await
            .expect("the server runs");
    });
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("TLS versions")
    .with_no_client_auth()
    .with_single_cert(
        vec![certificate.cert.der().clone()],
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            certificate.signing_key.serialize_der(),
        )),
    )
    .expect("a server certificate");
    let front = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
    let url = format!(
        "https://localhost:{}/mcp",
        front.local_addr().expect("an address").port()
    );
    tokio::spawn(terminate_tls(
        front,
        TlsAcceptor::from(Arc::new(config)),
        backend,
    ));
    (url, stop)
}

/// Accepts TLS on `front` and relays each connection's bytes to `backend`.
async fn terminate_tls(front: TcpListener, acceptor: TlsAcceptor, backend: SocketAddr) {
    while let Ok((stream, _)) = front.accept().await {
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            // A client that refuses the certificate ends the handshake: nothing to relay.
            let Ok(mut tls) = acceptor.accept(stream).await else {
                return;
            };
            let mut plain = TcpStream::connect(backend)
                .await
                .expect("the backend listens");
            let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
        });
    }
}

/// Every message in `error`'s chain of causes.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(" <- ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_are_listed_and_called_over_https_with_the_servers_root_trusted() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(dir.path().join("notes.txt"), "reached over TLS\n").expect("a file");
    let certificate = certificate();
    let (url, _stop) = serve_https(dir.path(), &certificate).await;

    let server = HttpServer::new(url.as_str())
        .root_certificate_pem(certificate.cert.pem().as_bytes())
        .expect("a PEM certificate");
    let remote = McpTools::http_with("private-ca", server)
        .await
        .expect("the client connects over https");
    let mut specs = Vec::new();
    remote.specs(&mut specs);
    assert!(specs.iter().any(|s| s.name == "read"), "listed: {specs:?}");

    let work = tempfile::tempdir().expect("a temporary directory");
    let model = ScriptedModel::per_turn([
        Message::tool_calls(
            "",
            vec![ToolCall::new(
                "c1",
                "read",
                json!({"file_path": "notes.txt"}),
            )],
        ),
        Message::assistant("done"),
    ]);
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: remote, root: work.path(), output_dir: work.path() };
        run model;
    };
    let outcome = agent.start("Read the notes.").await.expect("the turn runs");
    let result = &outcome.env.messages[2];
    assert!(
        result.content.contains("reached over TLS"),
        "{}",
        result.content
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_nobody_trusts_is_refused_and_the_error_says_so() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let certificate = certificate();
    let (url, _stop) = serve_https(dir.path(), &certificate).await;
    let error = McpTools::http("untrusted", url.as_str())
        .await
        .expect_err("a self-signed certificate is not trusted by default");
    let text = chain(&error);
    assert!(text.starts_with("MCP server `untrusted`"), "{text}");
    assert!(text.to_lowercase().contains("certificate"), "{text}");
}

#[tokio::test]
async fn the_bearer_token_and_headers_reach_the_server() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
    let url = format!("http://{}/mcp", listener.local_addr().expect("an address"));
    let (seen, heard) = oneshot::channel::<String>();
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.expect("the client connects");
        let mut head = Vec::new();
        let mut buffer = [0u8; 4096];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = stream.read(&mut buffer).await.expect("the request arrives");
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buffer[..n]);
        }
        let _ = stream
            .write_all(
                b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            )
            .await;
        let _ = seen.send(String::from_utf8_lossy(&head).to_lowercase());
    });
    let server = HttpServer::new(url.as_str())
        .bearer("s3cret-token")
        .header("x-team", "search")
        .expect("a valid header");
    let error = McpTools::http_with("guarded", server)
        .await
        .expect_err("the server refuses the handshake");
    assert!(
        chain(&error).starts_with("MCP server `guarded`"),
        "{}",
        chain(&error)
    );
    let head = heard.await.expect("the server read a request");
    assert!(
        head.contains("authorization: bearer s3cret-token"),
        "{head}"
    );
    assert!(head.contains("x-team: search"), "{head}");
}

#[test]
fn bad_headers_and_certificates_are_refused_with_the_url() {
    let bad_name = HttpServer::new("https://mcp.example/mcp").header("bad name", "x");
    assert!(matches!(bad_name, Err(McpError::Http { .. })));
    let bad_value = HttpServer::new("https://mcp.example/mcp").header("x-ok", "line\nbreak");
    let message = bad_value
        .expect_err("a newline is not a header value")
        .to_string();
    assert_eq!(
        message,
        "MCP server at https://mcp.example/mcp: the value of header `x-ok` is not valid in HTTP"
    );
    let not_pem = HttpServer::new("https://mcp.example/mcp").root_certificate_pem(b"not a pem");
    let message = not_pem.expect_err("not a certificate").to_string();
    assert!(message.contains("is not PEM"), "{message}");
}
