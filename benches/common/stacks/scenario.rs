//! The one scenario every row of `benches/stacks.rs` runs: its constants, and the
//! pieces on brute's types that the brute rows and the `*-on-brute` rows share (the
//! independent rows have their own, in `independent/`).
//!
//! A turn: a system and a user message, a zero-latency scripted model that calls the
//! no-op tool once per reply `calls` times and then answers. So one turn is
//! `calls + 1` model calls and `calls` tool runs, and ends with `2 * calls + 3`
//! messages.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use brute::structured::{schemars, serde};
use brute::{
    Env, Error, Message, Model, Role, ToolCall, model::ToolSpec, providers::ScriptedModel,
};

/// The system prompt.
pub const PROMPT: &str = "You are a terse assistant.";
/// The user message that starts every turn.
pub const USER: &str = "Call the tool, then answer.";
/// The iteration guard's limit (brute's `MaxIterations` default).
pub const MAX: u32 = 100;
/// The no-op tool's name.
pub const TOOL: &str = "noop";
/// The no-op tool's description.
pub const DESCRIPTION: &str = "Does nothing and says so.";

/// The no-op tool's arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(crate = "brute::structured::serde")]
#[schemars(crate = "brute::structured::schemars")]
pub struct NoopArgs {
    /// A number the tool ignores.
    pub n: u64,
}

/// The no-op tool's body, which every row runs. It counts its runs, so that each row
/// proves it ran the tool as often as the hand-written loop did.
#[derive(Clone, Debug, Default)]
pub struct Noop {
    runs: Arc<AtomicU64>,
}

impl Noop {
    /// Runs the tool: reads its argument, answers "ok".
    pub async fn run(&self, args: NoopArgs) -> String {
        std::hint::black_box(args.n);
        self.runs.fetch_add(1, Ordering::Relaxed);
        String::from("ok")
    }

    /// How many times the tool ran.
    pub fn runs(&self) -> u64 {
        self.runs.load(Ordering::Relaxed)
    }
}

/// The tool as advertised to the model (the same spec brute derives for it).
pub fn spec() -> ToolSpec {
    ToolSpec::new(TOOL, DESCRIPTION, brute::tools::schema_for::<NoopArgs>())
}

/// A model that calls the no-op tool once per reply, `calls` times, then answers.
pub fn model(calls: usize) -> ScriptedModel {
    let mut replies: Vec<Message> = (0..calls)
        .map(|i| {
            Message::tool_calls(
                "",
                vec![ToolCall::new(
                    format!("call_{i}"),
                    TOOL,
                    serde_json::json!({ "n": i }),
                )],
            )
        })
        .collect();
    replies.push(Message::assistant("done"));
    ScriptedModel::per_turn(replies)
}

/// A fresh env holding the user message (what `Agent::start` builds).
pub fn user_env() -> Env {
    let mut env = Env::new();
    env.messages.push(Message::user(USER));
    env
}

/// The system prompt layer's work: prepend the prompt unless the conversation has one.
pub fn add_system_prompt(env: &mut Env, prompt: &str) {
    if env.messages.first().is_none_or(|m| m.role != Role::System) {
        env.messages.insert(0, Message::system(prompt));
    }
}

/// The tool layer's work on the way in: advertise the tool once per turn.
pub fn advertise(env: &mut Env, spec: &ToolSpec) {
    if !env.tools.iter().any(|t| t.name == spec.name) {
        env.tools.push(spec.clone());
    }
}

/// The tool loop's condition: go on while the last message is a tool result.
pub fn last_is_tool_result(env: &Env) -> bool {
    env.messages.last().is_some_and(|m| m.role == Role::Tool)
}

/// The model call: one completion, appended to the conversation.
pub async fn complete(env: &mut Env, model: &ScriptedModel) -> Result<(), Error> {
    let reply = model.complete(env).await?;
    env.messages.push(reply.message);
    Ok(())
}

/// The tool layer's work on the way out: runs every call of the last message, in
/// order, and appends one result per call. Borrows the calls (no copy of a call);
/// arguments that do not fit become an error result, as in brute.
pub async fn run_calls(env: &mut Env, tool: &Noop) {
    let Some(last) = env.messages.len().checked_sub(1) else {
        return;
    };
    for i in 0..env.messages[last].tool_calls.len() {
        let call = &env.messages[last].tool_calls[i];
        let id = call.id.clone();
        let content = if call.name != TOOL {
            format!("Error: unknown tool `{}`", call.name)
        } else {
            match <NoopArgs as serde::Deserialize>::deserialize(&call.arguments) {
                Ok(args) => tool.run(args).await,
                Err(error) => format!("Error: tool `{TOOL}`: {error}"),
            }
        };
        env.messages.push(Message::tool_result(id, content));
    }
}
