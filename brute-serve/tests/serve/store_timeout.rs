//! A store that stops answering never holds a request past the server's timeout:
//! every route that reads a session before its turn (the history, a keyed turn, a
//! decision with or without a key, an AG-UI run that answers a front-end call)
//! answers 504 `timeout`, naming the timeout, with nothing of the store; A2A's
//! `SendMessage` answers its JSON-RPC internal error, naming it too.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use brute::session::{SessionError, SessionStore};
use brute::{Message, brute_agent};
use brute_serve::Server;
use serde_json::{Value, json};
use support::{Running, TOKEN, post};

/// A store whose reads never finish (and whose writes fail: no route here gets to
/// one, since every one reads first).
struct Stalled;

fn refused() -> SessionError {
    SessionError::BadId {
        id: String::new(),
        reason: "the stalled store writes nothing",
    }
}

impl SessionStore for Stalled {
    type Lease = ();
    async fn open(&self, _: &str) -> Result<((), Vec<Message>), SessionError> {
        std::future::pending().await
    }
    async fn append(&self, _: &mut (), _: &[Message]) -> Result<(), SessionError> {
        Err(refused())
    }
    async fn rewrite(&self, _: &mut (), _: usize, _: &[Message]) -> Result<(), SessionError> {
        Err(refused())
    }
    async fn release(&self, _: ()) -> Result<(), SessionError> {
        Ok(())
    }
    async fn load(&self, _: &str) -> Result<Vec<Message>, SessionError> {
        std::future::pending().await
    }
    async fn list(&self) -> Result<Vec<String>, SessionError> {
        std::future::pending().await
    }
    async fn delete(&self, _: &str) -> Result<(), SessionError> {
        std::future::pending().await
    }
}

/// The server's timeout: what the routes must answer within.
const TIMEOUT: Duration = Duration::from_millis(300);

/// The status and JSON body of `request`; the client gives up after a minute, so a
/// route that waits on the store for ever fails the test instead of hanging it.
async fn answer(request: reqwest::RequestBuilder) -> (u16, Value) {
    let response = request
        .timeout(Duration::from_secs(60))
        .send()
        .await
        .expect("the server answered (a request that waits on a stalled store does not)");
    let status = response.status().as_u16();
    let body = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&body).unwrap_or(Value::String(body)),
    )
}

fn assert_timeout(what: &str, (status, body): (u16, Value)) {
    assert_eq!(status, 504, "{what}: {body}");
    assert_eq!(body["error"]["type"], "timeout", "{what}: {body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("300ms"),
        "{what}: the timeout is named: {body}"
    );
    assert!(!message.contains("Stalled"), "{what}: {body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_that_reads_a_session_answers_504_when_the_store_stalls() {
    let agent = brute_agent! { run |_env| async { Ok(Message::assistant("never asked")) }; };
    let server = Server::new(Arc::new(Stalled))
        .agent("a", agent)
        .bearer_token(TOKEN)
        .timeout(TIMEOUT);
    let running = Running::start(server).await;
    let client = support::client();
    let base = &running.base;

    let history = client
        .get(format!("{base}/v1/sessions/s"))
        .header("authorization", format!("Bearer {TOKEN}"));
    assert_timeout("GET /v1/sessions/s", answer(history).await);

    let turn = post(
        &client,
        format!("{base}/v1/sessions/s/turns"),
        json!({ "input": "hello" }),
    )
    .header("idempotency-key", "k1");
    assert_timeout("a keyed turn", answer(turn).await);

    for key in [None, Some("k2")] {
        let mut decision = post(
            &client,
            format!("{base}/v1/sessions/s/approvals/c1"),
            json!({ "decision": "approve" }),
        );
        if let Some(key) = key {
            decision = decision.header("idempotency-key", key);
        }
        assert_timeout(&format!("a decision, key {key:?}"), answer(decision).await);
    }

    // An AG-UI run whose messages end in a front-end tool's result reads the
    // thread's stored session to check the call waits for it.
    let run = post(
        &client,
        format!("{base}/agui"),
        json!({
            "threadId": "s",
            "runId": "r1",
            "state": {},
            "tools": [{"name": "pick", "description": "Picks", "parameters": {"type": "object"}}],
            "context": [],
            "forwardedProps": {},
            "messages": [
                {"id": "m1", "role": "user", "content": "pick one"},
                {"id": "m2", "role": "assistant", "toolCalls": [
                    {"id": "c1", "type": "function", "function": {"name": "pick", "arguments": "{}"}}
                ]},
                {"id": "m3", "role": "tool", "toolCallId": "c1", "content": "red"}
            ]
        }),
    );
    assert_timeout("an AG-UI answer", answer(run).await);

    // A2A's `SendMessage` reads the context's session to number the task's turn: a
    // JSON-RPC internal error naming the timeout.
    let send = post(
        &client,
        format!("{base}/a2a"),
        json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
            "messageId": "m1", "role": "ROLE_USER", "contextId": "s", "parts": [{"text": "hi"}]
        }}}),
    )
    .header("a2a-version", "1.0");
    let (_, body) = answer(send).await;
    assert_eq!(body["error"]["code"], -32603, "A2A SendMessage: {body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("300ms"), "A2A SendMessage: {body}");
}
