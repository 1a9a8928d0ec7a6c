//! Histories a provider would reject are refused or repaired when a session loads:
//! repeated and empty call ids, a system message in the conversation, tool calls on a
//! message that is not the assistant's, a stray approval marker; the size limits of a
//! session file and line; a leading byte order mark.

#![allow(clippy::unwrap_used)]

use brute::session::{
    ABANDONED_APPROVAL, JsonlStore, Problem, SessionError, SessionFile, SessionStore, check_history,
};
use brute::stream::pending_approvals;
use brute::{Message, Role, ToolCall};

fn call(id: &str) -> ToolCall {
    ToolCall::new(id, "shell", serde_json::json!({"command": "true"}))
}

fn calls(ids: &[&str]) -> Message {
    Message::tool_calls("", ids.iter().map(|id| call(id)).collect())
}

fn write(dir: &std::path::Path, id: &str, messages: &[Message]) {
    let lines: Vec<String> = messages
        .iter()
        .map(|m| serde_json::to_string(m).unwrap())
        .collect();
    std::fs::write(dir.join(format!("{id}.jsonl")), lines.join("\n") + "\n").unwrap();
}

/// Loads session `id` through the store, as it is stored.
async fn open(store: &JsonlStore, id: &str) -> Result<Vec<Message>, SessionError> {
    let (lease, history) = store.open(id).await?;
    store.release(lease).await?;
    Ok(history)
}

/// Loads session `id` in `dir` as `SessionLog` does: repaired, with the repair
/// written back.
fn repaired(dir: &std::path::Path, id: &str) -> Vec<Message> {
    let (file, history) = SessionFile::open(dir.join(format!("{id}.jsonl"))).unwrap();
    drop(file);
    history
}

#[test]
fn the_same_call_id_in_two_replies_is_found_and_renamed() {
    let history = vec![
        Message::user("go"),
        calls(&["same"]),
        Message::tool_result("same", "1"),
        calls(&["same"]),
        Message::tool_result("same", "2"),
        Message::assistant("done"),
    ];
    assert_eq!(
        check_history(&history),
        [Problem::ReusedCallId {
            message: 4,
            id: "same".into(),
            first: 2
        }]
    );
}

#[test]
fn an_empty_call_id_is_found() {
    let history = vec![
        Message::user("go"),
        calls(&[""]),
        Message::tool_result("", "1"),
    ];
    assert_eq!(
        check_history(&history),
        [Problem::EmptyCallId { message: 2 }]
    );
}

#[test]
fn a_system_message_in_the_conversation_is_found_but_not_one_before_it() {
    let leading = vec![Message::system("be terse"), Message::user("hi")];
    assert!(check_history(&leading).is_empty());
    let middle = vec![
        Message::user("hi"),
        Message::system("now be verbose"),
        Message::assistant("ok"),
    ];
    assert_eq!(
        check_history(&middle),
        [Problem::SystemInConversation { message: 2 }]
    );
}

#[test]
fn tool_calls_on_a_user_or_tool_message_are_found() {
    let mut user = Message::user("go");
    user.tool_calls.push(call("u1"));
    let mut result = Message::tool_result("a", "1");
    result.tool_calls.push(call("t1"));
    let history = vec![user, calls(&["a"]), result, Message::assistant("done")];
    assert_eq!(
        check_history(&history),
        [
            Problem::CallsOnWrongRole {
                message: 1,
                role: Role::User
            },
            Problem::CallsOnWrongRole {
                message: 3,
                role: Role::Tool
            },
        ]
    );
}

#[test]
fn an_approval_marker_is_only_valid_in_the_last_block_of_results() {
    let mut placeholder = Message::tool_result("a", "not run yet");
    placeholder.set_awaiting_approval(true);
    let paused = vec![Message::user("go"), calls(&["a"]), placeholder.clone()];
    assert!(check_history(&paused).is_empty());

    let mut on_assistant = Message::assistant("hi");
    on_assistant.set_awaiting_approval(true);
    let forged = vec![
        Message::user("go"),
        calls(&["a"]),
        placeholder,
        Message::user("and then?"),
        on_assistant,
    ];
    assert_eq!(
        check_history(&forged),
        [
            Problem::StrayApproval { message: 3 },
            Problem::StrayApproval { message: 5 }
        ]
    );
}

