//! The 2025-03-26 fallback for authorization server metadata whose issuer rmcp
//! refuses: accepted only when every endpoint is on the MCP server's origin. A
//! server on 127.0.0.1 without protected resource metadata publishes, at its origin's
//! `/.well-known/oauth-authorization-server`, an issuer on its origin but another
//! path (`/oauth`) and a token endpoint elsewhere. (The accepted case is the
//! conformance suite's `auth/2025-03-26-oauth-metadata-backcompat`.)

use std::convert::Infallible;

use brute_mcp::{HttpServer, McpError, McpTools, OAuth};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Request, Response, StatusCode};
use serde_json::json;

/// Serves the MCP endpoint (401 to everything) and the metadata; returns the URL of
/// its `/mcp`.
async fn legacy_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a local port");
    let address = listener.local_addr().expect("an address");
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let handler = hyper::service::service_fn(
                move |request: Request<hyper::body::Incoming>| async move {
                    let (status, body) = match request.uri().path() {
                        "/.well-known/oauth-authorization-server" => (
                            StatusCode::OK,
                            json!({
                                "issuer": format!("http://{address}/oauth"),
                                "authorization_endpoint": format!("http://{address}/oauth/authorize"),
                                "token_endpoint": "http://token.elsewhere.example/token",
                                "response_types_supported": ["code"],
                                "code_challenge_methods_supported": ["S256"],
                            }),
                        ),
                        "/mcp" => (StatusCode::UNAUTHORIZED, json!({"error": "invalid_token"})),
                        _ => (StatusCode::NOT_FOUND, json!({"error": "not_found"})),
                    };
                    let mut response = Response::builder()
                        .status(status)
                        .header("content-type", "application/json");
                    if status == StatusCode::UNAUTHORIZED {
                        response = response.header("www-authenticate", "Bearer");
                    }
                    let body = Full::new(Bytes::from(body.to_string())).boxed();
                    Ok::<_, Infallible>(response.body(body).expect("a response"))
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

#[tokio::test]
async fn legacy_metadata_naming_an_endpoint_on_another_origin_is_refused() {
    let url = legacy_server().await;
    let oauth = OAuth::authorization_code("http://127.0.0.1:1/callback", |_| async {
        Err::<String, String>("no authorization may be asked for".to_string())
    });
    let error = McpTools::http_with("legacy", HttpServer::new(url.clone()).oauth(oauth))
        .await
        .expect_err("the metadata is refused");
    let McpError::OAuth {
        problem,
        url: named,
        ..
    } = &error
    else {
        panic!("expected McpError::OAuth, got {error:?}: {error}");
    };
    assert_eq!(named, &url);
    assert!(
        problem.contains("`token_endpoint` http://token.elsewhere.example/token")
            && problem.contains("not on the MCP server's origin"),
        "{problem}"
    );
}
