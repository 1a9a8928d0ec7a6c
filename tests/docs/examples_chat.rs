//! `examples/chat.rs` driven without a terminal (issue 14, item 4): lines piped in,
//! the output captured. The offline model answers and runs a shell command; a model
//! on a 127.0.0.1 server streams its reply, printed once as it arrives; a turn whose
//! server stalls is cancelled (what Ctrl-C does) and the session stays usable;
//! `/reset` starts a fresh session. `.ci/run` also pipes input to the binary.

#![allow(clippy::unwrap_used)]

use crate::providers_support;

use crate::chat;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use brute::providers::{self, AnyModel, ScriptedModel};
use brute::{Message, Role};
use providers_support::{Reply, Server};
use tokio::sync::mpsc;

/// A writer the test can read back.
#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Buffer {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

fn piped(lines: &[&str]) -> mpsc::UnboundedReceiver<String> {
    let (send, receive) = mpsc::unbounded_channel();
    for line in lines {
        send.send(line.to_string()).unwrap();
    }
    receive // the sender is dropped: the input ends after these lines
}

fn session_messages(path: &std::path::Path) -> Vec<Message> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn piped_lines_are_answered_on_the_session_and_reset_starts_fresh() {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("chat.jsonl");
    std::fs::write(dir.path().join("only.txt"), "x\n").unwrap();
    let out = Buffer::default();
    let model: AnyModel = ScriptedModel::from_fn(chat::script).into();
    let summary = chat::run(
        model.clone(),
        &session,
        dir.path(),
        piped(&["hello", "!ls", "again"]),
        Arc::new(Mutex::new(out.clone())),
        std::future::pending,
    )
    .await
    .unwrap();
    assert_eq!(
        (summary.turns, summary.cancelled, summary.stopped_short),
        (3, 0, 0)
    );
    let text = out.text();
    assert!(text.contains("You said \"hello\" (0 earlier"), "{text}");
    assert!(text.contains("[shell {\"command\":\"ls\"}]"), "{text}");
    assert!(text.contains("You said \"again\" (2 earlier"), "{text}");
    let kept = session_messages(&session);
    let shell = kept.iter().find(|m| m.role == Role::Tool).unwrap();
    assert!(shell.content.contains("only.txt"), "{shell:?}");

    // A second chat on the same session remembers, until `/reset`.
    let out = Buffer::default();
    let summary = chat::run(
        model,
        &session,
        dir.path(),
        piped(&["remember?", "/reset", "fresh", "/quit", "never sent"]),
        Arc::new(Mutex::new(out.clone())),
        std::future::pending,
    )
    .await
    .unwrap();
    assert_eq!((summary.turns, summary.resets), (2, 1));
    let text = out.text();
    assert!(text.contains("You said \"remember?\" (3 earlier"), "{text}");
    assert!(text.contains("You said \"fresh\" (0 earlier"), "{text}");
    assert!(!text.contains("never sent"), "{text}");
    let kept = session_messages(&session);
    assert_eq!(kept.len(), 2);
    assert_eq!(kept[0].content, "fresh");
}

fn chunk(delta: &str) -> String {
    format!(
        "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{delta}\"}},\"finish_reason\":null}}]}}\n\n"
    )
}

fn streamed(pieces: &[&str]) -> Reply {
    let body: String = pieces.iter().map(|p| chunk(p)).collect::<String>() + "data: [DONE]\n\n";
    Reply::stream_split(&body, 11)
}

#[tokio::test]
async fn a_turn_stopped_by_the_pass_limit_says_so() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("only.txt"), "x\n").unwrap();
    let out = Buffer::default();
    // A model that never stops asking for a tool: the chat's `MaxIterations` ends it.
    let model: AnyModel = ScriptedModel::from_fn(|_env| {
        Message::tool_calls(
            "",
            vec![brute::ToolCall::new(
                "",
                "read",
                serde_json::json!({"file_path": "only.txt"}),
            )],
        )
    })
    .into();
    let summary = chat::run(
        model,
        &dir.path().join("chat.jsonl"),
        dir.path(),
        piped(&["read it forever", "hello"]),
        Arc::new(Mutex::new(out.clone())),
        std::future::pending,
    )
    .await
    .unwrap();
    assert_eq!((summary.turns, summary.stopped_short), (2, 2));
    let text = out.text();
    assert!(
        text.contains(
            "[the turn stopped short after 25 model call(s): MaxIterations reached its limit of 25]"
        ),
        "{text}"
    );
}

#[tokio::test]
async fn a_streamed_reply_is_printed_once_as_it_arrives() {
    let server = Server::start(vec![streamed(&["Hel", "lo ", "there"])]).await;
    let model = providers::from_spec(&format!("{}/v1#m", server.url())).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = Buffer::default();
    chat::run(
        model,
        &dir.path().join("s.jsonl"),
        dir.path(),
        piped(&["hi"]),
        Arc::new(Mutex::new(out.clone())),
        std::future::pending,
    )
    .await
    .unwrap();
    assert_eq!(server.requests()[0].json()["stream"], true);
    let text = out.text();
    assert_eq!(text.matches("Hello there").count(), 1, "{text}");
}

#[tokio::test]
async fn a_cancelled_turn_leaves_a_session_the_next_turn_can_use() {
    let server = Server::start(vec![
        Reply::Stall(Duration::from_secs(60)),
        streamed(&["after ", "the cancel"]),
    ])
    .await;
    let model = providers::from_spec(&format!("{}/v1#m", server.url())).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("s.jsonl");
    let out = Buffer::default();
    // Ctrl-C during the first turn only, once its request reached the server (which
    // never answers it).
    let turns = AtomicUsize::new(0);
    let server = &server;
    let cancel = || {
        let first = turns.fetch_add(1, Ordering::Relaxed) == 0;
        async move {
            if !first {
                std::future::pending::<()>().await;
            }
            while server.requests().is_empty() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    };
    let summary = chat::run(
        model,
        &session,
        dir.path(),
        piped(&["this one hangs", "and this one?"]),
        Arc::new(Mutex::new(out.clone())),
        cancel,
    )
    .await
    .unwrap();
    assert_eq!((summary.turns, summary.cancelled), (1, 1), "{}", out.text());
    assert!(out.text().contains("[cancelled]"));
    assert!(out.text().contains("after the cancel"));
    let kept = session_messages(&session);
    let last = kept.last().unwrap();
    assert_eq!(
        (last.role, last.content.as_str()),
        (Role::Assistant, "after the cancel")
    );
    // The cancelled prompt, which nothing answered, was taken back by `SessionLog`
    // (brute's turn atomicity), so the turns still alternate.
    let turns: Vec<(Role, &str)> = kept.iter().map(|m| (m.role, m.content.as_str())).collect();
    assert_eq!(
        turns,
        [
            (Role::User, "and this one?"),
            (Role::Assistant, "after the cancel"),
        ]
    );
    // Nor was it sent to the model again.
    let sent = server.requests()[1].json();
    let texts: Vec<&str> = sent["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(!texts.contains(&"this one hangs"), "{sent}");
}
