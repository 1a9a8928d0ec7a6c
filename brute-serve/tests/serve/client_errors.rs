//! What a client sees of a turn that failed: with the model's upstream answering
//! 500, every surface (chat completions, streamed or not; SSE turns and their JSON
//! outcome; AG-UI; A2A over JSON-RPC, streamed or not, and REST) gives a stable kind
//! and a message that names no address, host, port, path or model endpoint, nor
//! anything of the upstream's own answer. SECURITY.md's table of what each surface
//! shows names these tests.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use brute::brute_agent;
use brute::middleware::{Retry, SessionLog};
use brute::providers::OpenAi;
use brute::session::JsonlStore;
use brute_serve::Server;
use serde_json::{Value, json};
use support::{Running, TOKEN, events, post};

/// What the upstream puts in its 500: a client must never see it.
const LEAK: &str = "SECRET-UPSTREAM-DETAIL at /srv/models/shard-7 on db.internal:5432";

/// A local model upstream that answers every request 500; its address.
async fn upstream() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().fallback(|| async {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            [("content-type", "application/json")],
            json!({"error": {"message": LEAK, "type": "server_error"}}).to_string(),
        )
    });
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

struct Setup {
    running: Running,
    /// The upstream's `http://127.0.0.1:PORT`.
    upstream: String,
    dir: tempfile::TempDir,
}

/// A server whose agents call the failing upstream: `model` once, `retrying` twice
/// (a `Retry` that waits a millisecond).
async fn start() -> Setup {
    let upstream = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(JsonlStore::new(dir.path().join("sessions")));
    let model = || OpenAi::compatible(format!("{upstream}/v1"), "gpt-4o-mini").api_key("k");
    let once = brute_agent! {
        use SessionLog { store: store.clone() };
        run model();
    };
    let retrying = brute_agent! {
        use SessionLog { store: store.clone() };
        use Retry { attempts: 2, base_delay: Duration::from_millis(1), jitter: false };
        run model();
    };
    let server = Server::new(store)
        .agent("model", once)
        .agent("retrying", retrying)
        .bearer_token(TOKEN);
    Setup {
        running: Running::start(server).await,
        upstream,
        dir,
    }
}

impl Setup {
    /// Fails the test if `shown` (what a client got from `surface`) names anything of
    /// the server or its upstream.
    fn assert_clean(&self, surface: &str, shown: &str) {
        let port = self.upstream.rsplit(':').next().unwrap();
        let store = self.dir.path().to_str().unwrap();
        for bad in [
            "127.0.0.1",
            "http://",
            "https://",
            "/v1/chat",
            "chat/completions",
            "POST ",
            "openai",
            "gpt-4o-mini",
            "SECRET-UPSTREAM",
            "/srv/",
            "db.internal",
            store,
            &format!(":{port}"),
        ] {
            assert!(
                !shown.contains(bad),
                "{surface}: the client sees `{bad}`: {shown}"
            );
        }
    }

    async fn send(&self, path: &str, body: Value) -> (u16, String) {
        let response = post(
            &support::client(),
            format!("{}{path}", self.running.base),
            body,
        )
        .send()
        .await
        .unwrap();
        let status = response.status().as_u16();
        (status, response.text().await.unwrap())
    }
}

