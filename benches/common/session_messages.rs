//! The messages of the session benchmarks (`session_log`, `session_tag`,
//! `long_session`): one history, the same in each, so that their figures compare.

use brute::{Message, ToolCall};

/// Message `i` of a realistic mix: user prompts, tool calls, ~300-byte tool results,
/// answers (every call answered by the next message).
pub fn message(i: usize) -> Message {
    match i % 4 {
        0 => Message::user(format!(
            "Please look at file number {i} and tell me what it does."
        )),
        1 => Message::tool_calls(
            "",
            vec![ToolCall::new(
                format!("call_{i}"),
                "read",
                serde_json::json!({ "path": format!("src/file_{i}.rs") }),
            )],
        ),
        2 => Message::tool_result(
            format!("call_{}", i - 1),
            "fn main() {\n    println!(\"hello\");\n}\n".repeat(8),
        ),
        _ => Message::assistant(format!(
            "File {i} prints a greeting eight times; nothing else happens there."
        )),
    }
}
