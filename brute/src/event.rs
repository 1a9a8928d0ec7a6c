//! Events: what layers report while a turn runs, for `agent.on(kind, handler)`.
//!
//! Events borrow their payload from the env, so emitting one allocates nothing, and an
//! env with no handlers pays one branch per event.
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use brute::{Event, EventKind, Message, brute_agent};
//!
//! # tokio_test();
//! # fn tokio_test() { tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let seen = Arc::new(Mutex::new(Vec::new()));
//! let mut agent = brute_agent! {
//!     run |_env| async { Ok(Message::assistant("hello")) };
//! };
//! let log = seen.clone();
//! agent.on(EventKind::ModelResponse, move |_env, event| {
//!     if let Event::ModelResponse { message, .. } = event {
//!         log.lock().unwrap().push(message.content.clone());
//!     }
//! });
//! agent.start("hi").await.unwrap();
//! assert_eq!(*seen.lock().unwrap(), ["hello"]);
//! # }) }
//! ```

use std::time::Duration;

use crate::cost::Cost;
use crate::error::{Error, ModelError};
use crate::message::{Message, ToolCall};
use crate::stop::StopReason;
use crate::usage::Usage;

/// One event, borrowing its payload.
#[derive(Debug)]
#[non_exhaustive]
pub enum Event<'a> {
    /// A turn began; the prompt is the last message.
    TurnStart,
    /// A turn ended, whether it succeeded or failed: every `TurnStart` has one.
    TurnEnd {
        /// Why it stopped, or the error it failed with.
        result: Result<&'a StopReason, &'a Error>,
    },
    /// A loop layer started pass `n` (1 for the first).
    Iteration {
        /// The pass number.
        n: u32,
    },
    /// The terminal is about to call the model with this many messages.
    ModelRequest {
        /// Messages sent.
        messages: usize,
        /// Tools advertised.
        tools: usize,
    },
    /// The model answered.
    ModelResponse {
        /// The assistant message, already appended to the env.
        message: &'a Message,
        /// Tokens used, when the provider reports them.
        usage: Option<&'a Usage>,
        /// What the call cost, when the provider reported usage and the model has a
        /// price ([`Prices`](crate::cost::Prices)); `None` otherwise, never a made-up
        /// zero.
        cost: Option<Cost>,
    },
    /// A piece of streamed text.
    ContentDelta(&'a str),
    /// A piece of streamed reasoning.
    ReasoningDelta(&'a str),
    /// A tool call is about to run.
    ToolCallStart {
        /// The call.
        call: &'a ToolCall,
    },
    /// A tool call produced its result.
    ToolResult {
        /// The call.
        call: &'a ToolCall,
        /// The tool message that answers it.
        result: &'a Message,
        /// Whether the result reports a failure.
        is_error: bool,
    },
    /// A model call failed and will be tried again: by [`Retry`](crate::middleware::Retry)
    /// after `delay`, or at once by the next model of a
    /// [`Fallback`](crate::model::Fallback). Deltas streamed during the failed attempt
    /// belong to no answer.
    Retry {
        /// The attempt that failed (1 for the first; under a `Fallback`, the place of
        /// the model that failed).
        attempt: u32,
        /// The wait before the next attempt.
        delay: Duration,
        /// What failed.
        error: &'a ModelError,
    },
    /// The history was compacted: what was given up, by which strategy.
    Compacted {
        /// The strategy that made the cut.
        strategy: &'a str,
        /// The messages removed or rewritten, as they were before.
        removed: &'a [Message],
        /// Estimated tokens before, in the unit of `tokens_after`: the estimator's
        /// count, scaled to the provider's when the provider counted more.
        tokens_before: usize,
        /// Estimated tokens after.
        tokens_after: usize,
        /// The provider's count of the conversation before the cut (its last reported
        /// usage plus estimates of what came after), when it differs from the
        /// estimate.
        reported_before: Option<usize>,
    },
    /// A tool call needs a person's decision: the approval policy said
    /// [`Decision::Ask`](crate::tools::Decision::Ask). The call is stored in the session as
    /// pending and the turn ends paused ([`ExitReason::AwaitingApproval`](crate::ExitReason::AwaitingApproval));
    /// [`Agent::decide`](crate::Agent::decide) resumes it.
    ApprovalRequired {
        /// The call waiting for a decision.
        call: &'a ToolCall,
    },
    /// A layer reports an error it handled (the turn may go on).
    Error {
        /// The layer.
        layer: &'a str,
        /// The error.
        error: &'a Error,
    },
}

/// The kind of an [`Event`], for registering handlers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventKind {
    /// [`Event::TurnStart`]
    TurnStart,
    /// [`Event::TurnEnd`]
    TurnEnd,
    /// [`Event::Iteration`]
    Iteration,
    /// [`Event::ModelRequest`]
    ModelRequest,
    /// [`Event::ModelResponse`]
    ModelResponse,
    /// [`Event::ContentDelta`]
    ContentDelta,
    /// [`Event::ReasoningDelta`]
    ReasoningDelta,
    /// [`Event::ToolCallStart`]
    ToolCallStart,
    /// [`Event::ToolResult`]
    ToolResult,
    /// [`Event::Retry`]
    Retry,
    /// [`Event::Compacted`]
    Compacted,
    /// [`Event::ApprovalRequired`]
    ApprovalRequired,
    /// [`Event::Error`]
    Error,
}

impl EventKind {
    /// Every kind, in declaration order.
    pub const ALL: [EventKind; 13] = [
        EventKind::TurnStart,
        EventKind::TurnEnd,
        EventKind::Iteration,
        EventKind::ModelRequest,
        EventKind::ModelResponse,
        EventKind::ContentDelta,
        EventKind::ReasoningDelta,
        EventKind::ToolCallStart,
        EventKind::ToolResult,
        EventKind::Retry,
        EventKind::Compacted,
        EventKind::ApprovalRequired,
        EventKind::Error,
    ];
}

impl Event<'_> {
    /// The kind of this event.
    pub fn kind(&self) -> EventKind {
        match self {
            Event::TurnStart => EventKind::TurnStart,
            Event::TurnEnd { .. } => EventKind::TurnEnd,
            Event::Iteration { .. } => EventKind::Iteration,
            Event::ModelRequest { .. } => EventKind::ModelRequest,
            Event::ModelResponse { .. } => EventKind::ModelResponse,
            Event::ContentDelta(_) => EventKind::ContentDelta,
            Event::ReasoningDelta(_) => EventKind::ReasoningDelta,
            Event::ToolCallStart { .. } => EventKind::ToolCallStart,
            Event::ToolResult { .. } => EventKind::ToolResult,
            Event::Retry { .. } => EventKind::Retry,
            Event::Compacted { .. } => EventKind::Compacted,
            Event::ApprovalRequired { .. } => EventKind::ApprovalRequired,
            Event::Error { .. } => EventKind::Error,
        }
    }
}
