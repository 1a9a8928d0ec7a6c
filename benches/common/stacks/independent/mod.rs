//! The independent baselines: the scenario written by someone who does not use brute.
//! Their own message, conversation, tool and model types (nothing of brute's), built
//! on `serde` and `serde_json` only, as a user writing the loop by hand writes them.
//!
//! The three rows (`hand`, `boxed`, `tower`) share these types and the functions
//! below; each is compared with brute's rows through [`super::check::Summary`], so
//! that every row proves it did the same work before it is timed.

pub mod boxed;
pub mod hand;
pub mod tower;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use super::check::{Summary, SummaryMessage};
use super::scenario::{DESCRIPTION, MAX, PROMPT, TOOL, USER};

/// Who said a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The instructions.
    System,
    /// The person.
    User,
    /// The model.
    Assistant,
    /// A tool's result.
    Tool,
}

impl Role {
    /// The role's name, as brute writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One tool call of a model reply.
#[derive(Clone, Debug)]
pub struct Call {
    /// The id the result repeats.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, as the model wrote them.
    pub arguments: Value,
}

/// One message of the conversation.
#[derive(Clone, Debug)]
pub struct Msg {
    /// Who said it.
    pub role: Role,
    /// The text.
    pub content: String,
    /// The tool calls of a model reply.
    pub calls: Vec<Call>,
    /// On a tool result: the call it answers.
    pub call_id: Option<String>,
}

impl Msg {
    /// A message with text only.
    pub fn text(role: Role, content: &str) -> Self {
        Msg {
            role,
            content: content.to_string(),
            calls: Vec::new(),
            call_id: None,
        }
    }

    /// A tool result.
    pub fn result(call_id: String, content: String) -> Self {
        Msg {
            role: Role::Tool,
            content,
            calls: Vec::new(),
            call_id: Some(call_id),
        }
    }
}

/// A tool as advertised to the model.
#[derive(Clone, Debug)]
pub struct Spec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The JSON Schema of its arguments, shared.
    pub parameters: Arc<Value>,
}

/// The no-op tool's spec, its schema written out (the check proves it is the one
/// brute derives for its own argument type).
pub fn spec() -> Spec {
    Spec {
        name: TOOL.to_string(),
        description: DESCRIPTION.to_string(),
        parameters: Arc::new(serde_json::json!({
            "description": "The no-op tool's arguments.",
            "type": "object",
            "properties": {
                "n": {
                    "description": "A number the tool ignores.",
                    "type": "integer",
                    "format": "uint64",
                    "minimum": 0
                }
            },
            "required": ["n"]
        })),
    }
}

/// Why a turn stopped before the model answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The iteration guard's limit.
    Limit(u32),
}

/// The conversation of one turn: what every layer reads and writes.
#[derive(Debug, Default)]
pub struct Conv {
    /// The messages.
    pub messages: Vec<Msg>,
    /// The tools advertised to the model.
    pub tools: Vec<Spec>,
    /// Model passes so far.
    pub passes: u32,
    /// Set when a layer ended the turn.
    pub stop: Option<Stop>,
}

impl Conv {
    /// A conversation holding the user message, as a turn starts.
    pub fn user() -> Self {
        Conv {
            messages: vec![Msg::text(Role::User, USER)],
            ..Conv::default()
        }
    }

    /// The same figures as brute's env, for the check.
    pub fn summary(&self) -> Summary {
        Summary {
            messages: self
                .messages
                .iter()
                .map(|m| SummaryMessage {
                    role: m.role.as_str().to_string(),
                    content: m.content.clone(),
                    calls: m
                        .calls
                        .iter()
                        .map(|c| (c.id.clone(), c.name.clone(), c.arguments.clone()))
                        .collect(),
                    call_id: m.call_id.clone(),
                })
                .collect(),
            tools: self
                .tools
                .iter()
                .map(|t| {
                    (
                        t.name.clone(),
                        t.description.clone(),
                        t.parameters.as_ref().clone(),
                    )
                })
                .collect(),
            passes: self.passes,
            limited: self.stop.is_some(),
        }
    }
}

