//! A served agent that hands the conversation to another (`Handoffs`): over the SSE
//! turn route and over A2A, the client gets the target's answer, and the session the
//! server keeps names the agent that answered.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;

use brute::session::JsonlStore;
use brute::{
    Env, Event, Message, Role, ToolCall, brute_agent,
    middleware::{Handoff, Handoffs, SessionLog, SystemPrompt},
    providers::ScriptedModel,
};
use brute_serve::Server;
use serde_json::{Value, json};
use support::{Running, TOKEN, events, post};

/// Triage: hands every request to billing.
fn triage(env: &Env) -> Message {
    match env.messages.last() {
        Some(m) if m.role == Role::User => Message::tool_calls(
            "",
            vec![ToolCall::new("t1", "transfer_to_billing", json!({}))],
        ),
        _ => Message::assistant("triage should not answer after a handoff"),
    }
}

fn server(dir: &std::path::Path) -> Server {
    let store = Arc::new(JsonlStore::new(dir));
    let billing = brute_agent! {
        use SystemPrompt { prompt: "You are billing." };
        run |env: &Env| {
            let asked = env
                .messages
                .iter()
                .rev()
                .find(|m| m.role == Role::User)
                .map(|m| m.content.clone())
                .unwrap_or_default();
            let text = format!("billing: {asked}");
            env.emit(Event::ContentDelta("billing: "));
            env.emit(Event::ContentDelta(&asked));
            async move { Ok(Message::assistant(text)) }
        };
    };
    let agent = brute_agent! {
        use SessionLog { store: store.clone() };
        use Handoffs { to: Handoff::new("billing", billing) };
        run ScriptedModel::from_fn(triage);
    };
    Server::new(store)
        .agent("triage", agent)
        .bearer_token(TOKEN)
}

/// The session `id` as the server returns it.
async fn session(running: &Running, id: &str) -> Vec<Value> {
    let text = support::client()
        .get(format!("{}/v1/sessions/{id}", running.base))
        .header("authorization", format!("Bearer {TOKEN}"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let history: Value = serde_json::from_str(&text).unwrap();
    history["messages"].as_array().unwrap().clone()
}

/// The agent each stored message names, `None` for the served agent's.
fn named(messages: &[Value]) -> Vec<(String, Option<String>)> {
    messages
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_string(),
                m["agent"].as_str().map(str::to_string),
            )
        })
        .collect()
}

fn expected() -> Vec<(String, Option<String>)> {
    [
        ("user", None),
        ("assistant", None),
        ("tool", None),
        ("assistant", Some("billing")),
    ]
    .into_iter()
    .map(|(r, a)| (r.to_string(), a.map(str::to_string)))
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_turn_ends_with_the_targets_answer_and_the_session_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let running = Running::start(server(dir.path())).await;
    let url = format!("{}/v1/sessions/alice/turns", running.base);
    let body = post(&support::client(), url, json!({ "input": "charged twice" }))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let items = events(&body);
    assert_eq!(
        items.last().unwrap().1,
        json!({"type": "end", "result": {"status": "completed", "text": "billing: charged twice"}}),
        "{body}"
    );
    let messages = session(&running, "alice").await;
    assert_eq!(named(&messages), expected(), "{messages:?}");
    assert_eq!(messages[3]["content"], "billing: charged twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_a2a_task_is_answered_by_the_target_and_its_context_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let running = Running::start(server(dir.path())).await;
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "refund me"}]}
    }});
    let text = post(&support::client(), format!("{}/a2a", running.base), request)
        .header("a2a-version", "1.0")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let reply: Value = serde_json::from_str(&text).unwrap();
    let task = &reply["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{reply}");
    assert_eq!(
        task["artifacts"][0]["parts"][0]["text"], "billing: refund me",
        "{reply}"
    );
    let context = task["contextId"].as_str().unwrap();
    let messages = session(&running, context).await;
    assert_eq!(named(&messages), expected(), "{messages:?}");
}
