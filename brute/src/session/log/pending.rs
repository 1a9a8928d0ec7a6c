//! What `SessionLog` does with a turn that did not finish: a failed turn that never
//! got an answer. (Calls left waiting for approval are the approval room's:
//! `tools::pipeline::resume`.)

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use crate::env::{Changes, Env, Mark};
use crate::error::Error;
use crate::message::{Message, Role};
use crate::session::error::SessionError;

/// Turn atomicity: when a turn failed before anything answered its prompt in the
/// store (`answered`: a reply of the model or a tool result stored since `start`), the
/// messages it added are removed again, so the session never holds two user messages
/// in a row (the caller still has the prompt and may send it again). What the store
/// holds decides, not the transcript: a reply the turn got but could not store (the
/// store failed) answers nothing. A turn that got further keeps what it stored: the
/// model's replies and the tool results, whose effects happened. Gives the messages
/// of the record it removed (none when it removed nothing).
pub(in crate::session) fn roll_back_unanswered(
    env: &mut Env,
    start: Mark,
    answered: bool,
) -> Vec<Message> {
    if answered {
        return Vec::new();
    }
    let (keep, removed) = match env.messages.changes_since(start) {
        Changes::Appended(new) => (env.messages.len() - new.len(), recorded(new)),
        _ => return Vec::new(),
    };
    env.messages.truncate(keep);
    removed
}

/// The messages of the record the turn added since `start`, when it only appended.
pub(in crate::session) fn appended(env: &Env, start: Mark) -> Vec<Message> {
    match env.messages.changes_since(start) {
        Changes::Appended(new) => recorded(new),
        _ => Vec::new(),
    }
}

/// Copies of `messages` without the `system` ones (which are never stored).
fn recorded(messages: &[Message]) -> Vec<Message> {
    messages
        .iter()
        .filter(|m| m.role != Role::System)
        .cloned()
        .collect()
}

/// The prompts of failed turns that stay stored because their removal could not be
/// written (the store was failing), by session: where each begins in the session's
/// record, and its messages. The next turn of the session through the same
/// `SessionLog` (or a clone) takes it back first, under the session's lease, if the
/// session still ends with it: so the caller, told that a resend is safe
/// ([`Error::Stored`]), never gets the prompt stored twice.
#[derive(Debug, Default)]
pub(crate) struct Unanswered(Mutex<HashMap<String, (usize, Vec<Message>)>>);

impl Unanswered {
    /// The `prompt` of a failed turn of `session`, stored from record position `from`,
    /// could not be taken back.
    pub(in crate::session) fn remember(&self, session: &str, from: usize, prompt: Vec<Message>) {
        if !prompt.is_empty() {
            self.lock().insert(session.to_owned(), (from, prompt));
        }
    }

    /// Where the remembered prompt of `session` begins in the record, when `history`
    /// (as loaded) still ends with it there, after the record's other messages: the
    /// caller cuts `history` and the store there. A prompt the session no longer ends
    /// with (another process answered it, or removed it) is forgotten.
    pub(in crate::session) fn stored_in(
        &self,
        session: &str,
        history: &[Message],
    ) -> Option<(usize, usize)> {
        let mut held = self.lock();
        let (from, prompt) = held.get(session)?;
        let n = prompt.len();
        let recorded = history.iter().filter(|m| m.role != Role::System).count();
        let ends_with = history.len() >= n && history[history.len() - n..] == prompt[..];
        if recorded == from + n && ends_with {
            return Some((*from, n));
        }
        held.remove(session);
        None
    }

    /// The prompt of `session` was taken back.
    pub(in crate::session) fn forget(&self, session: &str) {
        self.lock().remove(session);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (usize, Vec<Message>)>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The error of a failed turn that `left` some of its messages stored (their count,
/// the role of the last, whether nothing answered the prompt): [`Error::Stored`]
/// around it. A lost lease reports what it stored itself.
pub(in crate::session) fn reported(error: Error, left: Option<(usize, Role, bool)>) -> Error {
    let lost = matches!(
        error.downcast_ref::<SessionError>(),
        Some(SessionError::LeaseLost { .. })
    );
    match left {
        Some((stored, last, resend)) if !lost => Error::Stored {
            error: Box::new(error),
            stored,
            last,
            resend,
        },
        _ => error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_is_taken_back_only_where_the_session_still_ends_with_it() {
        let unanswered = Unanswered::default();
        let hi = Message::user("hi");
        let history = vec![Message::user("a"), Message::assistant("b"), hi.clone()];
        assert_eq!(unanswered.stored_in("s", &history), None);
        unanswered.remember("s", 2, vec![hi.clone()]);
        assert_eq!(unanswered.stored_in("t", &history), None, "another session");
        assert_eq!(unanswered.stored_in("s", &history), Some((2, 1)));
        // Answered meanwhile (by another process): forgotten, never taken back.
        let mut answered = history.clone();
        answered.push(Message::assistant("hello"));
        assert_eq!(unanswered.stored_in("s", &answered), None);
        assert_eq!(unanswered.stored_in("s", &history), None, "forgotten");
        // The same text at another place is another message.
        unanswered.remember("s", 1, vec![hi.clone()]);
        assert_eq!(unanswered.stored_in("s", &history), None);
        // A system line of an old file is not part of the record.
        unanswered.remember("s", 2, vec![hi.clone()]);
        let mut old = vec![Message::system("sys")];
        old.extend(history.iter().cloned());
        assert_eq!(unanswered.stored_in("s", &old), Some((2, 1)));
        unanswered.forget("s");
        assert_eq!(unanswered.stored_in("s", &history), None);
    }

    #[test]
    fn a_failure_that_left_messages_stored_says_so_unless_its_lease_was_lost() {
        let failed = || Error::layer("X", "failed");
        assert!(matches!(reported(failed(), None), Error::Layer { .. }));
        let stored = reported(failed(), Some((1, Role::User, true)));
        assert!(
            matches!(
                stored,
                Error::Stored {
                    stored: 1,
                    last: Role::User,
                    resend: true,
                    ..
                }
            ),
            "{stored:?}"
        );
        assert_eq!(stored.layer_name(), Some("X"));
        let lost: Error = SessionError::LeaseLost {
            session: "s".into(),
            durable: 1,
        }
        .into();
        let kept = reported(lost, Some((1, Role::User, true)));
        assert!(matches!(
            kept.downcast_ref::<SessionError>(),
            Some(SessionError::LeaseLost { .. })
        ));
        assert!(!matches!(kept, Error::Stored { .. }));
    }
}
