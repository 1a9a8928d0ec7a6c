//! Why a turn stopped: [`StopReason`], and [`ExitReason`] for a layer that ends it early;
//! [`Verdict`] and [`ApprovalDecision`], what resumes a turn paused for approval.
//!
//! The bottom floor of the core: it names no other module.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Why a turn was ended early; readable by the caller in [`Outcome`](crate::Outcome).
///
/// The core names no layer: a guard such as `MaxIterations` reports itself by name in
/// [`ExitReason::Limit`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExitReason {
    /// A guard reached its limit (`MaxIterations`: the number of model calls).
    Limit {
        /// The layer whose limit it was, as written in the stack.
        by: &'static str,
        /// The limit.
        limit: u32,
    },
    /// The turn is paused: these tool calls (by id) wait for a person's decision. They
    /// are stored in the session as pending; [`Agent::decide`](crate::Agent::decide)
    /// resumes the turn, in this process or another.
    AwaitingApproval {
        /// The ids of the calls waiting, in call order.
        calls: Vec<String>,
    },
    /// A guard blocked the turn (`Guardrail`): the turn's last message says so, and is
    /// stored in the session like any reply.
    Blocked {
        /// The layer that blocked it, as written in the stack.
        by: &'static str,
        /// What was blocked: `input`, `tool_result`, `output` or `tool_call`.
        stage: &'static str,
        /// Why, in the guard's words.
        reason: String,
    },
    /// A layer asked to stop.
    Requested {
        /// The layer that asked.
        by: String,
        /// Why.
        reason: String,
    },
}

impl fmt::Display for ExitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExitReason::Limit { by, limit } => write!(f, "{by} reached its limit of {limit}"),
            ExitReason::AwaitingApproval { calls } => {
                write!(f, "waiting for approval of tool calls {}", calls.join(", "))
            }
            ExitReason::Blocked { by, stage, reason } => {
                write!(f, "{by} blocked the {stage}: {reason}")
            }
            ExitReason::Requested { by, reason } => write!(f, "{by}: {reason}"),
        }
    }
}

/// How a turn ended.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// The model answered without asking for tools.
    Completed,
    /// A layer set `should_exit` (for example `MaxIterations`).
    Exited(ExitReason),
    /// The stack returned with the last message not a final answer (for example a
    /// stack without a loop, after the model asked for a tool).
    Unfinished,
}

impl StopReason {
    /// The calls waiting for approval, when the turn ended paused
    /// ([`ExitReason::AwaitingApproval`]).
    pub fn awaiting_approval(&self) -> Option<&[String]> {
        match self {
            StopReason::Exited(ExitReason::AwaitingApproval { calls }) => Some(calls),
            _ => None,
        }
    }
}

/// A person's decision on a tool call that waits for approval: what
/// [`Agent::decide`](crate::Agent::decide) takes. Its serde form is the JSON an
/// approval endpoint accepts: `{"decision":"approve"}`,
/// `{"decision":"deny","reason":"not today"}`,
/// `{"decision":"edit","arguments":{"command":"ls"}}`, and, for a call the client ran,
/// `{"decision":"answer","content":"sunny"}`.
///
/// ```
/// use brute::stream::Verdict;
///
/// let verdict: Verdict = serde_json::from_str(r#"{"decision":"deny","reason":"no"}"#)?;
/// assert_eq!(verdict, Verdict::Deny { reason: Some("no".into()) });
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Verdict {
    /// Run the call as the model wrote it.
    Approve,
    /// Do not run it; the model gets an error result saying it was denied (and why).
    Deny {
        /// Why, for the model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Run it with these arguments instead.
    Edit {
        /// The arguments to run the call with.
        arguments: Value,
    },
    /// The call ran on the client (a tool named by
    /// [`ClientTools`](crate::tools::ClientTools) in the turn's env): `content` is its
    /// result, stored as the call's result (hidden secrets and long outputs cut as for
    /// any result) without running anything. Refused
    /// ([`ApprovalError::NotClientTool`]) for a call of the agent's own tools.
    Answer {
        /// What the tool returned.
        content: String,
    },
}

/// The decision on one pending call, put in a turn's env extensions to resume a paused
/// turn: [`Agent::decide`](crate::Agent::decide) does it for you, and
/// [`Agent::stream`](crate::Agent::stream) of such an env streams the resumed turn.
/// The tool pipeline takes it out and applies it before calling the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ApprovalDecision {
    /// The id of the pending call.
    pub call_id: String,
    /// The decision.
    pub verdict: Verdict,
}

impl ApprovalDecision {
    /// The decision `verdict` on call `call_id`.
    pub fn new(call_id: impl Into<String>, verdict: Verdict) -> Self {
        ApprovalDecision {
            call_id: call_id.into(),
            verdict,
        }
    }
}

/// Why a decision on a paused call could not be applied.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApprovalError {
    /// The session has no pending call with this id: it was decided already, the
    /// conversation went on, or the id is wrong.
    #[error("tool call `{call_id}` does not wait for approval{} (waiting: {})", session.as_ref().map(|s| format!(" in session {s}")).unwrap_or_default(), if waiting.is_empty() { "none".to_string() } else { waiting.join(", ") })]
    NotPending {
        /// The id given.
        call_id: String,
        /// The session, as `SessionLog` names it (`None` for a turn without one).
        session: Option<String>,
        /// The ids of the calls that do wait.
        waiting: Vec<String>,
    },
    /// No layer of the stack took the decision: it has no tool pipeline
    /// (`DefaultToolPipeline`), which is what applies decisions.
    #[error(
        "no layer applied the decision on tool call `{call_id}`: the stack has no tool pipeline"
    )]
    NotApplied {
        /// The id given.
        call_id: String,
    },
    /// A result ([`Verdict::Answer`]) for a call that is not of a tool the client
    /// runs: the agent's own calls run on the server, or are denied, never answered.
    #[error(
        "tool call `{call_id}` calls `{tool}`, which is not a tool the client runs: only such a call takes a result from the client"
    )]
    NotClientTool {
        /// The id given.
        call_id: String,
        /// The tool the call names.
        tool: String,
    },
}

/// A limit a guard inside a loop sets when the pass it guards was the last one allowed:
/// if the loop around it would start another pass, it ends the turn instead, with
/// [`ExitReason::Limit`] (as [`Error::Stopped`](crate::Error::Stopped) when
/// `as_error`). So the pass count matches the model calls, and no pass starts only to
/// be refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PassLimit {
    /// The guard, as written in the stack.
    pub by: &'static str,
    /// Its limit.
    pub limit: u32,
    /// End the turn with an error rather than an exit.
    pub as_error: bool,
}

impl PassLimit {
    /// Why the turn ends at this limit.
    pub fn reason(&self) -> ExitReason {
        ExitReason::Limit {
            by: self.by,
            limit: self.limit,
        }
    }
}
