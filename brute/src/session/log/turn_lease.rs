//! The lease of one turn: shared by the env's persistence ([`Writer`], which writes
//! through it) and `SessionLog` (which releases it at the end), and given back by
//! [`Abandon`] when the turn is dropped half-way.

use std::sync::{Arc, Mutex, PoisonError};

use crate::cost::Spend;
use crate::env::{Changes, Persist, SaveFuture};
use crate::error::Error;
use crate::message::{Message, Role};
use crate::session::boxed::DynLease;
use crate::session::error::SessionError;
use crate::session::store::Abandoned;

/// The synthetic result given to a tool call whose turn was dropped (cancelled)
/// before the call returned.
pub const CANCELLED_TOOL_CALL: &str = "error: this tool call was cancelled before it returned a result (the turn was stopped); its effect is unknown, check before retrying";

/// The lease, and what the turn stored that a dropped turn must not leave as it is.
struct Held {
    lease: Option<Box<dyn DynLease>>,
    /// The calls stored without a result.
    open: Vec<String>,
    /// Whether anything answered the prompt (a reply, a tool result) or the history
    /// was rewritten: then nothing is taken back.
    answered: bool,
    /// The messages stored before any answer (the prompt).
    unanswered: usize,
    /// The messages of the record when the turn began (the loaded history).
    history: usize,
    /// The messages of the record now stored (the history and the turn's).
    stored: usize,
    /// The role of the last message the turn stored.
    last: Option<Role>,
    /// The session's running total when the turn began, as its store held it.
    spent_before: Spend,
    /// The last turn total handed to the lease, so an unchanged one is not stored again.
    spent_turn: Option<Spend>,
}

/// A turn's lease, shared.
#[derive(Clone)]
pub(in crate::session) struct TurnLease(Arc<Mutex<Held>>);

impl TurnLease {
    /// Holds `lease` for a turn whose loaded history (of `history` messages, stored)
    /// has no call without a result (loading repaired any).
    pub(in crate::session) fn new(lease: Box<dyn DynLease>, history: usize) -> Self {
        let spent_before = lease.spend();
        TurnLease(Arc::new(Mutex::new(Held {
            spent_before,
            spent_turn: None,
            lease: Some(lease),
            open: Vec::new(),
            answered: false,
            unanswered: 0,
            history,
            stored: history,
            last: None,
        })))
    }

    /// The session's running total when the turn began.
    pub(in crate::session) fn spent_before(&self) -> Spend {
        self.lock().spent_before
    }

    /// How many of the turn's messages are stored, counted from its first (the
    /// prompt).
    pub(in crate::session) fn durable(&self) -> usize {
        let held = self.lock();
        held.stored.saturating_sub(held.history)
    }

    /// What the turn left stored, when it stored anything: how many of its messages
    /// are stored, the role of the last, and whether nothing of them answered its
    /// prompt (then a resend of the prompt is safe: the next turn stores it once).
    pub(in crate::session) fn left(&self) -> Option<(usize, Role, bool)> {
        let held = self.lock();
        let stored = held.stored.saturating_sub(held.history);
        match (stored, held.last) {
            (0, _) | (_, None) => None,
            (stored, Some(last)) => Some((stored, last, !held.answered)),
        }
    }

