//! What an MCP client sees of an agent's failed turn: with the model's upstream
//! answering 500, `AgentServer`'s tool result is `isError` with the failure's stable
//! kind and a message that names nothing of the server (no address, host, port, path,
//! model endpoint or model name, nothing of the upstream's answer). SECURITY.md's
//! table of what each surface shows names this test.

use crate::support;

use brute::brute_agent;
use brute::providers::OpenAi;
use brute_mcp::AgentServer;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, JsonObject};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What the upstream puts in its 500: a client must never see it.
const LEAK: &str = "SECRET-UPSTREAM-DETAIL at /srv/models/shard-7 on db.internal:5432";

/// A local model upstream on 127.0.0.1 that answers every request 500 (with `LEAK`
/// in its body), one request per connection; its `http://127.0.0.1:PORT`.
async fn upstream() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let addr = listener.local_addr().expect("an address");
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                // The request's head and its body (`content-length` bytes).
                loop {
                    let Ok(n) = socket.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    request.extend_from_slice(&buf[..n]);
                    if let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&request[..end]).to_lowercase();
                        let length = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        if request.len() >= end + 4 + length {
                            break;
                        }
                    }
                }
                let body = serde_json::json!({"error": {"message": LEAK, "type": "server_error"}})
                    .to_string();
                let answer = format!(
                    "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn a_failed_turn_shows_its_kind_and_nothing_of_the_server() {
    let upstream = upstream().await;
    let model = OpenAi::compatible(format!("{upstream}/v1"), "gpt-4o-mini").api_key("k");
    let agent = brute_agent! { run model; };
    let (url, _stop) = support::serve_http(AgentServer::new(agent)).await;
    let client: RunningService<RoleClient, ()> = {
        brute_mcp::ensure_crypto_provider();
        ().serve(StreamableHttpClientTransport::from_uri(url))
    }
    .await
    .expect("the handshake succeeds");
    let mut arguments = JsonObject::new();
    arguments.insert("prompt".into(), Value::from("hello"));
    let result = client
        .call_tool(CallToolRequestParams::new("ask").with_arguments(arguments))
        .await
        .expect("a failed turn is answered with a result");
    assert_eq!(result.is_error, Some(true));
    let shown = serde_json::to_string(&result).expect("the result serialises");
    assert!(
        shown
            .contains("the turn failed (model_server_error): the model provider failed (HTTP 500)"),
        "{shown}"
    );
    let port = upstream.rsplit(':').next().expect("a port");
    for leak in [
        "127.0.0.1",
        port,
        "/v1",
        "chat/completions",
        "gpt-4o-mini",
        "SECRET",
        "/srv",
        "db.internal",
    ] {
        assert!(
            !shown.contains(leak),
            "`{leak}` shown to the client: {shown}"
        );
    }
    client.cancel().await.expect("the client closes");
}
