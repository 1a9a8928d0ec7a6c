//! Fork and rewind: a session copied up to a message into a new one, or cut back to
//! one. Both refuse a point that would split a tool call from its result.
//!
//! A *point* is a position in the stored history: `at` keeps the first `at` messages
//! (`0` keeps none, the session's length keeps all). Both are provided methods of
//! [`SessionStore`] (built on `load`, `open`, `append` and `rewrite`), so every store
//! has them: [`SessionStore::fork`], [`SessionStore::rewind`].

use crate::message::Message;
pub use crate::session::validate::history_error::ForkError;

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
