//! What `SessionLog` does with a turn that did not finish: calls left waiting for
//! approval when the conversation goes on, and a failed turn that never got an answer.

use crate::env::{Changes, Env, Mark};
use crate::message::{Message, Role};

/// The result given to a call that waited for approval when the conversation went on
/// without a decision.
pub const ABANDONED_APPROVAL: &str =
    "not run: the conversation went on before anyone approved or denied this tool call";

/// Answers the calls of `messages` that wait for approval with [`ABANDONED_APPROVAL`]
/// (they are not pending any more), except, when `resuming`, those of the last reply
/// (the turn decides on one of them). Says whether anything changed.
pub(super) fn abandon(messages: &mut [Message], resuming: bool) -> bool {
    // The results block of the last reply: the tool messages at the end.
    let tail = messages
        .iter()
        .rposition(|m| m.role != Role::Tool)
        .map_or(0, |i| i + 1);
    let keep = if resuming { tail } else { messages.len() };
    let mut changed = false;
    for message in &mut messages[..keep] {
        if message.awaiting_approval() {
            message.set_awaiting_approval(false);
            message.content = ABANDONED_APPROVAL.to_string();
            changed = true;
        }
    }
    changed
}

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
