//! Why a turn stopped: [`StopReason`], and [`ExitReason`] for a layer that ends it early.
//!
//! The bottom floor of the core: it names no other module.

use std::fmt;

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
