//! The server over loopback: streamed turns that continue their session, the session
//! endpoints, 409 for a busy session, authentication, body limits, timeouts and
//! graceful shutdown.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use brute::session::JsonlStore;
use brute::tools::{DefaultToolPipeline, ToolError};
use brute::{
    Env, Message, Role, ToolCall, brute_agent,
    middleware::{Loop, MaxIterations, SessionLog},
    providers::ScriptedModel,
};
use brute_serve::{ServeError, Server};
use serde_json::{Value, json};
use support::{Running, TOKEN, events, post};
use tokio::sync::Semaphore;

static NOTES: AtomicUsize = AtomicUsize::new(0);

/// Writes a note (counts its calls).
#[brute::tool]
async fn note(
    /// The note.
    text: String,
) -> Result<String, ToolError> {
    NOTES.fetch_add(1, Ordering::SeqCst);
    Ok(format!("noted: {text}"))
}

/// Calls `note` once per turn, then answers with how many user messages it saw.
fn script(env: &Env) -> Message {
    let last = env.messages.last();
    if last.is_some_and(|m| m.role == Role::User) {
        let text = last.map(|m| m.content.clone()).unwrap_or_default();
        return Message::tool_calls(
            "",
            vec![ToolCall::new("n1", "note", json!({ "text": text }))],
        );
    }
    let users = env.messages.iter().filter(|m| m.role == Role::User).count();
    Message::assistant(format!("{users} prompts so far"))
}

