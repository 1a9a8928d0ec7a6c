//! [`TurnItem`]: what a streamed turn yields, owned and serde-serializable, made from
//! the turn's [`Event`]s.

use serde::{Deserialize, Serialize};

use crate::env::Env;
use crate::event::{Event, EventKind};
use crate::message::{Message, Role, ToolCall};
use crate::stop::{ExitReason, StopReason};

/// One item of a streamed turn (see [`Agent::stream`](crate::Agent::stream)).
///
/// Items are owned and serialize to tagged JSON (`{"type":"content_delta","text":".."}`),
/// ready to be sent as Server-Sent Events. A stream always ends with exactly one
/// [`TurnItem::End`].
///
/// Deltas belong to the model attempt in progress: after a [`TurnItem::Retry`] the
/// deltas since the last [`TurnItem::Message`] (or the start) were of a failed attempt
/// and are to be discarded.
///
/// ```
/// use brute::stream::{TurnItem, TurnResult};
///
/// let item = TurnItem::End { result: TurnResult::Completed { text: Some("hi".into()) } };
/// let json = serde_json::to_string(&item)?;
/// assert_eq!(json, r#"{"type":"end","result":{"status":"completed","text":"hi"}}"#);
/// assert_eq!(serde_json::from_str::<TurnItem>(&json)?, item);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum TurnItem {
    /// A piece of the model's text, as it streams.
    ContentDelta {
        /// The text.
        text: String,
    },
    /// A piece of the model's reasoning, as it streams.
    ReasoningDelta {
        /// The text.
        text: String,
    },
    /// The model's complete reply of one pass (already stored in the session when the
    /// turn has a `SessionLog`).
    Message {
        /// The assistant message.
        message: Message,
    },
    /// A tool call is about to run.
    ToolCallStart {
        /// The call.
        call: ToolCall,
    },
    /// A tool call produced its result.
    ToolResult {
        /// The id of the call.
        call_id: String,
        /// The tool's name.
        name: String,
        /// The result, as the model sees it.
        content: String,
        /// Whether the result reports a failure.
        is_error: bool,
    },
    /// A model call failed and will be tried again: the deltas of the failed attempt
    /// are void.
    Retry {
        /// The attempt that failed (1 for the first).
        attempt: u32,
        /// The wait before the next attempt, in milliseconds.
        delay_ms: u64,
        /// What failed.
        error: String,
    },
    /// The history was compacted.
    Compacted {
        /// The strategy that made the cut.
        strategy: String,
        /// How many messages were removed or rewritten.
        removed: usize,
        /// Estimated tokens before, in the unit of `tokens_after`.
        tokens_before: usize,
        /// Estimated tokens after.
        tokens_after: usize,
        /// The provider's count before the cut, when it differs from the estimate.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reported_before: Option<usize>,
    },
    /// A tool call waits for a person's decision; the turn will end
    /// [`TurnResult::Paused`]. Decide with [`Agent::decide`](crate::Agent::decide).
    ApprovalRequired {
        /// The call.
        call: ToolCall,
    },
    /// The end of the turn: always the last item.
    End {
        /// How it ended.
        result: TurnResult,
    },
}

/// How a streamed turn ended: the owned, serializable face of
/// [`StopReason`] or the turn's [`Error`](crate::Error).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
#[non_exhaustive]
pub enum TurnResult {
    /// The model answered without asking for tools ([`StopReason::Completed`]).
    Completed {
        /// The text of the last assistant message.
        text: Option<String>,
    },
    /// Tool calls wait for approval ([`ExitReason::AwaitingApproval`]).
    Paused {
        /// The ids of the calls waiting.
        pending: Vec<String>,
    },
    /// A layer ended the turn early ([`StopReason::Exited`]).
    Exited {
        /// Why, as [`ExitReason`] displays it.
        reason: String,
    },
    /// The stack returned with the last message not a final answer
    /// ([`StopReason::Unfinished`]).
    Unfinished,
    /// The turn failed.
    Failed {
        /// The error, as it displays.
        error: String,
    },
}

/// The event kinds a streamed turn listens to.
pub(super) const KINDS: [EventKind; 9] = [
    EventKind::ContentDelta,
    EventKind::ReasoningDelta,
    EventKind::ModelResponse,
    EventKind::ToolCallStart,
    EventKind::ToolResult,
    EventKind::Retry,
    EventKind::Compacted,
    EventKind::ApprovalRequired,
    EventKind::TurnEnd,
];

impl TurnItem {
    /// The item of `event`, if a stream shows it.
    pub(super) fn from_event(env: &Env, event: &Event<'_>) -> Option<TurnItem> {
        Some(match event {
            Event::ContentDelta(text) => TurnItem::ContentDelta {
                text: (*text).to_string(),
            },
            Event::ReasoningDelta(text) => TurnItem::ReasoningDelta {
                text: (*text).to_string(),
            },
            Event::ModelResponse { message, .. } => TurnItem::Message {
                message: (*message).clone(),
            },
            Event::ToolCallStart { call } => TurnItem::ToolCallStart {
                call: (*call).clone(),
            },
            Event::ToolResult {
                call,
                result,
                is_error,
            } => TurnItem::ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content: result.content.clone(),
                is_error: *is_error,
            },
            Event::Retry {
                attempt,
                delay,
                error,
            } => TurnItem::Retry {
                attempt: *attempt,
                delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                error: error.to_string(),
            },
            Event::Compacted {
                strategy,
                removed,
                tokens_before,
                tokens_after,
                reported_before,
            } => TurnItem::Compacted {
                strategy: (*strategy).to_string(),
                removed: removed.len(),
                tokens_before: *tokens_before,
                tokens_after: *tokens_after,
                reported_before: *reported_before,
            },
            Event::ApprovalRequired { call } => TurnItem::ApprovalRequired {
                call: (*call).clone(),
            },
            Event::TurnEnd { result } => TurnItem::End {
                result: match result {
                    Ok(stop) => TurnResult::from_stop(env, stop),
                    Err(error) => TurnResult::Failed {
                        error: error.to_string(),
                    },
                },
            },
            _ => return None,
        })
    }
}

impl TurnResult {
    fn from_stop(env: &Env, stop: &StopReason) -> TurnResult {
        match stop {
            StopReason::Completed => TurnResult::Completed {
                text: env
                    .messages
                    .iter()
                    .rev()
                    .find(|m| m.role == Role::Assistant)
                    .map(|m| m.content.clone()),
            },
            StopReason::Exited(ExitReason::AwaitingApproval { calls }) => TurnResult::Paused {
                pending: calls.clone(),
            },
            StopReason::Exited(reason) => TurnResult::Exited {
                reason: reason.to_string(),
            },
            StopReason::Unfinished => TurnResult::Unfinished,
        }
    }
}
