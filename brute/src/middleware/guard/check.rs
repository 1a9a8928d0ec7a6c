//! The guard contract: [`Guard`], what it answers ([`Check`]), where it is asked
//! ([`Stage`]), how it filters streamed text ([`DeltaFilter`]), and the message a
//! blocked turn leaves in the session.

use std::future::Future;

use serde_json::Value;

use crate::message::{Message, Role, ToolCall};
use crate::stop::ExitReason;

/// Where in a turn a guard is asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Stage {
    /// The user's prompt, before the model sees it.
    Input,
    /// A tool's result, before the model sees it.
    ToolResult,
    /// The model's reply, before it is stored or reaches the caller.
    Output,
    /// A tool call of the model's reply, before it runs.
    ToolCall,
}

impl Stage {
    /// Every stage.
    pub const ALL: [Stage; 4] = [
        Stage::Input,
        Stage::ToolResult,
        Stage::Output,
        Stage::ToolCall,
    ];

    /// The stage's name, as [`ExitReason::Blocked`] carries it: `input`,
    /// `tool_result`, `output` or `tool_call`.
    pub const fn name(self) -> &'static str {
        match self {
            Stage::Input => "input",
            Stage::ToolResult => "tool_result",
            Stage::Output => "output",
            Stage::ToolCall => "tool_call",
        }
    }

    /// The stage named `name` (see [`Stage::name`]).
    pub fn from_name(name: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|stage| stage.name() == name)
    }
}

/// A guard's answer on one piece of text (`Check<String>`) or one tool call's
/// arguments (`Check<Value>`).
#[derive(Clone, Debug, PartialEq)]
pub enum Check<T = String> {
    /// Let it through as it is.
    Pass,
    /// Let it through rewritten to this (a redacted text, corrected arguments).
    Rewrite(T),
    /// Stop the turn. The reason is shown to the caller and stored in the session, so
    /// it must not repeat what it blocks (say "an email address", not the address).
    Block(String),
}

/// A check on the text of a turn and on its tool calls: passes, rewrites, or blocks
/// with a reason. [`Guardrail`](crate::middleware::Guardrail) asks it at every
/// [`Stage`]; the guard answers [`Check::Pass`] for the stages it does not watch.
///
/// ```
/// use brute::middleware::guard::{Check, Guard, Stage};
///
/// /// Blocks prompts that ask for the system prompt.
/// struct NoPromptLeaks;
///
/// impl Guard for NoPromptLeaks {
///     async fn check(&self, text: &str, stage: Stage) -> Check {
///         if stage == Stage::Input && text.to_lowercase().contains("system prompt") {
///             return Check::Block("questions about the system prompt are not answered".into());
///         }
///         Check::Pass
///     }
/// }
/// ```
pub trait Guard: Send + Sync {
    /// Checks `text` at `stage` ([`Stage::Input`], [`Stage::ToolResult`] or
    /// [`Stage::Output`]).
    fn check(&self, text: &str, stage: Stage) -> impl Future<Output = Check> + Send;

    /// Checks a tool call before it runs ([`Stage::ToolCall`]): a rewrite replaces its
    /// arguments. Passes every call unless overridden.
    fn check_call(&self, call: &ToolCall) -> impl Future<Output = Check<Value>> + Send {
        let _ = call;
        std::future::ready(Check::Pass)
    }

    /// A filter for the reply's streamed text, which sees each delta before the
    /// caller does. `None` (the default) holds every delta back until the whole reply
    /// was checked, then releases the reply as it was passed or rewritten; a guard
    /// that can decide on a prefix gives a filter that holds back less.
    fn deltas(&self) -> Option<Box<dyn DeltaFilter>> {
        None
    }
}

/// A filter over the streamed text of one reply: what a caller of a streamed turn sees
/// of it (see [`Guard::deltas`]). It must end up showing what the guard's
/// [`Stage::Output`] check makes of the whole reply, or nothing after a block.
pub trait DeltaFilter: Send {
    /// Takes the next delta and appends to `out` what may be shown now.
    fn push(&mut self, delta: &str, out: &mut String);

    /// The reply is complete: appends the rest to `out` and starts again empty.
    fn finish(&mut self, out: &mut String);
}

/// The `by` of a guardrail's [`ExitReason::Blocked`].
pub(crate) const GUARDRAIL: &str = "Guardrail";

/// What a blocked turn leaves in the conversation: an assistant message saying why,
/// in place of anything the model said on that pass. [`blocked_reason`] reads it back.
pub(crate) fn blocked_message(reason: &ExitReason) -> Message {
    Message::assistant(format!("{PREFIX}{reason}"))
}

const PREFIX: &str = "[brute] ";

/// The reason a guardrail blocked a turn, read back from the message the turn stored
/// (a session's last assistant message after a blocked turn), or `None` for any other
/// message.
///
/// ```
/// use brute::middleware::guard::{Check, Guard, Stage, blocked_reason};
/// use brute::middleware::Guardrail;
/// use brute::{ExitReason, Message, StopReason, brute_agent};
///
/// struct NoSecrets;
/// impl Guard for NoSecrets {
///     async fn check(&self, text: &str, _stage: Stage) -> Check {
///         if text.contains("secret") { Check::Block("a secret".into()) } else { Check::Pass }
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let agent = brute_agent! {
///     use Guardrail { guard: NoSecrets };
///     run |_env| async { Ok(Message::assistant("hi")) };
/// };
/// let outcome = agent.start("tell me the secret").await?;
/// let reason = blocked_reason(outcome.message().unwrap());
/// assert_eq!(reason.as_ref(), Some(match &outcome.stop { StopReason::Exited(r) => r, _ => unreachable!() }));
/// assert_eq!(
///     reason,
///     Some(ExitReason::Blocked { by: "Guardrail", stage: "input", reason: "a secret".into() })
/// );
/// # Ok::<(), brute::Error>(()) }).unwrap();
/// ```
pub fn blocked_reason(message: &Message) -> Option<ExitReason> {
    if message.role != Role::Assistant || !message.tool_calls.is_empty() {
        return None;
    }
    let rest = message.content.strip_prefix(PREFIX)?;
    let rest = rest
        .strip_prefix(GUARDRAIL)?
        .strip_prefix(" blocked the ")?;
    let (stage, reason) = rest.split_once(": ")?;
    Some(ExitReason::Blocked {
        by: GUARDRAIL,
        stage: Stage::from_name(stage)?.name(),
        reason: reason.to_string(),
    })
}