fn server(dir: &std::path::Path) -> Server {
    let store = Arc::new(JsonlStore::new(dir));
    let agent = brute_agent! {
        use SessionLog { store: store.clone() };
        use Loop::ToolResult;
        use MaxIterations { max: 5 };
        use DefaultToolPipeline { tools: (Note,), root: dir };
        run ScriptedModel::from_fn(script);
    };
    Server::new(store).agent("noter", agent).bearer_token(TOKEN)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_streams_its_items_and_the_session_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let running = Running::start(server(dir.path())).await;
    let client = support::client();
    let url = format!("{}/v1/sessions/alice/turns", running.base);

    let response = post(&client, url.clone(), json!({ "input": "first" }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let items = events(&response.text().await.unwrap());
    let names: Vec<&str> = items.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "message",
            "tool_call_start",
            "tool_result",
            "message",
            "end"
        ]
    );
    assert_eq!(items[1].1["call"]["name"], "note");
    assert_eq!(items[2].1["content"], "noted: first");
    assert_eq!(
        items[4].1,
        json!({"type": "end", "result": {"status": "completed", "text": "1 prompts so far"}})
    );

    // The second turn continues the session.
    let body = post(&client, url, json!({ "input": "second", "agent": "noter" }))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let items = events(&body);
    assert_eq!(
        items.last().unwrap().1["result"]["text"],
        "2 prompts so far"
    );

    let auth = format!("Bearer {TOKEN}");
    let session = format!("{}/v1/sessions/alice", running.base);
    let history: Value = serde_json::from_str(
        &client
            .get(&session)
            .header("authorization", &auth)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
    )
    .unwrap();
    let messages = history["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 8, "{history}");
    assert_eq!(messages[0], json!({"role": "user", "content": "first"}));
    assert_eq!(messages[7]["content"], "2 prompts so far");

    let deleted = client
        .delete(&session)
        .header("authorization", &auth)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    let gone = client
        .get(&session)
        .header("authorization", &auth)
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), 404);
    let error: Value = serde_json::from_str(&gone.text().await.unwrap()).unwrap();
    assert_eq!(error["error"]["type"], "not_found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_on_a_busy_session_gets_409_and_the_running_turn_completes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(JsonlStore::new(dir.path()));
    let gate = Arc::new(Semaphore::new(0));
    let model_gate = gate.clone();
    let agent = brute_agent! {
        use SessionLog { store: store.clone() };
        run move |_env: &Env| {
            let gate = model_gate.clone();
            async move {
                gate.acquire().await.unwrap().forget();
                Ok(Message::assistant("released"))
            }
        };
    };
    let running = Running::start(Server::new(store).agent("slow", agent).bearer_token(TOKEN)).await;
    let client = support::client();
    let url = format!("{}/v1/sessions/bob/turns", running.base);

    // Headers come once the turn holds the session.
    let first = post(&client, url.clone(), json!({ "input": "one" }))
        .send()
        .await
        .unwrap();
    assert_eq!(first.status(), 200);
    let second = post(&client, url.clone(), json!({ "input": "two" }))
        .send()
        .await
        .unwrap();
    assert_eq!(second.status(), 409);
    let error: Value = serde_json::from_str(&second.text().await.unwrap()).unwrap();
    assert_eq!(error["error"]["type"], "busy");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`bob`"),
        "{error}"
    );
    let delete = client
        .delete(format!("{}/v1/sessions/bob", running.base))
        .header("authorization", format!("Bearer {TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(delete.status(), 409);

    gate.add_permits(1);
    let items = events(&first.text().await.unwrap());
    assert_eq!(items.last().unwrap().1["result"]["text"], "released");
    // Free again.
    gate.add_permits(1);
    let third = post(&client, url, json!({ "input": "three" }))
        .send()
        .await
        .unwrap();
    assert_eq!(third.status(), 200);
    assert_eq!(
        events(&third.text().await.unwrap()).last().unwrap().1["result"]["status"],
        "completed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_api_endpoint_needs_the_token_and_health_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let running = Running::start(server(dir.path())).await;
    let client = support::client();
    for (method, path) in [
        ("POST", "/v1/sessions/x/turns"),
        ("GET", "/v1/sessions/x"),
        ("DELETE", "/v1/sessions/x"),
        ("POST", "/v1/chat/completions"),
        ("GET", "/v1/agents"),
    ] {
        let url = format!("{}{path}", running.base);
        let method: reqwest::Method = method.parse().unwrap();
        let none = client.request(method.clone(), &url).send().await.unwrap();
        assert_eq!(none.status(), 401, "{method} {path} without a token");
        assert_eq!(none.headers()["www-authenticate"], "Bearer");
        let wrong = client
            .request(method.clone(), &url)
            .header("authorization", "Bearer test-tokeN")
            .send()
            .await
            .unwrap();
        assert_eq!(wrong.status(), 401, "{method} {path} with a wrong token");
    }
    let agents = client
        .get(format!("{}/v1/agents", running.base))
        .header("authorization", format!("Bearer {TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(agents.text().await.unwrap(), r#"{"agents":["noter"]}"#);
    for path in ["/healthz", "/readyz", "/"] {
        let open = client
            .get(format!("{}{path}", running.base))
            .send()
            .await
            .unwrap();
        assert_eq!(open.status(), 200, "{path}");
    }
}

#[tokio::test]
async fn a_server_without_auth_configured_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(JsonlStore::new(dir.path()));
    let agent = brute_agent! { run |_env| async { Ok(Message::assistant("hi")) }; };
    let error = Server::new(store.clone())
        .agent("a", agent)
        .router()
        .unwrap_err();
    assert!(matches!(error, ServeError::NoAuth), "{error}");
    assert!(error.to_string().contains("without_auth()"), "{error}");
    let error = Server::new(store).without_auth().router().unwrap_err();
    assert!(matches!(error, ServeError::NoAgent), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_auth_serves_without_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(JsonlStore::new(dir.path()));
    let agent = brute_agent! {
        use SessionLog { store: store.clone() };
        run |_env| async { Ok(Message::assistant("open")) };
    };
    let running = Running::start(Server::new(store).agent("a", agent).without_auth()).await;
    let body = support::client()
        .post(format!("{}/v1/sessions/o/turns", running.base))
        .body(r#"{"input":"hi"}"#)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(events(&body).last().unwrap().1["result"]["text"], "open");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_bodies_get_400_naming_the_field_and_large_ones_413() {
    let dir = tempfile::tempdir().unwrap();
    let running = Running::start(server(dir.path()).body_limit(1024)).await;
    let client = support::client();
    let url = format!("{}/v1/sessions/x/turns", running.base);
    let large = post(&client, url.clone(), json!({ "input": "x".repeat(2000) }))
        .send()
        .await
        .unwrap();
    assert_eq!(large.status(), 413);
    let wrong = post(&client, url.clone(), json!({ "prompt": "hi" }))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 400);
    let error: Value = serde_json::from_str(&wrong.text().await.unwrap()).unwrap();
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("prompt"),
        "{error}"
    );
    let agent = post(&client, url, json!({ "input": "hi", "agent": "nobody" }))
        .send()
        .await
        .unwrap();
    assert_eq!(agent.status(), 404);
    let error: Value = serde_json::from_str(&agent.text().await.unwrap()).unwrap();
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`nobody`"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_past_the_timeout_ends_its_stream_with_an_error_and_frees_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(JsonlStore::new(dir.path()));
    let agent = brute_agent! {
        use SessionLog { store: store.clone() };
        run |env: &Env| {
            let slow = env.messages.last().is_some_and(|m| m.content == "slow");
            async move {
                if slow {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                }
                Ok(Message::assistant("fast"))
            }
        };
    };
    let server = Server::new(store)
        .agent("a", agent)
        .bearer_token(TOKEN)
        .timeout(Duration::from_secs(1));
    let running = Running::start(server).await;
    let client = support::client();
    let url = format!("{}/v1/sessions/t/turns", running.base);
    let response = post(&client, url.clone(), json!({ "input": "slow" }))
        .send()
        .await
        .unwrap();
    // Usually the turn holds its session well within the timeout, and the stream
    // ends with the error; on a loaded machine it may not have, and the request
    // itself gets 504. Both name the timeout.
    let status = response.status();
    let body = response.text().await.unwrap();
    if status == 504 {
        let error: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(error["error"]["type"], "timeout", "{body}");
    } else {
        assert_eq!(status, 200, "{body}");
        let end = events(&body).pop().unwrap().1;
        assert_eq!(end["result"]["status"], "failed", "{end}");
        assert!(
            end["result"]["error"].as_str().unwrap().contains("timeout"),
            "{end}"
        );
    }
    let body = post(&client, url, json!({ "input": "quick" }))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(events(&body).last().unwrap().1["result"]["text"], "fast");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_lets_a_running_turn_finish() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(JsonlStore::new(dir.path()));
    let agent = brute_agent! {
        use SessionLog { store: store.clone() };
        run |_env: &Env| async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            Ok(Message::assistant("finished"))
        };
    };
    let mut running = Running::start(
        Server::new(store.clone())
            .agent("a", agent)
            .bearer_token(TOKEN),
    )
    .await;
    let client = support::client();
    let response = post(
        &client,
        format!("{}/v1/sessions/g/turns", running.base),
        json!({ "input": "go" }),
    )
    .send()
    .await
    .unwrap();
    let served = running.shutdown();
    let items = events(&response.text().await.unwrap());
    assert_eq!(items.last().unwrap().1["result"]["text"], "finished");
    served.await.unwrap().unwrap();
    // The server is gone; the turn is stored.
    assert!(
        client
            .get(format!("{}/healthz", running.base))
            .send()
            .await
            .is_err()
    );
    use brute::session::SessionStore;
    assert_eq!(store.load("g").await.unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_does_not_cancel_its_turn() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(JsonlStore::new(dir.path()));
    let gate = Arc::new(Semaphore::new(0));
    let model_gate = gate.clone();
    let agent = brute_agent! {
        use SessionLog { store: store.clone() };
        run move |_env: &Env| {
            let gate = model_gate.clone();
            async move {
                gate.acquire().await.unwrap().forget();
                Ok(Message::assistant("stored anyway"))
            }
        };
    };
    let server = Server::new(store.clone())
        .agent("a", agent)
        .bearer_token(TOKEN);
    let running = Running::start(server).await;
    let client = support::client();
    let url = format!("{}/v1/sessions/gone/turns", running.base);
    let response = post(&client, url, json!({ "input": "hi" }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    drop(response);
    drop(client);
    gate.add_permits(1);
    use brute::session::SessionStore;
    // Generous: only a turn that is never stored reaches it.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while tokio::time::Instant::now() < deadline {
        let stored = store.load("gone").await.unwrap();
        if stored.len() == 2 {
            assert_eq!(stored[1].content, "stored anyway");
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!(
        "the turn was not stored: {:?}",
        store.load("gone").await.unwrap()
    );
}
