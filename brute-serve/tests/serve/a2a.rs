//! A2A v1.0 from brute-serve: the agent card, the JSON-RPC binding (send, stream, get,
//! cancel), an approval pause as `TASK_STATE_INPUT_REQUIRED` resumed by the next
//! message on the task, and A2A's error codes. Talked to by raw HTTP, by the official
//! A2A Python SDK's client, and by brute's own `A2aAgent`, which also calls a server
//! written with the SDK. The SDK is installed by `cargo xtask test` into `.ci/venv`; a
//! missing SDK fails the test with that command.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use brute::session::JsonlStore;
use brute::tools::{Approval, DefaultToolPipeline};
use brute::{
    Env, Event, Message, Role, ToolCall, brute_agent,
    middleware::{Loop, MaxIterations, SessionLog},
    providers::ScriptedModel,
};
use brute_serve::{A2aAgent, A2aState, Server};
use serde_json::{Value, json};
use support::{Launch, Running, TOKEN, events, launches, post};

/// Asks to launch to the moon, then reports the result it got.
fn launch_script(env: &Env) -> Message {
    match env.messages.last() {
        Some(m) if m.role == Role::User => Message::tool_calls(
            "",
            vec![ToolCall::new("c1", "launch", json!({ "target": "moon" }))],
        ),
        Some(m) => Message::assistant(format!("done: {}", m.content)),
        None => Message::assistant("nothing to do"),
    }
}

/// Asks to launch to the moon and to mars at once, then reports the results.
fn twin_script(env: &Env) -> Message {
    match env.messages.last() {
        Some(m) if m.role == Role::User => Message::tool_calls(
            "",
            vec![
                ToolCall::new("c1", "launch", json!({ "target": "moon" })),
                ToolCall::new("c2", "launch", json!({ "target": "mars" })),
            ],
        ),
        _ => Message::assistant("both decided"),
    }
}

/// A streamed echo of the last user message and the count of messages it was given.
fn echo(env: &Env) -> String {
    let last = env
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| m.content.clone())
        .unwrap_or_default();
    format!("echo: {last} ({} messages)", env.messages.len())
}

fn python() -> PathBuf {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `cargo xtask test`, which installs the A2A Python SDK there",
        python.display()
    );
    let probe = std::process::Command::new(&python)
        .args(["-c", "import a2a.client, a2a.server.routes, uvicorn"])
        .output()
        .unwrap();
    assert!(
        probe.status.success(),
        "the A2A Python SDK is missing from .ci/venv: run `cargo xtask test` (or `.ci/venv/bin/pip install 'a2a-sdk[http-server]' uvicorn`): {}",
        String::from_utf8_lossy(&probe.stderr)
    );
    python
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/a2a_sdk")
        .join(name)
}

async fn start(dir: &Path) -> Running {
    let store = Arc::new(JsonlStore::new(dir.join("sessions")));
    let echo = brute_agent! {
        use SessionLog { store: store.clone() };
        run |env: &Env| {
            let text = echo(env);
            let (head, tail) = text.split_at(6);
            env.emit(Event::ContentDelta(head));
            env.emit(Event::ContentDelta(tail));
            async move { Ok(Message::assistant(text)) }
        };
    };
    let launcher = brute_agent! {
        use SessionLog { store: store.clone() };
        use Loop::ToolResult;
        use MaxIterations { max: 5 };
        use DefaultToolPipeline { tools: (Launch,), root: dir, approval: Approval::ask(["launch"]) };
        run ScriptedModel::from_fn(launch_script);
    };
    let twin = brute_agent! {
        use SessionLog { store: store.clone() };
        use Loop::ToolResult;
        use MaxIterations { max: 5 };
        use DefaultToolPipeline { tools: (Launch,), root: dir, approval: Approval::ask(["launch"]) };
        run ScriptedModel::from_fn(twin_script);
    };
    // Says it started, then never answers: a turn to cancel.
    let sleeper = brute_agent! {
        use SessionLog { store: store.clone() };
        run |env: &Env| {
            env.emit(Event::ContentDelta("thinking"));
            std::future::pending::<Result<Message, brute::Error>>()
        };
    };
    let server = Server::new(store)
        .agent("echo", echo)
        .agent("launcher", launcher)
        .agent("sleeper", sleeper)
        .agent("twin", twin)
        .bearer_token(TOKEN);
    Running::start(server).await
}