#[test]
fn a_repaired_session_is_valid_and_a_forged_pause_is_not_pending() {
    let dir = tempfile::tempdir().unwrap();
    let mut forged = Message::tool_result("x", "not run yet");
    forged.set_awaiting_approval(true);
    let mut user = Message::user("go");
    user.tool_calls.push(call("x"));
    write(
        dir.path(),
        "s",
        &[
            user,
            forged,
            Message::system("in the middle"),
            calls(&["same", ""]),
            Message::tool_result("same", "1"),
            Message::tool_result("", "2"),
            calls(&["same"]),
            Message::tool_result("same", "3"),
            Message::assistant("done"),
        ],
    );
    let history = repaired(dir.path(), "s");
    assert!(check_history(&history).is_empty(), "{history:#?}");
    assert!(pending_approvals(&history).is_empty());
    assert!(history.iter().all(|m| m.role != Role::System));
    assert!(history.iter().all(|m| !m.awaiting_approval()));
    // Ids are unique across the history, and each result still answers its call.
    let ids: Vec<&str> = history
        .iter()
        .flat_map(|m| m.tool_calls.iter().map(|c| c.id.as_str()))
        .collect();
    assert_eq!(ids.len(), 3);
    assert!(ids.iter().all(|id| !id.is_empty()));
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 3);
    let result_of = |content: &str| {
        history
            .iter()
            .find(|m| m.role == Role::Tool && m.content == content)
            .and_then(|m| m.tool_call_id.clone())
            .unwrap()
    };
    assert_eq!(result_of("1"), "same");
    assert_ne!(result_of("2"), "");
    assert_ne!(result_of("3"), "same");
    // The forged placeholder answered no call: it was dropped, not left pending.
    assert!(
        history
            .iter()
            .all(|m| m.tool_call_id.as_deref() != Some("x"))
    );
    // The repair was written back: the stored history is the repaired one.
    assert_eq!(
        SessionFile::read(dir.path().join("s.jsonl")).unwrap(),
        history
    );
}

#[test]
fn a_stray_marker_on_a_result_says_the_call_was_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut stale = Message::tool_result("a", "not run yet");
    stale.set_awaiting_approval(true);
    write(
        dir.path(),
        "s",
        &[
            Message::user("go"),
            calls(&["a"]),
            stale,
            Message::assistant("later"),
        ],
    );
    let history = repaired(dir.path(), "s");
    assert_eq!(history[2], Message::tool_result("a", ABANDONED_APPROVAL));
}

#[tokio::test]
async fn a_line_over_the_limit_is_refused_naming_file_line_and_limit() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "big",
        &[Message::user("hi"), Message::assistant("x".repeat(4096))],
    );
    let before = std::fs::read(dir.path().join("big.jsonl")).unwrap();
    let store = JsonlStore::new(dir.path()).max_line_bytes(1024);
    let error = open(&store, "big").await.unwrap_err();
    match &error {
        SessionError::TooLarge {
            line: Some(2),
            limit: 1024,
            ..
        } => {}
        other => panic!("expected TooLarge for line 2, got {other:?}"),
    }
    let text = error.to_string();
    assert!(text.contains("big.jsonl:2"), "{text}");
    assert!(text.contains("1024"), "{text}");
    assert_eq!(std::fs::read(dir.path().join("big.jsonl")).unwrap(), before);
    assert!(matches!(
        store.load("big").await,
        Err(SessionError::TooLarge { line: Some(2), .. })
    ));
    // Under a larger limit the same file loads.
    let store = JsonlStore::new(dir.path()).max_line_bytes(8192);
    assert_eq!(open(&store, "big").await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_file_over_the_limit_is_refused_before_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let many: Vec<Message> = (0..100).map(|i| Message::user(format!("m{i}"))).collect();
    write(dir.path(), "long", &many);
    let store = JsonlStore::new(dir.path()).max_file_bytes(512);
    let error = open(&store, "long").await.unwrap_err();
    assert!(
        matches!(
            error,
            SessionError::TooLarge {
                line: None,
                limit: 512,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("session file"), "{error}");
}

#[tokio::test]
async fn a_leading_byte_order_mark_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let line = serde_json::to_string(&Message::user("hi")).unwrap();
    std::fs::write(dir.path().join("bom.jsonl"), format!("\u{feff}{line}\n")).unwrap();
    let store = JsonlStore::new(dir.path());
    assert_eq!(open(&store, "bom").await.unwrap(), [Message::user("hi")]);
    assert_eq!(store.load("bom").await.unwrap(), [Message::user("hi")]);
}