    /// Whether anything the turn stored answered its prompt (a reply, a tool result),
    /// or it rewrote the history.
    pub(in crate::session) fn answered(&self) -> bool {
        self.lock().answered
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the lease out (to release it, or for one write); `None` when a write
    /// that was dropped half-way took it with it.
    pub(in crate::session) fn take(&self) -> Option<Box<dyn DynLease>> {
        self.lock().lease.take()
    }

    /// The persistence `SessionLog` installs in the env.
    pub(in crate::session) fn writer(&self) -> Box<dyn Persist> {
        Box::new(Writer {
            lease: self.clone(),
        })
    }

    /// Gives the lease back if the turn is dropped before it was released.
    pub(in crate::session) fn abandon_on_drop(&self) -> Abandon {
        Abandon(self.clone())
    }
}

/// Saves exactly the changes the transcript reports, appending what was appended and
/// rewriting the history from the first changed position, and keeps count of the calls stored
/// without a result.
struct Writer {
    lease: TurnLease,
}

impl Writer {
    /// Hands the session's new running total to the lease, which stores it with the
    /// messages this step saves.
    fn spent(&mut self, turn: Spend) {
        let mut held = self.lease.lock();
        if held.spent_turn == Some(turn) {
            return;
        }
        let total = held.spent_before + turn;
        if let Some(lease) = held.lease.as_mut() {
            lease.set_spend(total);
            held.spent_turn = Some(turn);
        }
    }
}

impl Persist for Writer {
    fn save<'a>(&'a mut self, changes: Changes<'a>, spent: Option<Spend>) -> SaveFuture<'a> {
        if let Some(turn) = spent {
            self.spent(turn);
        }
        Box::pin(async move {
            // The lease is taken out for the write (no lock is held across it) and put
            // back; a write that was dropped half-way leaves none, and the next fails.
            let Some(mut lease) = self.lease.take() else {
                return Err(SessionError::WriterGone { store: "session" }.into());
            };
            let saved = match changes {
                Changes::None => Ok(()),
                Changes::Appended(new) => lease.append(new).await,
                Changes::Rewritten { from, messages } => lease.rewrite(from, messages).await,
            };
            let mut held = self.lease.lock();
            held.lease = Some(lease);
            match (&saved, changes) {
                (Ok(()), Changes::None) => {}
                (Ok(()), Changes::Appended(new)) => {
                    held.stored += recorded(new);
                    held.track(new);
                }
                (Ok(()), Changes::Rewritten { from, messages }) => {
                    held.stored = from + recorded(messages);
                    // The calls without a result follow from the rewritten tail: a
                    // reply in it sets them anew, results in it answer them.
                    held.track(messages);
                    held.answered = true;
                }
                // The store counts what its lease wrote; the caller needs what of
                // this turn is stored.
                (Err(SessionError::LeaseLost { session, .. }), _) => {
                    return Err(SessionError::LeaseLost {
                        session: session.clone(),
                        durable: held.stored.saturating_sub(held.history),
                    }
                    .into());
                }
                (Err(_), _) => {}
            }
            saved.map_err(Error::from)
        })
    }
}

/// The messages of `messages` a store keeps (all but `system` ones).
fn recorded(messages: &[Message]) -> usize {
    messages.iter().filter(|m| m.role != Role::System).count()
}

impl Held {
    /// Follows `stored`, the messages just stored: the calls without a result, and
    /// whether anything answered the prompt.
    fn track(&mut self, stored: &[Message]) {
        for message in stored {
            if message.role != Role::System {
                self.last = Some(message.role);
            }
            match message.role {
                Role::System => continue,
                Role::Tool => self
                    .open
                    .retain(|id| message.tool_call_id.as_deref() != Some(id)),
                Role::Assistant => {
                    self.open = message.tool_calls.iter().map(|c| c.id.clone()).collect();
                }
                Role::User => {
                    self.open.clear();
                    if !self.answered {
                        self.unanswered += 1;
                    }
                    continue;
                }
            }
            self.answered = true;
        }
    }