const KIND: &str = "model_server_error";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_completions_show_the_kind_and_no_address() {
    let setup = start().await;
    let request = |stream: bool| json!({"model": "model", "stream": stream, "messages": [{"role": "user", "content": "hi"}]});
    let (status, body) = setup.send("/v1/chat/completions", request(false)).await;
    assert_eq!(status, 500, "{body}");
    setup.assert_clean("chat completions", &body);
    let error: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["error"]["type"], KIND, "{body}");
    assert_eq!(error["error"]["code"], KIND, "{body}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("HTTP 500"),
        "{body}"
    );

    let (status, body) = setup.send("/v1/chat/completions", request(true)).await;
    setup.assert_clean("streamed chat completions", &body);
    if status == 200 {
        let chunks = events(&body);
        let error = chunks
            .iter()
            .find(|(_, v)| v.get("error").is_some())
            .unwrap_or_else(|| panic!("no error chunk: {body}"));
        assert_eq!(error.1["error"]["type"], KIND, "{body}");
    } else {
        // The turn failed before it was seen to hold its session.
        assert_eq!(status, 500, "{body}");
        let error: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(error["error"]["type"], KIND, "{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_turns_show_the_kind_and_no_address_in_the_end_and_the_retries() {
    let setup = start().await;
    let (status, body) = setup
        .send(
            "/v1/sessions/s1/turns",
            json!({"input": "hi", "agent": "retrying"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    setup.assert_clean("SSE turn", &body);
    let items = events(&body);
    let retry = items
        .iter()
        .find(|(name, _)| name == "retry")
        .unwrap_or_else(|| panic!("no retry: {body}"));
    assert_eq!(retry.1["error"], "server error 500", "{body}");
    let (_, end) = items.last().unwrap();
    assert_eq!(end["result"]["status"], "failed", "{body}");
    let error = end["result"]["error"].as_str().unwrap();
    assert!(error.starts_with(&format!("{KIND}: ")), "{error}");

    // The same turn as one JSON outcome.
    let response = post(
        &support::client(),
        format!("{}/v1/sessions/s2/turns", setup.running.base),
        json!({"input": "hi", "agent": "model"}),
    )
    .header("accept", "application/json")
    .send()
    .await
    .unwrap();
    let status = response.status().as_u16();
    let body = response.text().await.unwrap();
    setup.assert_clean("JSON turn", &body);
    let outcome: Value = serde_json::from_str(&body).unwrap();
    if status == 200 {
        let error = outcome["result"]["error"].as_str().unwrap();
        assert!(error.starts_with(&format!("{KIND}: ")), "{body}");
    } else {
        assert_eq!(status, 500, "{body}");
        assert_eq!(outcome["error"]["type"], KIND, "{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ag_ui_shows_the_kind_as_the_run_error_code_and_no_address() {
    let setup = start().await;
    let input = json!({
        "threadId": "thread-1", "runId": "r1", "state": {}, "context": [], "forwardedProps": {},
        "tools": [], "messages": [{"id": "u1", "role": "user", "content": "hi"}],
    });
    let (status, body) = setup.send("/agui/model", input).await;
    setup.assert_clean("AG-UI", &body);
    if status == 200 {
        let run = events(&body);
        let (_, last) = run.last().unwrap();
        assert_eq!(last["type"], "RUN_ERROR", "{body}");
        assert_eq!(last["code"], KIND, "{body}");
        assert!(
            last["message"].as_str().unwrap().contains("HTTP 500"),
            "{body}"
        );
    } else {
        assert_eq!(status, 500, "{body}");
        let error: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(error["error"]["type"], KIND, "{body}");
    }
}

/// The kind an A2A answer gives of a failed turn: the failed task's status data part,
/// or the JSON-RPC error's `data` (a turn that failed before it held its session).
fn a2a_kind(answer: &Value) -> &Value {
    if let Some(error) = answer.get("error") {
        assert_eq!(error["code"], -32603, "{answer}");
        return &error["data"]["kind"];
    }
    let result = &answer["result"];
    let task = result.get("task").unwrap_or(result);
    let status = task
        .get("status")
        .unwrap_or_else(|| &result["statusUpdate"]["status"]);
    assert_eq!(status["state"], "TASK_STATE_FAILED", "{answer}");
    let parts = status["message"]["parts"].as_array().unwrap();
    &parts
        .iter()
        .find(|p| p.get("data").is_some())
        .unwrap_or_else(|| panic!("no data part: {answer}"))["data"]["kind"]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_shows_the_kind_in_the_failed_status_and_no_address() {
    let setup = start().await;
    let message =
        json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}});
    let rpc =
        |method: &str| json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": message});

    let (_, body) = setup.send("/a2a/model", rpc("SendMessage")).await;
    setup.assert_clean("A2A SendMessage", &body);
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(a2a_kind(&answer), KIND, "{body}");
    // The task read again says the same.
    if let Some(id) = answer["result"]["task"]["id"].as_str() {
        let (_, body) = setup
            .send(
                "/a2a/model",
                json!({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": id}}),
            )
            .await;
        setup.assert_clean("A2A GetTask", &body);
        let answer: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(a2a_kind(&answer), KIND, "{body}");
    }

    let (_, body) = setup.send("/a2a/model", rpc("SendStreamingMessage")).await;
    setup.assert_clean("A2A SendStreamingMessage", &body);
    let streamed = events(&body);
    let last = if streamed.is_empty() {
        serde_json::from_str(&body).unwrap()
    } else {
        streamed.last().unwrap().1.clone()
    };
    assert_eq!(a2a_kind(&last), KIND, "{body}");

    let (status, body) = setup.send("/a2a-rest/message:send", message.clone()).await;
    setup.assert_clean("A2A REST message:send", &body);
    let answer: Value = serde_json::from_str(&body).unwrap();
    if status == 200 {
        assert_eq!(a2a_kind(&json!({ "result": answer })), KIND, "{body}");
    } else {
        assert_eq!(status, 500, "{body}");
        assert_eq!(
            answer["error"]["details"][0]["metadata"]["kind"], KIND,
            "{body}"
        );
    }
}
