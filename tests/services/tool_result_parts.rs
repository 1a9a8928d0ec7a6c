//! A tool's images and documents on the tool result message, kept by every session
//! store: a `#[tool]` returning parts runs in an agent whose `SessionLog` is a JSONL,
//! SQLite or PostgreSQL store, and the stored history (and the next turn's) holds the
//! parts as the tool made them. PostgreSQL runs for real (see `session_support`): the
//! test fails, never skips, without it.

#![allow(clippy::unwrap_used)]

use crate::session_support;

use std::time::Duration;

use brute::message::Part;
use brute::tools::{DefaultToolPipeline, ToolContext, ToolError, ToolOutput};
use brute::{Message, Role, ToolCall, brute_agent, middleware::Loop, middleware::SessionLog};
use brute::{providers::ScriptedModel, tool};
use serde_json::json;
use session_support::{AnyStore, postgres_database, sqlite_path, temp_dir};

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n";

/// Takes a screenshot (a picture and the page as a PDF).
#[tool]
async fn screenshot(_cx: &ToolContext) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text("The login page.")
        .with_part(Part::image("image/png", PNG).map_err(|e| e.to_string())?)
        .with_part(Part::pdf(b"%PDF-1.7").titled("login.pdf")))
}

fn expected_parts() -> Vec<Part> {
    vec![
        Part::image("image/png", PNG).unwrap(),
        Part::pdf(b"%PDF-1.7").titled("login.pdf"),
    ]
}

/// Runs a turn calling `screenshot` with the history in `store`, then checks what the
/// store kept and what the next turn reads back.
async fn parts_are_stored(store: AnyStore) {
    let dir = temp_dir();
    let model = ScriptedModel::from_fn(|env| match env.messages.last() {
        Some(last) if last.role == Role::Tool => Message::assistant("A login page."),
        _ => Message::tool_calls("", vec![ToolCall::new("c1", "screenshot", json!({}))]),
    });
    let agent = brute_agent! {
        use SessionLog { store: store.store(), session: "s" };
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: (Screenshot,), root: dir.path(), output_dir: dir.path() };
        run model;
    };
    let outcome = agent.start("What does the page look like?").await.unwrap();
    assert_eq!(outcome.env.messages[2].parts(), expected_parts());
    let stored = store.load("s").await;
    assert_eq!(stored[2].role, Role::Tool);
    assert_eq!(stored[2].content, "The login page.");
    assert_eq!(stored[2].parts(), expected_parts());
    assert_eq!(stored, outcome.env.messages);
    // The next turn starts from the stored history, parts included.
    let next = agent.start("And now?").await.unwrap();
    assert_eq!(next.env.messages[2].parts(), expected_parts());
}

#[tokio::test]
async fn tool_result_parts_round_trip_through_every_store() {
    let ttl = Duration::from_secs(30);
    let jsonl = temp_dir();
    let jsonl_path = jsonl.path().to_str().unwrap().to_string();
    parts_are_stored(AnyStore::open("jsonl", &jsonl_path, ttl).await).await;
    let line = std::fs::read_to_string(jsonl.path().join("s.jsonl")).unwrap();
    assert_eq!(
        line.lines().nth(2).unwrap(),
        r#"{"role":"tool","content":"The login page.","parts":[{"type":"image","media_type":"image/png","data":"iVBORw0KGgo="},{"type":"document","media_type":"application/pdf","data":"JVBERi0xLjc=","title":"login.pdf"}],"tool_call_id":"c1"}"#
    );
    let sqlite = temp_dir();
    let sqlite_file = sqlite_path(sqlite.path());
    parts_are_stored(AnyStore::open("sqlite", sqlite_file.to_str().unwrap(), ttl).await).await;
    parts_are_stored(AnyStore::open("postgres", &postgres_database("parts"), ttl).await).await;
}
