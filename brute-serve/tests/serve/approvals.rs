//! Approval over HTTP: a call that needs approval pauses the turn (the stream says
//! `approval_required` and ends `paused`); `POST /v1/sessions/{id}/approvals/{call_id}`
//! approves, denies or edits it and the turn resumes. The pending call lives only in
//! the session: the server is killed (SIGKILL) while the call waits, a new server
//! process takes the decision, and the tool runs exactly once.

#![cfg(unix)]
#![allow(clippy::unwrap_used)]

use crate::support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use brute::session::JsonlStore;
use brute::tools::{Approval, DefaultToolPipeline};
use brute::{
    Env, Message, Role, ToolCall, brute_agent,
    middleware::{Loop, MaxIterations, SessionLog},
    providers::ScriptedModel,
};
use brute_serve::Server;
use serde_json::{Value, json};
use support::{Launch, TOKEN, events, launches, post};

const CHILD: &str = "BRUTE_SERVE_TEST_APPROVAL_SERVER";

/// Asks to launch to the moon, then reports the result it got.
fn script(env: &Env) -> Message {
    match env.messages.last() {
        Some(m) if m.role == Role::User => Message::tool_calls(
            "launching",
            vec![ToolCall::new("c1", "launch", json!({ "target": "moon" }))],
        ),
        Some(m) => Message::assistant(format!("done: {}", m.content)),
        None => Message::assistant("nothing to do"),
    }
}

fn server(dir: &Path) -> Server {
    let store = Arc::new(JsonlStore::new(dir.join("sessions")));
    let agent = brute_agent! {
        use SessionLog { store: store.clone() };
        use Loop::ToolResult;
        use MaxIterations { max: 5 };
        use DefaultToolPipeline { tools: (Launch,), root: dir, approval: Approval::ask(["launch"]) };
        run ScriptedModel::from_fn(script);
    };
    Server::new(store)
        .agent("launcher", agent)
        .bearer_token(TOKEN)
}

/// Starts a turn and checks that it pauses; the id of the waiting call.
async fn paused_turn(client: &reqwest::Client, base: &str, session: &str) -> String {
    let url = format!("{base}/v1/sessions/{session}/turns");
    let body = post(client, url, json!({ "input": "go" }))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let items = events(&body);
    let asked: Vec<&Value> = items
        .iter()
        .filter(|(n, _)| n == "approval_required")
        .map(|(_, v)| v)
        .collect();
    assert_eq!(asked.len(), 1, "{body}");
    assert_eq!(asked[0]["call"]["name"], "launch");
    let call_id = asked[0]["call"]["id"].as_str().unwrap().to_owned();
    let end = &items.last().unwrap().1;
    assert_eq!(end["result"]["status"], "paused", "{body}");
    assert_eq!(end["result"]["pending"], json!([call_id]));
    call_id
}

