//! Messages: what the conversation is made of, and how it is written to a session file.
//!
//! The serde form is the session format: one message per JSON line, and loading is
//! its exact inverse (a lossless round trip).
//!
//! ```
//! use brute::{Message, Role};
//!
//! let line = r#"{"role":"assistant","content":"","tool_calls":[{"id":"tc1","name":"shell","arguments":{"command":"ls"}}]}"#;
//! let message: Message = serde_json::from_str(line)?;
//! assert_eq!(message.role, Role::Assistant);
//! assert_eq!(message.tool_calls[0].name, "shell");
//! assert_eq!(serde_json::to_string(&message)?, line);
//! # Ok::<(), serde_json::Error>(())
//! ```
//!
//! # Images and documents
//!
//! A message carries images and documents in [`Message::parts`], beside its text in
//! [`Message::content`] (see [`Part`]). Providers send the parts before the text, the
//! order Anthropic recommends (the picture, then the question about it); to interleave
//! text and pictures, send several user messages in a row, which both providers accept
//! as one turn. A message without parts has the same JSON line as before parts existed.
//!
//! ```
//! use brute::{Message, message::Part};
//!
//! let message = Message::user("Summarise this report.").with_part(Part::pdf(b"%PDF-1.7 ..."));
//! let line = serde_json::to_string(&message)?;
//! assert!(line.starts_with(r#"{"role":"user","content":"Summarise this report.","parts":[{"type":"document","media_type":"application/pdf","data":"#));
//! assert_eq!(serde_json::from_str::<Message>(&line)?, message);
//! # Ok::<(), serde_json::Error>(())
//! ```

mod part;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use part::{Data, Part, PartError, Source};

/// Who said a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions for the model; `SystemPrompt` adds it each turn, so sessions skip it.
    System,
    /// The person (or program) driving the agent.
    User,
    /// The model: text, reasoning and tool calls.
    Assistant,
    /// The result of one tool call, tied to it by `tool_call_id`.
    Tool,
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        })
    }
}

/// A tool call the model asked for: which tool, with which JSON arguments.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Identifier chosen by the model; the tool result repeats it in `tool_call_id`.
    pub id: String,
    /// Name of the tool to run.
    pub name: String,
    /// Arguments as the model wrote them (normally a JSON object).
    pub arguments: Value,
}

impl ToolCall {
    /// A tool call with the given id, tool name and arguments.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
}

/// One message of a conversation.
///
/// Fields that are empty are left out of the JSON form (`parts`, `tool_calls`,
/// `tool_call_id`, `reasoning`, `awaiting_approval`); `content` is always written, and defaults to `""` when
/// a line lacks it.
///
/// The text stays a `String` in `content`, and images and documents live beside it in
/// `parts`, rather than `content` becoming a list of parts: every reader of the text
/// (middleware, compaction, tools, tests, user code) keeps working unchanged, a
/// text-only message costs nothing more, and its session line is byte for byte the line
/// brute wrote before parts existed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// The text.
    #[serde(default)]
    pub content: String,
    /// Images and documents, sent before the text (see [`Part`]). Absent from the JSON
    /// form when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<Part>,
    /// The model's visible reasoning, for providers that return it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// What a provider needs to accept the reasoning back on a later call: the
    /// signature of an Anthropic thinking block. Absent from the JSON form when `None`,
    /// so sessions without it are unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_signature: Option<String>,
    /// Tool calls of an assistant message, in the order the model made them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// On a tool result: the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// On a tool result: not a result yet. The call waits for a person's decision
    /// (the approval policy asked, see [`brute::stream`](crate::stream)), and the
    /// content says so. Absent from the JSON form when `false`, so sessions without
    /// paused calls are unchanged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub awaiting_approval: bool,
}

impl Message {
    /// A message with the given role and text, and nothing else.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
            parts: Vec::new(),
            reasoning: None,
            reasoning_signature: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            awaiting_approval: false,
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }

    /// An assistant message with text only.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }

    /// An assistant message that calls tools.
    pub fn tool_calls(content: impl Into<String>, calls: Vec<ToolCall>) -> Self {
        Message {
            tool_calls: calls,
            ..Self::new(Role::Assistant, content)
        }
    }

    /// The result of the tool call with id `call_id`.
    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Message {
            tool_call_id: Some(call_id.into()),
            ..Self::new(Role::Tool, content)
        }
    }

    /// The same message with `part` added after its other parts.
    pub fn with_part(mut self, part: Part) -> Self {
        self.parts.push(part);
        self
    }

    /// Whether this is an assistant message asking for at least one tool call.
    pub fn has_tool_calls(&self) -> bool {
        self.role == Role::Assistant && !self.tool_calls.is_empty()
    }
}
