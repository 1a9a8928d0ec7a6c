//! `SessionStore`: where sessions live (a JSONL file per session, SQLite, PostgreSQL).
//! The shared handle `SessionLog` persists through, [`Store`](super::Store), and the
//! type-erased store are in `boxed.rs`.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use crate::cost::Spend;
use crate::message::Message;
use crate::session::admin::fork::{self, ForkError};
use crate::session::admin::retention::{
    self, Archive, Retention, RetentionReport, SessionInfo, SessionSize, StoreSize,
};
use crate::session::error::SessionError;
use crate::session::validate::history_error::RetentionError;

/// A boxed future of the session stores.
pub(crate) type StoreFuture<'a, T> =
    Pin<Box<dyn Future<Output = Result<T, SessionError>> + Send + 'a>>;

/// Where sessions live: a session is an id and a list of messages.
///
/// A turn takes the session's **lease** with [`open`](SessionStore::open) (exclusive:
/// a second `open` of the session fails with [`SessionError::Locked`] or
/// [`SessionError::Leased`] until the lease is released or expires, so two workers
/// never run turns of one session at once), appends and rewrites through it, and
/// [`release`](SessionStore::release)s it. Every write is durable when its future
/// completes. `system` messages are never stored: a store skips them.
///
/// The stores of brute: [`JsonlStore`](super::JsonlStore) (one file per session, the
/// default of `SessionLog`), `SqliteStore` (feature `sqlite`) and `PostgresStore`
/// (feature `postgres`). A store of your own implements this trait; give it to
/// `SessionLog` as a [`Store`](super::Store).
pub trait SessionStore: Send + Sync + 'static {
    /// The exclusive hold of one session for one turn.
    type Lease: Send + fmt::Debug + 'static;

    /// Takes the lease of session `id` and loads its messages as stored (an unknown
    /// session is empty).
    fn open(
        &self,
        id: &str,
    ) -> impl Future<Output = Result<(Self::Lease, Vec<Message>), SessionError>> + Send;

    /// Appends `messages` (skipping `system` ones), durably, in one step: after a
    /// crash all of them are stored or none.
    fn append(
        &self,
        lease: &mut Self::Lease,
        messages: &[Message],
    ) -> impl Future<Output = Result<(), SessionError>> + Send;

    /// Replaces the history from position `from` on (the first `from` stored
    /// messages stay) with `messages` (skipping `system` ones), atomically: after a
    /// crash the old history is stored or the new one. `from` is at most the number
    /// of stored messages; at that number it is an append. What `SessionLog` does
    /// with a [`Changes::Rewritten`](crate::env::Changes::Rewritten): an edit of the
    /// last message rewrites one message, so its cost is the tail's, not the
    /// session's.
    fn rewrite(
        &self,
        lease: &mut Self::Lease,
        from: usize,
        messages: &[Message],
    ) -> impl Future<Output = Result<(), SessionError>> + Send;

    /// Replaces the whole history with `messages` (skipping `system` ones),
    /// atomically: [`rewrite`](Self::rewrite) from position 0.
    fn replace(
        &self,
        lease: &mut Self::Lease,
        messages: &[Message],
    ) -> impl Future<Output = Result<(), SessionError>> + Send {
        self.rewrite(lease, 0, messages)
    }

    /// Gives the lease back.
    fn release(&self, lease: Self::Lease) -> impl Future<Output = Result<(), SessionError>> + Send;

    /// The messages of session `id` without taking its lease (to inspect or copy it).
    fn load(&self, id: &str) -> impl Future<Output = Result<Vec<Message>, SessionError>> + Send;

    /// The ids of the stored sessions, sorted.
    fn list(&self) -> impl Future<Output = Result<Vec<String>, SessionError>> + Send;

    /// Deletes session `id` (nothing happens for an unknown one). Fails with
    /// [`SessionError::Locked`] or [`SessionError::Leased`] while a turn holds it.
    fn delete(&self, id: &str) -> impl Future<Output = Result<(), SessionError>> + Send;

    /// The size of session `id` (an unknown session is empty): see [`SessionSize`] for
    /// what each store counts. The default loads it.
    fn size(&self, id: &str) -> impl Future<Output = Result<SessionSize, SessionError>> + Send {
        async move { Ok(SessionSize::of(&self.load(id).await?)) }
    }

    /// Every stored session with its size and last write, sorted by id. The default
    /// loads each (and knows no times); brute's stores read their sizes without
    /// loading a message.
    fn sessions(&self) -> impl Future<Output = Result<Vec<SessionInfo>, SessionError>> + Send {
        async move {
            let mut sessions = Vec::new();
            for id in self.list().await? {
                let size = self.size(&id).await?;
                let updated = None;
                sessions.push(SessionInfo { id, size, updated });
            }
            Ok(sessions)
        }
    }

    /// The size of the whole store. The default sums [`sessions`](Self::sessions).
    fn store_size(&self) -> impl Future<Output = Result<StoreSize, SessionError>> + Send {
        async move { Ok(StoreSize::of(&self.sessions().await?)) }
    }

    /// Deletes the sessions `policy` names (too old, or beyond a count, oldest
    /// first), never one a turn holds: those are
    /// [`skipped`](RetentionReport::skipped). Built on [`sessions`](Self::sessions)
    /// and [`delete`](Self::delete). A session written between the listing and its
    /// deletion is judged by its time at the listing.
    fn retain(
        &self,
        policy: &Retention,
    ) -> impl Future<Output = Result<RetentionReport, SessionError>> + Send {
        async move {
            let sessions = self.sessions().await?;
            let mut report = RetentionReport::default();
            for id in policy.victims(&sessions) {
                match self.delete(&id).await {
                    Ok(()) => report.deleted.push(id),
                    Err(SessionError::Locked { .. } | SessionError::Leased { .. }) => {
                        report.skipped.push(id);
                    }
                    Err(error) => return Err(error),
                }
            }
            report.kept = sessions.len() - report.deleted.len();
            Ok(report)
        }
    }

    /// Prunes the oldest history of session `id` so that at most `keep` messages
    /// remain, cut before a user message (so no tool call is split from its result;
    /// the last exchange always stays): what compaction does to the model's context,
    /// done to the stored history. Takes the lease (fails with
    /// [`SessionError::Locked`] or [`SessionError::Leased`] while a turn holds it),
    /// hands the messages that go to `archive` first (an error there removes
    /// nothing: [`RetentionError::Archive`]), then rewrites the session atomically.
    /// Returns how many messages went.
    fn prune<'a>(
        &'a self,
        id: &'a str,
        keep: usize,
        archive: &'a Archive<'a>,
    ) -> impl Future<Output = Result<usize, SessionError>> + Send + 'a {
        async move {
            let (mut lease, messages) = self.open(id).await?;
            let cut = retention::prune_point(&messages, keep);
            let pruned = match cut {
                0 => Ok(()),
                _ => match archive(id, &messages[..cut]) {
                    Ok(()) => self.rewrite(&mut lease, 0, &messages[cut..]).await,
                    Err(source) => Err(SessionError::Retention(RetentionError::Archive {
                        session: id.to_string(),
                        messages: cut,
                        source,
                    })),
                },
            };
            let released = self.release(lease).await;
            pruned?;
            released.map(|()| cut)
        }
    }

    /// Copies the first `at` messages of session `from` into the new session `to`
    /// (without taking `from`'s lease: a turn may run on it meanwhile) and returns
    /// how many were copied. Refuses a point that splits a tool call from its
    /// result ([`ForkError::SplitsToolCall`](super::ForkError::SplitsToolCall), naming the position and the call id),
    /// one past the end, and a `to` that holds messages.
    fn fork(
        &self,
        from: &str,
        at: usize,
        to: &str,
    ) -> impl Future<Output = Result<usize, SessionError>> + Send {
        async move {
            if from == to {
                let session = from.to_string();
                return Err(SessionError::Fork(ForkError::SameSession { session }));
            }
            let messages = self.load(from).await?;
            fork::check_point(from, &messages, at).map_err(SessionError::Fork)?;
            let (mut lease, existing) = self.open(to).await?;
            let written = match existing.len() {
                0 => self.append(&mut lease, &messages[..at]).await,
                len => Err(SessionError::Fork(ForkError::TargetExists {
                    from: from.to_string(),
                    to: to.to_string(),
                    len,
                })),
            };
            let released = self.release(lease).await;
            written?;
            released.map(|()| at)
        }
    }

    /// Cuts session `id` back to its first `to` messages, under its lease (fails
    /// with [`SessionError::Locked`] or [`SessionError::Leased`] while a turn holds
    /// it), atomically, and returns the messages removed. Refuses a point that splits
    /// a tool call from its result ([`ForkError::SplitsToolCall`](super::ForkError::SplitsToolCall)) or is past the end.
    fn rewind(
        &self,
        id: &str,
        to: usize,
    ) -> impl Future<Output = Result<Vec<Message>, SessionError>> + Send {
        async move {
            let (mut lease, mut messages) = self.open(id).await?;
            let cut = match fork::check_point(id, &messages, to) {
                Ok(()) => self.rewrite(&mut lease, to, &[]).await,
                Err(refused) => Err(SessionError::Fork(refused)),
            };
            let released = self.release(lease).await;
            cut?;
            released.map(|()| messages.split_off(to))
        }
    }

    /// Ends the lease of a turn that was dropped half-way (its future cancelled, a
    /// streamed turn whose stream was dropped), from synchronous code: applies
    /// `ending` (see [`Abandoned`]) and gives the lease back, so that the session is a
    /// valid history and free for the next turn at once. Nothing can be awaited here:
    /// a store does it before it returns (a file write), queues it ahead of any later
    /// request (a writer thread), or spawns it.
    ///
    /// The default drops both: the next load repairs calls without a result (as after
    /// a crash), an unanswered prompt stays, and a lease that is not freed by being
    /// dropped expires.
    fn abandon(&self, lease: Self::Lease, ending: Abandoned) {
        drop((lease, ending));
    }

    /// The session's running total of tokens and money (every model call its turns
    /// made), as `lease` holds it: what the store held when the lease was taken, or
    /// what [`set_spend`](Self::set_spend) set since. It survives compaction and
    /// restarts: it is kept apart from the messages. The default keeps none (zero).
    fn spend(&self, lease: &Self::Lease) -> Spend {
        let _ = lease;
        Spend::default()
    }

    /// Sets the session's running total to `spend`: stored with the next
    /// [`append`](Self::append) or [`rewrite`](Self::rewrite) through `lease` (in the
    /// same transaction in SQLite and PostgreSQL; right after the messages in the
    /// JSONL store), or at [`release`](Self::release). `SessionLog` sets it before the
    /// messages of each model call are saved. The default keeps nothing.
    fn set_spend(&self, lease: &mut Self::Lease, spend: Spend) {
        let _ = (lease, spend);
    }

    /// The stored running total of session `id`, without taking its lease (zero for
    /// an unknown session, and in a store that keeps none).
    fn load_spend(&self, id: &str) -> impl Future<Output = Result<Spend, SessionError>> + Send {
        let _ = id;
        async { Ok(Spend::default()) }
    }
}

/// What a turn dropped half-way leaves to do: [`SessionStore::abandon`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Abandoned {
    /// Nothing: the session is whole.
    Nothing,
    /// Append these messages: the results of the calls the turn left without one.
    Append(Vec<Message>),
    /// Remove the last `n` messages stored: the turn's prompt, which nothing answered
    /// (as for a failed turn, see `SessionLog`).
    RemoveLast(usize),
}