/// Posts a decision; the SSE items of the resumed turn.
async fn decide(
    client: &reqwest::Client,
    base: &str,
    session: &str,
    call_id: &str,
    decision: Value,
) -> (u16, String) {
    let url = format!("{base}/v1/sessions/{session}/approvals/{call_id}");
    let response = post(client, url, decision).send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_deny_and_edit_resume_the_paused_turn() {
    let dir = tempfile::tempdir().unwrap();
    let running = support::Running::start(server(dir.path())).await;
    let client = support::client();
    let base = &running.base;

    let call = paused_turn(&client, base, "approve").await;
    assert!(
        launches(dir.path()).is_empty(),
        "nothing runs before the decision"
    );
    let (status, body) = decide(
        &client,
        base,
        "approve",
        &call,
        json!({"decision": "approve"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let end = events(&body).pop().unwrap().1;
    assert_eq!(end["result"]["text"], "done: launched to moon", "{body}");
    assert_eq!(launches(dir.path()), ["moon"]);
    // Decided already: nothing waits.
    let (status, body) = decide(
        &client,
        base,
        "approve",
        &call,
        json!({"decision": "approve"}),
    )
    .await;
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("not_pending"), "{body}");
    assert_eq!(launches(dir.path()), ["moon"]);

    let call = paused_turn(&client, base, "deny").await;
    let decision = json!({"decision": "deny", "reason": "not today"});
    let (status, body) = decide(&client, base, "deny", &call, decision).await;
    assert_eq!(status, 200, "{body}");
    let text = events(&body).pop().unwrap().1["result"]["text"].clone();
    assert!(text.as_str().unwrap().contains("not today"), "{body}");
    assert_eq!(launches(dir.path()), ["moon"]);

    let call = paused_turn(&client, base, "edit").await;
    let decision = json!({"decision": "edit", "arguments": {"target": "mars"}});
    let (status, body) = decide(&client, base, "edit", &call, decision).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        events(&body).pop().unwrap().1["result"]["text"],
        "done: launched to mars"
    );
    assert_eq!(launches(dir.path()), ["moon", "mars"]);

    let (status, _) = decide(&client, base, "edit", &call, json!({"decision": "maybe"})).await;
    assert_eq!(status, 400);
}

/// A server process of its own, killed with SIGKILL when dropped.
struct ServerProcess {
    child: Child,
    base: String,
}

impl ServerProcess {
    fn start(dir: &Path) -> ServerProcess {
        let test = support::harness_name(module_path!(), "a_decision_survives_a_killed_server");
        let child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", test.as_str(), "--nocapture"])
            .env(CHILD, dir)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        // Owned by the guard first, so that a failed assertion still kills it.
        let mut process = ServerProcess {
            child,
            base: String::new(),
        };
        let mut stdout = BufReader::new(process.child.stdout.take().unwrap());
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                stdout.read_line(&mut line).unwrap() > 0,
                "the server process exited"
            );
            if let Some(base) = line.strip_prefix("listening ") {
                process.base = base.trim().to_owned();
                return process;
            }
        }
    }

    fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The child: serves until killed.
fn serve_until_killed(dir: &Path) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("listening http://{}", listener.local_addr().unwrap());
        server(dir)
            .serve(listener, std::future::pending())
            .await
            .unwrap();
    });
}

#[test]
fn a_decision_survives_a_killed_server() {
    if let Some(dir) = std::env::var_os(CHILD) {
        return serve_until_killed(Path::new(&dir));
    }
    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = support::client();

    let mut first = ServerProcess::start(dir.path());
    let call = runtime.block_on(paused_turn(&client, &first.base, "restart"));
    first.kill();
    assert!(launches(dir.path()).is_empty());

    let second = ServerProcess::start(dir.path());
    let (status, body) = runtime.block_on(decide(
        &client,
        &second.base,
        "restart",
        &call,
        json!({"decision": "approve"}),
    ));
    assert_eq!(status, 200, "{body}");
    let items = events(&body);
    let results: Vec<&Value> = items
        .iter()
        .filter(|(n, _)| n == "tool_result")
        .map(|(_, v)| v)
        .collect();
    assert_eq!(results.len(), 1, "{body}");
    assert_eq!(results[0]["content"], "launched to moon");
    assert_eq!(
        items.last().unwrap().1["result"]["status"],
        "completed",
        "{body}"
    );
    assert_eq!(launches(dir.path()), ["moon"], "the tool ran exactly once");

    // The stored history holds the call, one result and the answer.
    let history: Value = runtime.block_on(async {
        let text = client
            .get(format!("{}/v1/sessions/restart", second.base))
            .header("authorization", format!("Bearer {TOKEN}"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        serde_json::from_str(&text).unwrap()
    });
    let messages = history["messages"].as_array().unwrap();
    let results = messages.iter().filter(|m| m["role"] == "tool").count();
    assert_eq!(results, 1, "{history}");
    assert_eq!(
        messages.last().unwrap()["content"],
        "done: launched to moon"
    );
}