    /// What the store must do for a turn dropped now.
    fn ending(&mut self) -> Abandoned {
        if !self.open.is_empty() {
            return Abandoned::Append(
                std::mem::take(&mut self.open)
                    .into_iter()
                    .map(|id| Message::tool_result(id, CANCELLED_TOOL_CALL))
                    .collect(),
            );
        }
        if !self.answered && self.unanswered > 0 {
            return Abandoned::RemoveLast(self.unanswered);
        }
        Abandoned::Nothing
    }
}

/// Dropped with the turn: if the turn still holds its lease (it was dropped
/// half-way, not ended), the store is told what to do, from synchronous code
/// ([`SessionStore::abandon`](crate::session::SessionStore::abandon)), and given the lease back:
/// the calls left without a result get [`CANCELLED_TOOL_CALL`], and a prompt nothing
/// answered is removed (as for a failed turn). A streamed message is never stored
/// half: the terminal stores a reply only when it is complete.
pub(in crate::session) struct Abandon(TurnLease);

impl Drop for Abandon {
    fn drop(&mut self) {
        let (lease, ending) = {
            let mut held = self.0.lock();
            (held.lease.take(), held.ending())
        };
        if let Some(lease) = lease {
            lease.abandon(ending);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;

    fn held() -> Held {
        Held {
            lease: None,
            open: Vec::new(),
            answered: false,
            unanswered: 0,
            history: 0,
            stored: 0,
            last: None,
            spent_before: Spend::default(),
            spent_turn: None,
        }
    }

    fn calls(ids: &[&str]) -> Message {
        Message::tool_calls(
            "",
            ids.iter()
                .map(|id| ToolCall::new(*id, "t", serde_json::Value::Null))
                .collect(),
        )
    }

    #[test]
    fn a_prompt_nothing_answered_is_taken_back() {
        let mut held = held();
        held.track(&[Message::system("s"), Message::user("hi")]);
        assert_eq!(held.ending(), Abandoned::RemoveLast(1));
    }

    #[test]
    fn calls_without_a_result_get_one_and_nothing_else_is_taken_back() {
        let mut held = held();
        held.track(&[Message::user("hi")]);
        held.track(&[calls(&["a", "b", "c"])]);
        held.track(&[Message::tool_result("b", "ok")]);
        let Abandoned::Append(results) = held.ending() else {
            panic!("results expected");
        };
        let ids: Vec<_> = results
            .iter()
            .map(|m| m.tool_call_id.as_deref().unwrap_or_default())
            .collect();
        assert_eq!(ids, ["a", "c"]);
        assert!(results.iter().all(|m| m.content == CANCELLED_TOOL_CALL));
    }

    #[test]
    fn an_answered_turn_is_left_as_it_is() {
        let mut held = held();
        held.track(&[Message::user("hi"), Message::assistant("hello")]);
        assert_eq!(held.ending(), Abandoned::Nothing);
        let mut held = self::held();
        held.track(&[calls(&["a"]), Message::tool_result("a", "ok")]);
        assert_eq!(held.ending(), Abandoned::Nothing);
    }

    #[test]
    fn a_turn_that_stored_nothing_leaves_the_session_alone() {
        assert_eq!(held().ending(), Abandoned::Nothing);
    }

    #[tokio::test]
    async fn the_writer_counts_the_messages_of_the_turn_it_stored() {
        let dir = tempfile::tempdir().expect("a directory");
        let store = crate::session::BoxStore::new(crate::session::JsonlStore::new(dir.path()));
        let (mut lease, _) = store.open_dyn("s").await.expect("opened");
        let m = Message::user;
        lease
            .append(&[m("earlier"), m("reply")])
            .await
            .expect("stored");
        let turn = TurnLease::new(lease, 2);
        let mut writer = turn.writer();
        let new = [Message::system("s"), m("a"), m("b")];
        writer
            .save(Changes::Appended(&new), None)
            .await
            .expect("appended");
        assert_eq!(turn.durable(), 2, "a system message counted");
        let tail = [m("B"), m("c")];
        let rewrite = Changes::Rewritten {
            from: 3,
            messages: &tail,
        };
        writer.save(rewrite, None).await.expect("rewritten");
        assert_eq!(turn.durable(), 3);
        turn.take()
            .expect("the lease")
            .release()
            .await
            .expect("released");
        let stored = crate::session::SessionStore::load(&store, "s")
            .await
            .expect("loaded");
        let texts: Vec<_> = stored.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(texts, ["earlier", "reply", "a", "B", "c"]);
    }
}
