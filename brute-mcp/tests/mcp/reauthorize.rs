//! OAuth in the middle of a session: a server that lets the handshake and
//! `tools/list` through and refuses `tools/call` (401 without a token, 403
//! `insufficient_scope` with any), served on 127.0.0.1 with its own authorization
//! endpoints (the 2025-03-26 defaults: `/register`, `/token`; the authorization step
//! is the test's). The client authorizes for each refused call and sends it again
//! once, gives up authorizing after three fresh tokens refused in a row, and says so
//! without showing a token.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use brute::ToolCall;
use brute::tools::{PreparedCall, ToolContext, ToolSet, Tools};
use brute_mcp::{HttpServer, McpTools, OAuth, ToolSetServer};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Request, Response, StatusCode};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};

type Body = BoxBody<Bytes, Infallible>;

fn answer(status: StatusCode, headers: &[(&str, String)], body: Value) -> Response<Body> {
    let mut response = Response::builder().status(status);
    for (name, value) in headers {
        response = response.header(*name, value);
    }
    response
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())).boxed())
        .expect("a response")
}

/// Serves `tools` on 127.0.0.1 behind the refusing gate and the authorization
/// endpoints; counts the tokens issued. Returns the URL of its `/mcp`.
async fn refusing_server<T: ToolSet + 'static>(
    tools: ToolSetServer<T>,
    issued: Arc<AtomicUsize>,
) -> String {
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
            let (service, issued) = (service.clone(), issued.clone());
            let handler = hyper::service::service_fn(
                move |request: Request<hyper::body::Incoming>| {
                    let (service, issued) = (service.clone(), issued.clone());
                    async move {
                        let (parts, body) = request.into_parts();
                        let body = body
                            .collect()
                            .await
                            .map(|b| b.to_bytes())
                            .unwrap_or_default();
                        let path = parts.uri.path().to_string();
                        let response = match path.as_str() {
                            "/register" => answer(
                                StatusCode::CREATED,
                                &[],
                                json!({"client_id": "test-client", "redirect_uris": ["http://127.0.0.1:1/callback"]}),
                            ),
                            "/token" => {
                                let n = issued.fetch_add(1, Ordering::SeqCst) + 1;
                                answer(
                                    StatusCode::OK,
                                    &[],
                                    json!({"access_token": format!("test-token-{n}"), "token_type": "Bearer", "expires_in": 3600}),
                                )
                            }
                            "/mcp" => {
                                let message: Value =
                                    serde_json::from_slice(&body).unwrap_or(Value::Null);
                                let bearer = parts.headers.contains_key("authorization");
                                if message["method"] == "tools/call" && !bearer {
                                    answer(
                                        StatusCode::UNAUTHORIZED,
                                        &[("www-authenticate", "Bearer scope=\"tools\"".into())],
                                        json!({"error": "invalid_token"}),
                                    )
                                } else if message["method"] == "tools/call" {
                                    answer(
                                    StatusCode::FORBIDDEN,
                                    &[(
                                        "www-authenticate",
                                        "Bearer error=\"insufficient_scope\", scope=\"tools admin\"".into(),
                                    )],
                                    json!({"error": "insufficient_scope"}),
                                )
                                } else {
                                    let request = Request::from_parts(parts, Full::new(body));
                                    service.handle(request).await
                                }
                            }
                            _ => answer(StatusCode::NOT_FOUND, &[], json!({"error": "not_found"})),
                        };
                        Ok::<_, Infallible>(response)
                    }
                },
            );
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), handler),
            );
        }
    });
    format!("http://{address}/mcp")
}

/// The authorization step a browser would take: back to the redirect URI with a code
/// and the request's `state`. Counts the authorizations.
fn scripted(authorizations: Arc<AtomicUsize>) -> OAuth {
    OAuth::authorization_code("http://127.0.0.1:1/callback", move |url| {
        let authorizations = authorizations.clone();
        async move {
            authorizations.fetch_add(1, Ordering::SeqCst);
            let url = reqwest::Url::parse(&url).map_err(|e| e.to_string())?;
            let state = url
                .query_pairs()
                .find(|(name, _)| name == "state")
                .map(|(_, value)| value.to_string())
                .ok_or("no state")?;
            Ok(format!(
                "http://127.0.0.1:1/callback?code=the-code&state={state}"
            ))
        }
    })
}

#[tokio::test]
async fn a_call_refused_mid_session_authorizes_again_and_the_client_gives_up_after_three() {
    let root = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(root.path().join("notes.txt"), "hello\n").expect("a file");
    let context = ToolContext::new(root.path()).expect("a tool root");
    let issued = Arc::new(AtomicUsize::new(0));
    let url = refusing_server(
        ToolSetServer::new(Tools::READ_ONLY, context),
        issued.clone(),
    )
    .await;
    let authorizations = Arc::new(AtomicUsize::new(0));
    let server = HttpServer::new(url.clone()).oauth(scripted(authorizations.clone()));
    let tools = McpTools::http_with("gated", server)
        .await
        .expect("the handshake and the listing need no token");
    assert_eq!(
        authorizations.load(Ordering::SeqCst),
        0,
        "nothing asked for a token yet"
    );
    let cx = ToolContext::new(root.path()).expect("a tool root");
    for attempt in 1..=5 {
        let call = ToolCall::new(
            format!("call-{attempt}"),
            "read",
            json!({"file_path": "notes.txt"}),
        );
        let prepared = tools
            .prepare(&call)
            .expect("the server has `read`")
            .expect("the arguments are valid");
        let error = prepared
            .run(&cx)
            .await
            .expect_err("the server refuses every call");
        let text = error.to_string();
        assert!(
            text.contains(&format!("403 from {url}"))
                && text.contains("also after it authorized anew"),
            "call {attempt}: {text}"
        );
        assert!(
            !text.contains("test-token"),
            "call {attempt} shows a token: {text}"
        );
        // One authorization for each refused call, until three fresh tokens in a row
        // were refused; after that none.
        assert_eq!(
            authorizations.load(Ordering::SeqCst),
            attempt.min(3),
            "authorizations after call {attempt}"
        );
    }
    assert_eq!(
        issued.load(Ordering::SeqCst),
        3,
        "one token per authorization"
    );
    tools.close().await;
}
