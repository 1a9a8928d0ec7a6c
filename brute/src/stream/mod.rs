//! Turns as a stream: [`Agent::stream`](crate::Agent::stream) runs a turn as a
//! [`TurnStream`] of owned, serde-serializable [`TurnItem`]s (deltas, tool calls and
//! results, retries, compaction, approval required, and the end), for a server to send
//! as Server-Sent Events or a terminal to print as they come.
//!
//! A tool call whose approval policy says [`Decision::Ask`](crate::tools::Decision::Ask)
//! pauses the turn: the call is stored in the session as pending, the stream yields
//! [`TurnItem::ApprovalRequired`], and the turn ends [`TurnResult::Paused`]. A
//! [`Verdict`] given with [`Agent::decide`](crate::Agent::decide) (or an
//! [`ApprovalDecision`] in the env of a streamed turn) resumes it, in the same process
//! or in another one after a restart.
//!
//! Built on the turn's [`Event`](crate::Event)s: the stream adds a listener to the
//! turn's env only, so the agent's own handlers still see every event.

mod item;
mod turn_stream;

pub use crate::stop::{ApprovalDecision, ApprovalError, Verdict};
pub use item::{TurnItem, TurnResult};
pub use turn_stream::TurnStream;
