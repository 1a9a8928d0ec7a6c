//! The typed refusals of fork, rewind and prune, which `SessionError` carries
//! (its own module, so that the error and the operations both import it and never
//! each other).

use crate::error::BoxError;

/// Why a fork or a rewind was refused. Every variant names the session and the
/// position asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ForkError {
    /// The point lies between a tool call and its result: the history kept would
    /// end in a call that a model is never shown the result of, or the result would
    /// be cut from its call.
    #[error(
        "session {session}: position {position} splits tool call `{call_id}` (made before it) from its result (after it); pick a position before the call or after its result"
    )]
    SplitsToolCall {
        /// The session.
        session: String,
        /// The position asked for (messages kept).
        position: usize,
        /// The id of the call whose result lies past the position.
        call_id: String,
    },
    /// The position is past the end of the session.
    #[error("session {session}: position {position} is past its end ({len} messages stored)")]
    PastEnd {
        /// The session.
        session: String,
        /// The position asked for.
        position: usize,
        /// How many messages the session holds.
        len: usize,
    },
    /// A fork's new session already holds messages: a fork never overwrites one.
    #[error(
        "cannot fork {from} into {to}: session {to} already holds {len} messages; delete it first or pick another id"
    )]
    TargetExists {
        /// The session forked.
        from: String,
        /// The new session's id.
        to: String,
        /// How many messages it holds.
        len: usize,
    },
    /// A fork of a session into itself.
    #[error("cannot fork session {session} into itself; rewind it instead")]
    SameSession {
        /// The session.
        session: String,
    },
}

/// Why a retention step failed, beyond the store's own errors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RetentionError {
    /// The archive refused the messages a prune would remove: nothing was removed.
    #[error(
        "session {session}: the archive refused the {messages} messages a prune would remove, so none were: {source}"
    )]
    Archive {
        /// The session.
        session: String,
        /// How many messages the prune would have removed.
        messages: usize,
        /// What the archive said.
        #[source]
        source: BoxError,
    },
}
