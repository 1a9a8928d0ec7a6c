//! What a turn reports while it runs, as owned items on a channel: the agent's event
//! handlers (installed once, by [`attach`]) forward each event of a turn to the
//! [`Sink`] that the request put in the turn env's extensions.

use brute::{Agent, Env, Event, EventKind, Handler};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

/// One item of a streamed turn: the `event:` name of a Server-Sent Event is its
/// `type`, its `data:` the whole item as JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum TurnItem {
    /// A piece of the reply's text, as a streaming model produces it.
    Content {
        /// The new text.
        delta: String,
    },
    /// A piece of the model's reasoning.
    Reasoning {
        /// The new text.
        delta: String,
    },
    /// The model asked for a tool call; it runs now.
    ToolCall {
        /// The call's id.
        id: String,
        /// The tool.
        name: String,
        /// The arguments, as the model wrote them.
        arguments: serde_json::Value,
    },
    /// A tool call finished.
    ToolResult {
        /// The call's id.
        call_id: String,
        /// The tool.
        name: String,
        /// What the tool returned (or its error).
        content: String,
        /// Whether the call failed.
        is_error: bool,
    },
    /// A whole reply of the model (after its deltas, if it streamed).
    Message {
        /// The reply's text.
        content: String,
    },
    /// A model attempt failed and is retried: discard the deltas since the last
    /// `message`.
    Retry {
        /// The attempt that failed (1 is the first).
        attempt: u32,
        /// Why it failed.
        error: String,
    },
    /// The transcript was compacted.
    Compacted {
        /// The strategy that ran.
        strategy: String,
        /// Estimated tokens before.
        tokens_before: usize,
        /// Estimated tokens after.
        tokens_after: usize,
    },
    /// A tool call waits for a person's decision: the turn is paused and stored; post
    /// the decision to `/v1/sessions/{id}/approvals/{call_id}`.
    ApprovalRequired {
        /// The call's id.
        call_id: String,
        /// The tool.
        name: String,
        /// The arguments the call would run with.
        arguments: serde_json::Value,
    },
    /// The turn ended: the last item of every stream.
    End {
        /// `completed`, `paused`, `exited`, `unfinished` or `error`.
        stop: String,
        /// The last assistant text, when the model said something.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        /// Why a layer ended the turn early, for `exited`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// What went wrong, for `error`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}

impl TurnItem {
    /// The SSE event name of the item.
    pub fn name(&self) -> &'static str {
        match self {
            TurnItem::Content { .. } => "content",
            TurnItem::Reasoning { .. } => "reasoning",
            TurnItem::ToolCall { .. } => "tool_call",
            TurnItem::ToolResult { .. } => "tool_result",
            TurnItem::Message { .. } => "message",
            TurnItem::Retry { .. } => "retry",
            TurnItem::Compacted { .. } => "compacted",
            TurnItem::ApprovalRequired { .. } => "approval_required",
            TurnItem::End { .. } => "end",
        }
    }

    /// The item of `event`, or `None` for events a client has no use for (turn
    /// start and end, iterations, requests: the end item comes from the turn's result).
    fn of(event: &Event<'_>) -> Option<TurnItem> {
        Some(match event {
            Event::ContentDelta(delta) => TurnItem::Content {
                delta: (*delta).to_owned(),
            },
            Event::ReasoningDelta(delta) => TurnItem::Reasoning {
                delta: (*delta).to_owned(),
            },
            Event::ToolCallStart { call } => TurnItem::ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
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
            Event::ModelResponse { message, .. } => TurnItem::Message {
                content: message.content.clone(),
            },
            Event::Retry { attempt, error, .. } => TurnItem::Retry {
                attempt: *attempt,
                error: error.to_string(),
            },
            Event::Compacted {
                strategy,
                tokens_before,
                tokens_after,
                ..
            } => TurnItem::Compacted {
                strategy: (*strategy).to_owned(),
                tokens_before: *tokens_before,
                tokens_after: *tokens_after,
            },
            _ => return None,
        })
    }
}

/// What the turn task sends: the items of the turn, and a mark that the session's
/// lease is held (the first event inside the turn), so that the request can answer
/// 409 for a busy session before it starts the stream (see [`Signal::Failed`]).
#[derive(Debug)]
pub(crate) enum Signal {
    /// An event without an item for the client: the turn got past `SessionLog`, so
    /// the session is ours (every item says the same).
    Started,
    /// An item for the client.
    Item(TurnItem),
    /// The turn failed (its last signal): the request answers with this error when
    /// the stream has not started, the stream ends with it otherwise.
    Failed(crate::error::ApiError),
}

/// The channel of one turn, in the env's extensions.
#[derive(Clone, Debug)]
pub(crate) struct Sink(pub(crate) mpsc::UnboundedSender<Signal>);

/// Installs the forwarding handlers on `agent`: every event of a turn whose env has
/// a [`Sink`] becomes a [`Signal`] on it. Turns without a sink pay one lookup.
pub(crate) fn attach<S: Handler<Env>>(agent: &mut Agent<S>) {
    for kind in EventKind::ALL {
        if matches!(kind, EventKind::TurnStart | EventKind::TurnEnd) {
            continue;
        }
        agent.on(kind, |env, event| {
            let Some(sink) = env.extensions.get::<Sink>() else {
                return;
            };
            // A closed channel is a client gone: the turn goes on and is stored.
            let _ = sink.0.send(match TurnItem::of(event) {
                Some(item) => Signal::Item(item),
                None => Signal::Started,
            });
        });
    }
}
