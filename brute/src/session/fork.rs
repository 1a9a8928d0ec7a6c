//! Fork and rewind: a session copied up to a message into a new one, or cut back to
//! one. Both refuse a point that would split a tool call from its result.
//!
//! A *point* is a position in the stored history: `at` keeps the first `at` messages
//! (`0` keeps none, the session's length keeps all). Both are provided methods of
//! [`SessionStore`] (built on `load`, `open`, `append` and `rewrite`), so every store
//! has them: [`SessionStore::fork`], [`SessionStore::rewind`].

use super::error::SessionError;
use super::store::SessionStore;
use crate::message::Message;

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

/// Checks that keeping the first `at` of `messages` (of `session`) splits no tool
/// call from its result.
pub fn check_point(session: &str, messages: &[Message], at: usize) -> Result<(), ForkError> {
    if at > messages.len() {
        return Err(ForkError::PastEnd {
            session: session.to_string(),
            position: at,
            len: messages.len(),
        });
    }
    let (kept, cut) = messages.split_at(at);
    for call in kept.iter().flat_map(|m| m.tool_calls.iter()) {
        if cut
            .iter()
            .any(|m| m.tool_call_id.as_deref() == Some(call.id.as_str()))
        {
            return Err(ForkError::SplitsToolCall {
                session: session.to_string(),
                position: at,
                call_id: call.id.clone(),
            });
        }
    }
    Ok(())
}

/// [`SessionStore::fork`]'s provided implementation.
pub(crate) async fn fork<S: SessionStore + ?Sized>(
    store: &S,
    from: &str,
    at: usize,
    to: &str,
) -> Result<usize, SessionError> {
    if from == to {
        return Err(SessionError::Fork(ForkError::SameSession {
            session: from.to_string(),
        }));
    }
    let messages = store.load(from).await?;
    check_point(from, &messages, at).map_err(SessionError::Fork)?;
    let (mut lease, existing) = store.open(to).await?;
    let written = if existing.is_empty() {
        store.append(&mut lease, &messages[..at]).await.map(|()| at)
    } else {
        Err(SessionError::Fork(ForkError::TargetExists {
            from: from.to_string(),
            to: to.to_string(),
            len: existing.len(),
        }))
    };
    let released = store.release(lease).await;
    let written = written?;
    released?;
    Ok(written)
}

/// [`SessionStore::rewind`]'s provided implementation.
pub(crate) async fn rewind<S: SessionStore + ?Sized>(
    store: &S,
    id: &str,
    to: usize,
) -> Result<Vec<Message>, SessionError> {
    let (mut lease, mut messages) = store.open(id).await?;
    let cut = match check_point(id, &messages, to) {
        Ok(()) => store.rewrite(&mut lease, to, &[]).await,
        Err(refused) => Err(SessionError::Fork(refused)),
    };
    let released = store.release(lease).await;
    cut?;
    released?;
    Ok(messages.split_off(to))
}
