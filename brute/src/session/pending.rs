//! What `SessionLog` does with a turn that did not finish: a failed turn that never
//! got an answer. (Calls left waiting for approval are the approval room's:
//! `tools::pipeline::resume`.)

use crate::env::{Changes, Env, Mark};
use crate::message::Role;

/// Turn atomicity: when a turn failed before anything answered its prompt (no reply
/// of the model, no tool result since `start`), the messages it added are removed
/// again, so the session never holds two user messages in a row (the caller still has
/// the prompt and may send it again). A turn that got further keeps what it stored:
/// the model's replies and the tool results, whose effects happened.
pub(super) fn roll_back_unanswered(env: &mut Env, start: Mark) {
    let keep = match env.messages.changes_since(start) {
        Changes::Appended(new)
            if new
                .iter()
                .all(|m| !matches!(m.role, Role::Assistant | Role::Tool)) =>
        {
            env.messages.len() - new.len()
        }
        _ => return,
    };
    env.messages.truncate(keep);
}
