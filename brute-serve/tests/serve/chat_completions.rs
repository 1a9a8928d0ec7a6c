//! The OpenAI-compatible endpoint, talked to by three clients: raw HTTP, brute's own
//! `OpenAi` provider, and the official OpenAI Python client (installed by `cargo xtask
//! test` into `.ci/venv`; the test fails when it is missing).

#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;

use brute::session::{JsonlStore, SessionStore};
use brute::{Env, Event, Message, Role, brute_agent, middleware::SessionLog, providers::OpenAi};
use brute_serve::Server;
use serde_json::{Value, json};
use support::{Running, TOKEN, events, post};

/// Streams its answer in two deltas: what the last user message said, and how many
/// messages it was given.
fn answer(env: &Env) -> String {
    let last = env
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| m.content.clone())
        .unwrap_or_default();
    format!("echo: {last} ({} messages)", env.messages.len())
}

async fn start() -> (Running, Arc<JsonlStore>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(JsonlStore::new(dir.path()));
    let agent = brute_agent! {
        use SessionLog { store: store.clone() };
        run |env: &Env| {
            let text = answer(env);
            let (head, tail) = text.split_at(6);
            env.emit(Event::ContentDelta(head));
            env.emit(Event::ContentDelta(tail));
            async move { Ok(Message::assistant(text)) }
        };
    };
    let server = Server::new(store.clone())
        .agent("echo", agent)
        .bearer_token(TOKEN);
    (Running::start(server).await, store, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_requests_get_a_completion_and_a_chunk_stream_and_leave_no_session() {
    let (running, store, _dir) = start().await;
    let client = support::client();
    let url = format!("{}/v1/chat/completions", running.base);
    let messages = json!([
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [{"type": "text", "text": "two"}]},
    ]);
    let body = post(
        &client,
        url.clone(),
        json!({"model": "echo", "messages": messages, "temperature": 0.5}),
    )
    .send()
    .await
    .unwrap()
    .text()
    .await
    .unwrap();
    let completion: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(completion["object"], "chat.completion");
    assert_eq!(completion["model"], "echo");
    assert!(completion["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(
        completion["choices"][0]["message"],
        json!({"role": "assistant", "content": "echo: two (4 messages)"})
    );
    assert_eq!(completion["choices"][0]["finish_reason"], "stop");

    let body = post(
        &client,
        url.clone(),
        json!({"model": "echo", "messages": messages, "stream": true}),
    )
    .send()
    .await
    .unwrap()
    .text()
    .await
    .unwrap();
    let chunks = events(&body);
    assert_eq!(chunks.last().unwrap().1, Value::Null, "[DONE] last: {body}");
    let deltas: Vec<&Value> = chunks
        .iter()
        .filter_map(|(_, c)| c.get("choices"))
        .map(|c| &c[0]["delta"])
        .collect();
    assert_eq!(deltas[0]["role"], "assistant");
    let text: String = deltas
        .iter()
        .filter_map(|d| d["content"].as_str())
        .collect();
    assert_eq!(text, "echo: two (4 messages)");
    assert_eq!(
        deltas
            .iter()
            .filter(|d| d["content"].as_str().is_some_and(|s| !s.is_empty()))
            .count(),
        2,
        "two deltas, the whole message not repeated: {body}"
    );
    let finish = &chunks[chunks.len() - 2].1["choices"][0];
    assert_eq!(finish["finish_reason"], "stop");
    assert!(
        chunks
            .iter()
            .filter_map(|(_, c)| c.get("object"))
            .all(|o| o == "chat.completion.chunk")
    );

    let unknown = post(
        &client,
        url.clone(),
        json!({"model": "gpt-4", "messages": messages}),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(unknown.status(), 404);
    let bad = post(
        &client,
        url,
        json!({"model": "echo", "messages": [{"role": "robot", "content": "x"}]}),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(bad.status(), 400);
    assert!(bad.text().await.unwrap().contains("messages[0].role"));

    assert_eq!(
        store.list().await.unwrap(),
        Vec::<String>::new(),
        "each request's session is deleted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brute_s_own_openai_provider_talks_to_the_endpoint() {
    let (running, _store, _dir) = start().await;
    for stream in [false, true] {
        let model = OpenAi::compatible(format!("{}/v1", running.base), "echo")
            .api_key(TOKEN)
            .stream(stream);
        let client = brute_agent! { run model; };
        let outcome = client.start("hello").await.unwrap();
        assert_eq!(
            outcome.text(),
            Some("echo: hello (1 messages)"),
            "stream: {stream}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(feature = "services"),
    ignore = "needs the OpenAI Python client: cargo xtask test"
)]
async fn the_official_openai_python_client_gets_a_completion() {
    let python = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `cargo xtask test`, which installs the OpenAI Python client there",
        python.display()
    );
    let (running, _store, _dir) = start().await;
    let script = r#"
import sys
from openai import OpenAI
client = OpenAI(base_url=sys.argv[1] + "/v1", api_key=sys.argv[2], max_retries=0)
reply = client.chat.completions.create(model="echo", messages=[{"role": "user", "content": "from python"}])
print(reply.choices[0].message.content)
stream = client.chat.completions.create(model="echo", messages=[{"role": "user", "content": "streamed"}], stream=True)
print("".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices))
"#;
    let output = tokio::process::Command::new(&python)
        .arg("-c")
        .arg(script)
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
        "echo: from python (1 messages)\necho: streamed (1 messages)\n"
    );
}