/// What can go wrong in a turn.
#[derive(Debug)]
pub enum TurnError {
    /// The scripted model has no reply left.
    Exhausted(usize),
}

impl fmt::Display for TurnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TurnError::Exhausted(n) => write!(f, "the script has only {n} replies"),
        }
    }
}

impl std::error::Error for TurnError {}

/// A zero-latency scripted model: call `n` after the last user message gets reply `n`.
pub struct Script {
    replies: Vec<Msg>,
}

impl Script {
    /// Calls the no-op tool once per reply, `calls` times, then answers.
    pub fn new(calls: usize) -> Self {
        let mut replies: Vec<Msg> = (0..calls)
            .map(|i| Msg {
                role: Role::Assistant,
                content: String::new(),
                calls: vec![Call {
                    id: format!("call_{i}"),
                    name: TOOL.to_string(),
                    arguments: serde_json::json!({ "n": i }),
                }],
                call_id: None,
            })
            .collect();
        replies.push(Msg::text(Role::Assistant, "done"));
        Script { replies }
    }

    /// One completion.
    pub async fn complete(&self, conv: &Conv) -> Result<Msg, TurnError> {
        let index = conv
            .messages
            .iter()
            .rev()
            .take_while(|m| m.role != Role::User)
            .filter(|m| m.role == Role::Assistant)
            .count();
        self.replies
            .get(index)
            .cloned()
            .ok_or(TurnError::Exhausted(self.replies.len()))
    }
}

/// The no-op tool's arguments.
#[derive(serde::Deserialize)]
pub struct Args {
    /// A number the tool ignores.
    pub n: u64,
}

/// The no-op tool. It counts its runs, so that the row proves it ran the tool.
#[derive(Clone, Debug, Default)]
pub struct Tool {
    runs: Arc<AtomicU64>,
}

impl Tool {
    /// Runs the tool: reads its argument, answers "ok".
    pub async fn run(&self, args: Args) -> String {
        std::hint::black_box(args.n);
        self.runs.fetch_add(1, Ordering::Relaxed);
        String::from("ok")
    }

    /// How many times the tool ran.
    pub fn runs(&self) -> u64 {
        self.runs.load(Ordering::Relaxed)
    }
}

/// The system prompt, unless the conversation has one.
pub fn add_system_prompt(conv: &mut Conv) {
    if conv.messages.first().is_none_or(|m| m.role != Role::System) {
        conv.messages.insert(0, Msg::text(Role::System, PROMPT));
    }
}

/// Advertises the tool once per turn.
pub fn advertise(conv: &mut Conv, spec: &Spec) {
    if !conv.tools.iter().any(|t| t.name == spec.name) {
        conv.tools.push(spec.clone());
    }
}

/// The guard: ends the turn past `MAX` passes. True when it did.
pub fn over_limit(conv: &mut Conv) -> bool {
    if conv.passes > MAX {
        conv.stop = Some(Stop::Limit(MAX));
        return true;
    }
    false
}

/// The loop's condition: go on while the last message is a tool result.
pub fn last_is_tool_result(conv: &Conv) -> bool {
    conv.messages.last().is_some_and(|m| m.role == Role::Tool)
}

/// Runs every call of the last message in order, one result per call; arguments that
/// do not fit become an error result.
pub async fn run_calls(conv: &mut Conv, tool: &Tool) {
    let Some(last) = conv.messages.len().checked_sub(1) else {
        return;
    };
    for i in 0..conv.messages[last].calls.len() {
        let call = &conv.messages[last].calls[i];
        let id = call.id.clone();
        let content = if call.name != TOOL {
            format!("Error: unknown tool `{}`", call.name)
        } else {
            match <Args as serde::Deserialize>::deserialize(&call.arguments) {
                Ok(args) => tool.run(args).await,
                Err(error) => format!("Error: tool `{TOOL}`: {error}"),
            }
        };
        conv.messages.push(Msg::result(id, content));
    }
}