/// A JSON-RPC call; the whole response.
async fn rpc(running: &Running, path: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let text = post(&support::client(), format!("{}{path}", running.base), body)
        .header("a2a-version", "1.0")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn message(text: &str, extra: Value) -> Value {
    let mut message = json!({"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": text}]});
    if let (Some(m), Some(extra)) = (message.as_object_mut(), extra.as_object()) {
        m.extend(extra.clone());
    }
    json!({ "message": message })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_card_is_open_and_names_the_json_rpc_endpoint_and_bearer_auth() {
    let dir = tempfile::tempdir().unwrap();
    let running = start(dir.path()).await;
    let client = support::client();
    let card: Value = client
        .get(format!("{}/.well-known/agent-card.json", running.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(card["name"], "echo");
    assert_eq!(
        card["supportedInterfaces"][0],
        json!({"url": format!("{}/a2a", running.base), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"})
    );
    assert_eq!(card["capabilities"]["streaming"], true);
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
    let named: Value = client
        .get(format!(
            "{}/a2a/launcher/.well-known/agent-card.json",
            running.base
        ))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        named["supportedInterfaces"][0]["url"],
        format!("{}/a2a/launcher", running.base)
    );
    // The endpoint itself is behind the server's auth.
    let status = client
        .post(format!("{}/a2a", running.base))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_is_a_task_whose_context_is_a_session() {
    let dir = tempfile::tempdir().unwrap();
    let running = start(dir.path()).await;
    let first = rpc(&running, "/a2a", "SendMessage", message("one", json!({}))).await;
    let task = &first["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{first}");
    assert_eq!(
        task["artifacts"][0]["parts"][0]["text"],
        "echo: one (1 messages)"
    );
    let context = task["contextId"].as_str().unwrap();
    let second = rpc(
        &running,
        "/a2a",
        "SendMessage",
        message("two", json!({"contextId": context})),
    )
    .await;
    let task = &second["result"]["task"];
    assert_eq!(
        task["artifacts"][0]["parts"][0]["text"], "echo: two (3 messages)",
        "the second task of a context sees the first: {second}"
    );
    assert_ne!(task["id"], first["result"]["task"]["id"]);
    let got = rpc(
        &running,
        "/a2a",
        "GetTask",
        json!({"id": first["result"]["task"]["id"]}),
    )
    .await;
    assert_eq!(got["result"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        got["result"]["history"][1]["parts"][0]["text"], "echo: one (1 messages)",
        "{got}"
    );
    assert_eq!(got["result"]["history"][0]["role"], "ROLE_USER");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_sends_the_task_then_the_answer_in_chunks_then_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let running = start(dir.path()).await;
    let body = json!({"jsonrpc": "2.0", "id": "s1", "method": "SendStreamingMessage",
        "params": message("hi", json!({}))});
    let text = post(&support::client(), format!("{}/a2a", running.base), body)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let results: Vec<Value> = events(&text)
        .into_iter()
        .map(|(_, data)| {
            assert_eq!(data["id"], "s1");
            data["result"].clone()
        })
        .collect();
    assert_eq!(
        results[0]["task"]["status"]["state"], "TASK_STATE_WORKING",
        "{text}"
    );
    // `(text, append, lastChunk)`: the last chunk says it is.
    let chunks: Vec<(&str, bool, bool)> = results
        .iter()
        .filter_map(|r| r.get("artifactUpdate"))
        .map(|u| {
            (
                u["artifact"]["parts"][0]["text"].as_str().unwrap(),
                u["append"].as_bool().unwrap(),
                u["lastChunk"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        chunks,
        [("echo: ", false, false), ("hi (1 messages)", true, true)]
    );
    let last = results.last().unwrap();
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{text}"
    );
}

/// The results of a streamed JSON-RPC call.
async fn stream(running: &Running, path: &str, params: Value) -> Vec<Value> {
    let body =
        json!({"jsonrpc": "2.0", "id": "s1", "method": "SendStreamingMessage", "params": params});
    let text = post(&support::client(), format!("{}{path}", running.base), body)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    events(&text)
        .into_iter()
        .map(|(_, data)| {
            assert_eq!(data["id"], "s1", "{text}");
            data["result"].clone()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_pause_ends_input_required_and_a_streamed_answer_resumes_it() {
    let dir = tempfile::tempdir().unwrap();
    let running = start(dir.path()).await;
    let paused = stream(&running, "/a2a/launcher", message("go", json!({}))).await;
    let id = paused[0]["task"]["id"].clone();
    let last = &paused.last().unwrap()["statusUpdate"];
    assert_eq!(
        last["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{paused:?}"
    );
    assert_eq!(last["taskId"], id);
    assert_eq!(
        last["status"]["message"]["parts"][1]["data"]["pending"][0]["callId"],
        "c1"
    );
    let resumed = stream(
        &running,
        "/a2a/launcher",
        message("yes", json!({"taskId": id})),
    )
    .await;
    assert_eq!(resumed[0]["task"]["id"], id);
    let working: Vec<&Value> = resumed
        .iter()
        .filter_map(|r| r["statusUpdate"]["status"]["message"]["parts"].as_array())
        .filter_map(|parts| parts.iter().find(|p| p.get("data").is_some()))
        .map(|p| &p["data"])
        .collect();
    assert_eq!(
        working,
        [
            &json!({"callId": "c1", "name": "launch", "arguments": {"target": "moon"}}),
            &json!({"callId": "c1", "name": "launch", "isError": false})
        ],
        "{resumed:?}"
    );
    let last = &resumed.last().unwrap()["statusUpdate"]["status"];
    assert_eq!(last["state"], "TASK_STATE_COMPLETED", "{resumed:?}");
    assert_eq!(
        last["message"]["parts"][0]["text"],
        "done: launched to moon"
    );
    assert_eq!(launches(dir.path()), ["moon"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_with_two_waiting_calls_asks_again_for_the_one_left() {
    let dir = tempfile::tempdir().unwrap();
    let running = start(dir.path()).await;
    let pending = |status: &Value| -> Vec<String> {
        status["message"]["parts"][1]["data"]["pending"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| format!("{} {}", c["callId"], c["arguments"]["target"]))
            .collect()
    };
    let paused = rpc(
        &running,
        "/a2a/twin",
        "SendMessage",
        message("go", json!({})),
    )
    .await;
    let task = &paused["result"]["task"];
    assert_eq!(
        pending(&task["status"]),
        ["\"c1\" \"moon\"", "\"c2\" \"mars\""]
    );
    let id = task["id"].clone();
    let again = stream(
        &running,
        "/a2a/twin",
        message("approve", json!({"taskId": id})),
    )
    .await;
    let status = &again.last().unwrap()["statusUpdate"]["status"];
    assert_eq!(status["state"], "TASK_STATE_INPUT_REQUIRED", "{again:?}");
    assert_eq!(pending(status), ["\"c2\" \"mars\""]);
    let done = rpc(
        &running,
        "/a2a/twin",
        "SendMessage",
        message("deny", json!({"taskId": id})),
    )
    .await;
    assert_eq!(
        done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{done}"
    );
    assert_eq!(launches(dir.path()), ["moon"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_pause_is_input_required_and_the_next_message_decides_it() {
    let dir = tempfile::tempdir().unwrap();
    let running = start(dir.path()).await;
    let paused = rpc(
        &running,
        "/a2a/launcher",
        "SendMessage",
        message("go", json!({})),
    )
    .await;
    let task = &paused["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{paused}"
    );
    assert_eq!(
        task["status"]["message"]["parts"][1]["data"]["pending"][0],
        json!({"callId": "c1", "name": "launch", "arguments": {"target": "moon"}})
    );
    assert!(
        launches(dir.path()).is_empty(),
        "nothing runs before approval"
    );
    let id = task["id"].clone();
    let got = rpc(&running, "/a2a/launcher", "GetTask", json!({"id": id})).await;
    assert_eq!(
        got["result"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );

    let done = rpc(
        &running,
        "/a2a/launcher",
        "SendMessage",
        message("approve", json!({"taskId": id})),
    )
    .await;
    let task = &done["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(task["id"], id);
    assert_eq!(
        task["artifacts"][0]["parts"][0]["text"],
        "done: launched to moon"
    );
    assert_eq!(launches(dir.path()), ["moon"]);
    let again = rpc(
        &running,
        "/a2a/launcher",
        "SendMessage",
        message("approve", json!({"taskId": id})),
    )
    .await;
    assert_eq!(again["error"]["code"], -32004, "{again}");
    assert!(
        again["error"]["message"]
            .as_str()
            .unwrap()
            .contains("TASK_STATE_COMPLETED")
    );
    assert_eq!(launches(dir.path()), ["moon"], "the call ran once");

    // Any other answer denies the call, with the words as the reason.
    let paused = rpc(
        &running,
        "/a2a/launcher",
        "SendMessage",
        message("go", json!({})),
    )
    .await;
    let id = paused["result"]["task"]["id"].clone();
    let denied = rpc(
        &running,
        "/a2a/launcher",
        "SendMessage",
        message("not today", json!({"taskId": id})),
    )
    .await;
    let text = denied["result"]["task"]["artifacts"][0]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(
        text.starts_with("done: ") && text.contains("not today"),
        "{denied}"
    );
    assert_eq!(launches(dir.path()), ["moon"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn canceling_a_task_that_waits_for_approval_denies_its_calls_and_ends_it_canceled() {
    let dir = tempfile::tempdir().unwrap();
    let running = start(dir.path()).await;
    // Two calls wait: the cancel denies both, and the model does not run again.
    let paused = rpc(
        &running,
        "/a2a/twin",
        "SendMessage",
        message("go", json!({})),
    )
    .await;
    let task = &paused["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{paused}"
    );
    let id = task["id"].clone();
    let canceled = rpc(&running, "/a2a/twin", "CancelTask", json!({"id": id})).await;
    assert_eq!(
        canceled["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{canceled}"
    );
    assert!(
        canceled["result"]["artifacts"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "{canceled}"
    );
    let got = rpc(&running, "/a2a/twin", "GetTask", json!({"id": id})).await;
    assert_eq!(
        got["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{got}"
    );
    // Ended: no answer decides it any more, a second cancel is refused.
    let late = rpc(
        &running,
        "/a2a/twin",
        "SendMessage",
        message("approve", json!({"taskId": id})),
    )
    .await;
    assert_eq!(late["error"]["code"], -32004, "{late}");
    let again = rpc(&running, "/a2a/twin", "CancelTask", json!({"id": id})).await;
    assert_eq!(again["error"]["code"], -32002, "{again}");
    assert!(launches(dir.path()).is_empty(), "no denied call ran");

    // Another server on the same store reads it from the session: canceled there too.
    let store = Arc::new(JsonlStore::new(dir.path().join("sessions")));
    let other = brute_agent! {
        use SessionLog { store: store.clone() };
        run |_env: &Env| async { Ok(Message::assistant("other")) };
    };
    let other = Running::start(Server::new(store).agent("other", other).bearer_token(TOKEN)).await;
    let seen = rpc(&other, "/a2a", "GetTask", json!({"id": id})).await;
    assert_eq!(
        seen["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{seen}"
    );

    // The REST binding does the same.
    let paused = rpc(
        &running,
        "/a2a/launcher",
        "SendMessage",
        message("go", json!({})),
    )
    .await;
    let id = paused["result"]["task"]["id"].as_str().unwrap().to_owned();
    let response = post(
        &support::client(),
        format!("{}/a2a-rest/launcher/tasks/{id}:cancel", running.base),
        json!({}),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(response.status(), 200);
    let task: Value = response.text().await.unwrap().parse().unwrap();
    assert_eq!(task["status"]["state"], "TASK_STATE_CANCELED", "{task}");
    // The context goes on: the next task's turn sees the denial, and runs.
    let next = rpc(
        &running,
        "/a2a/launcher",
        "SendMessage",
        message("go", json!({"contextId": task["contextId"]})),
    )
    .await;
    assert_eq!(
        next["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{next}"
    );
    assert!(launches(dir.path()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_task_is_working_until_canceled() {
    let dir = tempfile::tempdir().unwrap();
    let running = start(dir.path()).await;
    let params = json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "think"}]},
        "configuration": {"returnImmediately": true}});
    let submitted = rpc(&running, "/a2a/sleeper", "SendMessage", params).await;
    let id = submitted["result"]["task"]["id"].clone();
    assert_eq!(
        submitted["result"]["task"]["status"]["state"], "TASK_STATE_WORKING",
        "{submitted}"
    );
    let got = rpc(&running, "/a2a/sleeper", "GetTask", json!({"id": id})).await;
    assert_eq!(got["result"]["status"]["state"], "TASK_STATE_WORKING");
    let busy = rpc(
        &running,
        "/a2a/sleeper",
        "SendMessage",
        message("more", json!({"taskId": id})),
    )
    .await;
    assert_eq!(busy["error"]["code"], -32004, "{busy}");
    let canceled = rpc(&running, "/a2a/sleeper", "CancelTask", json!({"id": id})).await;
    assert_eq!(
        canceled["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{canceled}"
    );
    let got = rpc(&running, "/a2a/sleeper", "GetTask", json!({"id": id})).await;
    assert_eq!(got["result"]["status"]["state"], "TASK_STATE_CANCELED");
    // The session is free again.
    let next = rpc(
        &running,
        "/a2a",
        "SendMessage",
        message(
            "after",
            json!({"contextId": canceled["result"]["contextId"]}),
        ),
    )
    .await;
    assert_eq!(
        next["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{next}"
    );
}

/// `POST /a2a` with `body` as it is: the status and the body.
async fn raw_rpc(running: &Running, body: &str) -> (u16, String) {
    let response = support::client()
        .post(format!("{}/a2a", running.base))
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_is_processed_and_not_answered_and_a_batch_gets_one_error() {
    let dir = tempfile::tempdir().unwrap();
    let running = start(dir.path()).await;
    // A notification is run: its turn is in the session afterwards, though nothing
    // answered it, not even a failing one.
    let send = json!({"jsonrpc": "2.0", "method": "SendMessage",
        "params": message("quiet", json!({"contextId": "notified"}))});
    for body in [
        send.to_string(),
        r#"{"jsonrpc": "2.0", "method": "GetTask", "params": {"id": "nobody:0"}}"#.to_owned(),
        r#"{"jsonrpc": "2.0", "method": "NoSuchMethod"}"#.to_owned(),
    ] {
        let (status, text) = raw_rpc(&running, &body).await;
        assert_eq!((status, text.as_str()), (204, ""), "{body}");
    }
    let got = rpc(&running, "/a2a", "GetTask", json!({"id": "notified:0"})).await;
    assert_eq!(
        got["result"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{got}"
    );
    // `"id": null` is a request, answered with that id.
    let (status, text) = raw_rpc(
        &running,
        r#"{"jsonrpc": "2.0", "id": null, "method": "GetTask", "params": {"id": "notified:0"}}"#,
    )
    .await;
    assert_eq!(status, 200);
    let answer: Value = text.parse().unwrap();
    assert_eq!(answer["id"], Value::Null, "{text}");
    assert_eq!(
        answer["result"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{text}"
    );
    // A batch, empty or not, is one error that says batches are not taken.
    let one = r#"{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "notified:0"}}"#;
    for body in [format!("[{one}, {one}]"), "[]".to_owned()] {
        let (status, text) = raw_rpc(&running, &body).await;
        assert_eq!(status, 200, "{text}");
        let answer: Value = text.parse().unwrap();
        assert!(answer.is_object(), "{text}");
        assert_eq!(answer["jsonrpc"], "2.0", "{text}");
        assert_eq!(answer["id"], Value::Null, "{text}");
        assert_eq!(answer["error"]["code"], -32600, "{text}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("batch"),
            "{text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_json_rpc_errors_with_a2a_codes() {
    let dir = tempfile::tempdir().unwrap();
    let running = start(dir.path()).await;
    let client = support::client();
    let raw = |body: &'static str| {
        client
            .post(format!("{}/a2a", running.base))
            .header("authorization", format!("Bearer {TOKEN}"))
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let parse: Value = raw("{not json")
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(parse["error"]["code"], -32700);
    assert_eq!(parse["id"], Value::Null);
    let invalid: Value = raw(r#"{"jsonrpc": "1.0", "id": 1, "method": "GetTask"}"#)
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(invalid["error"]["code"], -32600);
    let cases = [
        ("NoSuchMethod", json!({}), -32601),
        ("message/send", message("x", json!({})), -32601),
        ("GetTask", json!({"id": "nosuch:0"}), -32001),
        ("GetTask", json!({"id": "no-separator"}), -32001),
        ("GetTask", json!({"nope": 1}), -32602),
        ("GetTask", json!([1]), -32602),
        (
            "SendMessage",
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"url": "http://x/y.png"}]}}),
            -32005,
        ),
        (
            "SendMessage",
            message("x", json!({"contextId": "../etc"})),
            -32602,
        ),
        ("CreateTaskPushNotificationConfig", json!({}), -32003),
        ("ListTasks", json!({}), -32004),
    ];
    for (method, params, code) in cases {
        let answer = rpc(&running, "/a2a", method, params).await;
        assert_eq!(answer["error"]["code"], code, "{method}: {answer}");
        assert_eq!(answer["id"], 7);
        let shown = answer["error"]["message"].as_str().unwrap();
        assert!(!shown.contains("/tmp") && !shown.contains("::"), "{shown}");
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x:0"}});
    let old: Value = post(&client, format!("{}/a2a", running.base), body)
        .header("a2a-version", "0.3")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(old["error"]["code"], -32009, "{old}");

    // The REST binding: the HTTP status and the reason A2A gives each error.
    let rest = |path: &str| {
        client
            .get(format!("{}/a2a-rest{path}", running.base))
            .header("authorization", format!("Bearer {TOKEN}"))
            .send()
    };
    let missing = rest("/tasks/nosuch:0").await.unwrap();
    assert_eq!(missing.status(), 404);
    let body: Value = missing.text().await.unwrap().parse().unwrap();
    assert_eq!(body["error"]["status"], "NOT_FOUND", "{body}");
    assert_eq!(body["error"]["details"][0]["reason"], "TASK_NOT_FOUND");
    let unknown = post(
        &client,
        format!("{}/a2a-rest/tasks/x:0:frob", running.base),
        json!({}),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(unknown.status(), 404);
    let body: Value = unknown.text().await.unwrap().parse().unwrap();
    assert_eq!(body["error"]["details"][0]["reason"], "METHOD_NOT_FOUND");
    let bad = post(
        &client,
        format!("{}/a2a-rest/message:send", running.base),
        json!({"message": {"role": "ROLE_USER", "parts": []}}),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(bad.status(), 400);
    let body: Value = bad.text().await.unwrap().parse().unwrap();
    assert_eq!(
        body["error"]["details"][0]["reason"], "INVALID_PARAMS",
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(feature = "services"),
    ignore = "needs the A2A Python SDK: cargo xtask test"
)]
async fn the_official_a2a_python_client_streams_pauses_resumes_and_gets_over_both_bindings() {
    let python = python();
    let dir = tempfile::tempdir().unwrap();
    let running = start(dir.path()).await;
    let output = tokio::process::Command::new(&python)
        .arg(script("client.py"))
        .arg(&running.base)
        .arg(TOKEN)
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(
        stdout,
        "stream TASK_STATE_COMPLETED echo: hello (1 messages)\n\
         same context TASK_STATE_COMPLETED echo: again (3 messages)\n\
         paused TASK_STATE_INPUT_REQUIRED Approve the call `c1` of tool `launch` with arguments {\"target\":\"moon\"}?\n\
         resumed TASK_STATE_COMPLETED done: launched to moon\n\
         get TASK_STATE_COMPLETED 2\n\
         cancel refused TaskNotCancelableError\n\
         rest stream TASK_STATE_COMPLETED echo: rest (1 messages)\n\
         rest paused TASK_STATE_INPUT_REQUIRED\n\
         rest resumed TASK_STATE_COMPLETED\n\
         rest get TASK_STATE_COMPLETED\n\
         rest get refused TaskNotFoundError\n"
    );
    assert_eq!(launches(dir.path()), ["moon"]);
}

/// A server written with the A2A Python SDK, on 127.0.0.1: its base URL (the child is
/// killed when dropped).
async fn python_server() -> (tokio::process::Child, String) {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(python())
        .arg(script("server.py"))
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut line = String::new();
    tokio::io::BufReader::new(stdout)
        .read_line(&mut line)
        .await
        .unwrap();
    let port: u16 = line
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("server.py printed {line:?}, not its port"));
    (child, format!("http://127.0.0.1:{port}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(feature = "services"),
    ignore = "needs the A2A Python SDK: cargo xtask test"
)]
async fn brute_s_client_talks_to_a_server_written_with_the_python_sdk() {
    let (_child, base) = python_server().await;
    let agent = A2aAgent::new("py", &base);
    let reply = agent.send("hello", None, None).await.unwrap();
    assert_eq!(reply.state, A2aState::Completed);
    assert_eq!(reply.text, "python echo: hello");
    let asked = agent.send("please confirm", None, None).await.unwrap();
    assert_eq!(asked.state, A2aState::InputRequired);
    assert_eq!(asked.text, "Really launch? Say yes or no.");
    let done = agent
        .send("yes", asked.task_id.as_deref(), asked.context_id.as_deref())
        .await
        .unwrap();
    assert_eq!(done.state, A2aState::Completed, "{done:?}");
    assert_eq!(done.text, "confirmed: yes");
    let streaming = A2aAgent::new("py", &base).streaming(true);
    // An answer in chunks: the same text read whole (the artifact's parts) or streamed.
    let whole = agent.send("chunks", None, None).await.unwrap();
    let streamed = streaming.send("chunks", None, None).await.unwrap();
    assert_eq!(whole.text, "one two three", "{whole:?}");
    assert_eq!(streamed.text, whole.text, "{streamed:?}");
    let asked = streaming
        .send("confirm, streamed", None, None)
        .await
        .unwrap();
    assert_eq!(asked.state, A2aState::InputRequired, "{asked:?}");
    let done = streaming
        .send("ok", asked.task_id.as_deref(), None)
        .await
        .unwrap();
    assert_eq!(
        (done.state, done.text.as_str()),
        (A2aState::Completed, "confirmed: ok")
    );

    // As a tool: the model sees the question with the task id, answers, gets the result.
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::from_fn(|env: &Env| {
        let last = env.messages.last().unwrap();
        if last.role == Role::User {
            return Message::tool_calls(
                "",
                vec![ToolCall::new("t1", "py", json!({"task": "confirm it"}))],
            );
        }
        let content = &last.content;
        match content.split('`').nth(3) {
            Some(task) if content.contains("needs input") && env.messages.len() < 4 => {
                Message::tool_calls(
                    "",
                    vec![ToolCall::new(
                        "t2",
                        "py",
                        json!({"task": "sure", "task_id": task}),
                    )],
                )
            }
            _ => Message::assistant(format!("got: {content}")),
        }
    });
    let caller = brute_agent! {
        use Loop::ToolResult;
        use MaxIterations { max: 5 };
        use DefaultToolPipeline { tools: (A2aAgent::new("py", &base),), root: dir.path() };
        run model;
    };
    let outcome = caller.start("go").await.unwrap();
    assert_eq!(outcome.text(), Some("got: confirmed: sure"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brute_s_client_surfaces_brute_serve_s_approval_pause() {
    let dir = tempfile::tempdir().unwrap();
    let running = start(dir.path()).await;
    let agent = A2aAgent::new("launcher", format!("{}/a2a/launcher", running.base)).token(TOKEN);
    let asked = agent.send("go", None, None).await.unwrap();
    assert_eq!(asked.state, A2aState::InputRequired, "{asked:?}");
    assert!(asked.text.contains("tool `launch`"), "{}", asked.text);
    let done = agent
        .send("approve", asked.task_id.as_deref(), None)
        .await
        .unwrap();
    assert_eq!(done.text, "done: launched to moon");
    let unauthorized = A2aAgent::new("launcher", format!("{}/a2a/launcher", running.base))
        .send("go", None, None)
        .await
        .unwrap_err()
        .to_string();
    assert!(unauthorized.contains("401"), "{unauthorized}");
    // Streamed, the chunks of the answer make its text again.
    let echo = A2aAgent::new("echo", &running.base)
        .token(TOKEN)
        .streaming(true);
    let reply = echo.send("hi", None, None).await.unwrap();
    assert_eq!(
        (reply.state, reply.text.as_str()),
        (A2aState::Completed, "echo: hi (1 messages)")
    );
    let asked = A2aAgent::new("launcher", format!("{}/a2a/launcher", running.base))
        .token(TOKEN)
        .streaming(true)
        .send("go", None, None)
        .await
        .unwrap();
    assert_eq!(asked.state, A2aState::InputRequired, "{asked:?}");
}
