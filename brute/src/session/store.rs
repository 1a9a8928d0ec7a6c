//! `SessionStore`: where sessions live (a JSONL file per session, SQLite, PostgreSQL),
//! and [`Store`], the shared handle `SessionLog` persists through.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::error::SessionError;
use super::fork::{self, ForkError};
use super::history_error::RetentionError;
use super::retention::{
    self, Archive, Retention, RetentionReport, SessionInfo, SessionSize, StoreSize,
};
use crate::message::Message;

/// A boxed future of the session stores.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, SessionError>> + Send + 'a>>;

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
/// `SessionLog` as a [`Store`].
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

    /// The size of session `id` (an unknown session is empty): see
    /// [`retention`](super::retention) for what each store counts. The default loads
    /// it.
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
    /// nothing: [`RetentionError::Archive`](super::retention::RetentionError::Archive)), then rewrites the session atomically.
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
}

/// A session store shared by the turns of an agent: what `SessionLog`'s `store`
/// option takes. Build it from any [`SessionStore`] (`store.into()`, or
/// [`Store::new`]); [`Store::default`] is the JSONL file store of `SessionLog`'s `path`.
#[derive(Clone, Default)]
pub struct Store(pub(crate) Option<BoxStore>);

impl Store {
    /// A shared handle on `store`.
    pub fn new<S: SessionStore>(store: S) -> Store {
        Store::from_arc(Arc::new(store))
    }

    /// A shared handle on a store you keep a handle on too (to list or copy sessions).
    pub fn from_arc<S: SessionStore>(store: Arc<S>) -> Store {
        Store(Some(BoxStore::from_arc(store)))
    }
}

impl<S: SessionStore> From<S> for Store {
    fn from(store: S) -> Store {
        Store::new(store)
    }
}

impl<S: SessionStore> From<Arc<S>> for Store {
    fn from(store: Arc<S>) -> Store {
        Store::from_arc(store)
    }
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            None => f.write_str("Store(files at SessionLog's path)"),
            Some(_) => f.write_str("Store(..)"),
        }
    }
}

/// Any [`SessionStore`] behind one shared pointer, itself a `SessionStore`: the type
/// to hold when the store is chosen at run time (a server that takes whichever store
/// its agents use, a configuration that picks JSONL, SQLite or PostgreSQL). Cloning
/// it shares the store. Boxing a `BoxStore` again keeps the one pointer.
///
/// ```
/// use brute::session::{BoxStore, JsonlStore, SessionStore};
/// use brute::Message;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// # let dir = std::env::temp_dir().join(format!("brute-doc-box-{}", std::process::id()));
/// let store = BoxStore::new(JsonlStore::new(&dir));
/// let (mut lease, _) = store.open("alice").await?;
/// store.append(&mut lease, &[Message::user("hi")]).await?;
/// store.release(lease).await?;
/// assert_eq!(store.list().await?, ["alice"]);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), brute::session::SessionError>(()) }).unwrap();
/// ```
#[derive(Clone)]
pub struct BoxStore(Arc<dyn DynStore>);

impl BoxStore {
    /// `store` behind a pointer.
    pub fn new<S: SessionStore>(store: S) -> BoxStore {
        BoxStore::from_arc(Arc::new(store))
    }

    /// A store you keep a handle on too, behind a pointer.
    pub fn from_arc<S: SessionStore>(store: Arc<S>) -> BoxStore {
        if let Some(boxed) = (&store as &dyn Any).downcast_ref::<Arc<BoxStore>>() {
            return BoxStore::clone(boxed);
        }
        BoxStore(Arc::new(Erased(store)))
    }
}

impl fmt::Debug for BoxStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BoxStore(..)")
    }
}

/// The lease of a [`BoxStore`]: the lease of the store inside, with that store.
pub struct BoxLease(Box<dyn DynLease>);

impl fmt::Debug for BoxLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BoxLease(..)")
    }
}

impl SessionStore for BoxStore {
    type Lease = BoxLease;

    async fn open(&self, id: &str) -> Result<(BoxLease, Vec<Message>), SessionError> {
        let (lease, messages) = self.0.open_dyn(id).await?;
        Ok((BoxLease(lease), messages))
    }

    async fn append(&self, lease: &mut BoxLease, messages: &[Message]) -> Result<(), SessionError> {
        lease.0.append(messages).await
    }

    async fn rewrite(
        &self,
        lease: &mut BoxLease,
        from: usize,
        messages: &[Message],
    ) -> Result<(), SessionError> {
        lease.0.rewrite(from, messages).await
    }

    async fn release(&self, lease: BoxLease) -> Result<(), SessionError> {
        lease.0.release().await
    }

    async fn load(&self, id: &str) -> Result<Vec<Message>, SessionError> {
        self.0.load_dyn(id).await
    }

    async fn list(&self) -> Result<Vec<String>, SessionError> {
        self.0.list_dyn().await
    }

    async fn delete(&self, id: &str) -> Result<(), SessionError> {
        self.0.delete_dyn(id).await
    }

    fn abandon(&self, lease: BoxLease, ending: Abandoned) {
        lease.0.abandon(ending);
    }

    async fn size(&self, id: &str) -> Result<SessionSize, SessionError> {
        self.0.size_dyn(id).await
    }

    async fn sessions(&self) -> Result<Vec<SessionInfo>, SessionError> {
        self.0.sessions_dyn().await
    }

    async fn store_size(&self) -> Result<StoreSize, SessionError> {
        self.0.store_size_dyn().await
    }

    async fn retain(&self, policy: &Retention) -> Result<RetentionReport, SessionError> {
        self.0.retain_dyn(policy).await
    }

    fn prune<'a>(
        &'a self,
        id: &'a str,
        keep: usize,
        archive: &'a Archive<'a>,
    ) -> impl Future<Output = Result<usize, SessionError>> + Send + 'a {
        self.0.prune_dyn(id, keep, archive)
    }

    async fn fork(&self, from: &str, at: usize, to: &str) -> Result<usize, SessionError> {
        self.0.fork_dyn(from, at, to).await
    }

    async fn rewind(&self, id: &str, to: usize) -> Result<Vec<Message>, SessionError> {
        self.0.rewind_dyn(id, to).await
    }
}

impl BoxStore {
    /// Takes the lease of `id` as `SessionLog` holds it.
    pub(crate) fn open_dyn<'a>(
        &'a self,
        id: &'a str,
    ) -> StoreFuture<'a, (Box<dyn DynLease>, Vec<Message>)> {
        self.0.open_dyn(id)
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

/// A store behind a pointer: the object-safe face of [`SessionStore`].
pub(crate) trait DynStore: Send + Sync {
    fn open_dyn<'a>(&'a self, id: &'a str) -> StoreFuture<'a, (Box<dyn DynLease>, Vec<Message>)>;
    fn load_dyn<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<Message>>;
    fn list_dyn(&self) -> StoreFuture<'_, Vec<String>>;
    fn delete_dyn<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()>;
    fn size_dyn<'a>(&'a self, id: &'a str) -> StoreFuture<'a, SessionSize>;
    fn sessions_dyn(&self) -> StoreFuture<'_, Vec<SessionInfo>>;
    fn store_size_dyn(&self) -> StoreFuture<'_, StoreSize>;
    fn retain_dyn<'a>(&'a self, policy: &'a Retention) -> StoreFuture<'a, RetentionReport>;
    fn prune_dyn<'a>(
        &'a self,
        id: &'a str,
        keep: usize,
        archive: &'a Archive<'a>,
    ) -> StoreFuture<'a, usize>;
    fn fork_dyn<'a>(&'a self, from: &'a str, at: usize, to: &'a str) -> StoreFuture<'a, usize>;
    fn rewind_dyn<'a>(&'a self, id: &'a str, to: usize) -> StoreFuture<'a, Vec<Message>>;
}

/// A lease behind a pointer, with its store.
pub(crate) trait DynLease: Send {
    fn append<'a>(&'a mut self, messages: &'a [Message]) -> StoreFuture<'a, ()>;
    fn rewrite<'a>(&'a mut self, from: usize, messages: &'a [Message]) -> StoreFuture<'a, ()>;
    fn replace<'a>(&'a mut self, messages: &'a [Message]) -> StoreFuture<'a, ()> {
        self.rewrite(0, messages)
    }
    fn release(self: Box<Self>) -> StoreFuture<'static, ()>;
    fn abandon(self: Box<Self>, ending: Abandoned);
}

struct Erased<S>(Arc<S>);

/// A lease with the store it came from.
pub(crate) struct Leased<S: SessionStore> {
    pub(crate) store: Arc<S>,
    pub(crate) lease: S::Lease,
}

impl<S: SessionStore> DynStore for Erased<S> {
    fn open_dyn<'a>(&'a self, id: &'a str) -> StoreFuture<'a, (Box<dyn DynLease>, Vec<Message>)> {
        Box::pin(async move {
            let (lease, messages) = self.0.open(id).await?;
            let leased: Box<dyn DynLease> = Box::new(Leased {
                store: self.0.clone(),
                lease,
            });
            Ok((leased, messages))
        })
    }

    fn load_dyn<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<Message>> {
        Box::pin(self.0.load(id))
    }

    fn list_dyn(&self) -> StoreFuture<'_, Vec<String>> {
        Box::pin(self.0.list())
    }

    fn delete_dyn<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(self.0.delete(id))
    }

    fn size_dyn<'a>(&'a self, id: &'a str) -> StoreFuture<'a, SessionSize> {
        Box::pin(self.0.size(id))
    }

    fn sessions_dyn(&self) -> StoreFuture<'_, Vec<SessionInfo>> {
        Box::pin(self.0.sessions())
    }

    fn store_size_dyn(&self) -> StoreFuture<'_, StoreSize> {
        Box::pin(self.0.store_size())
    }

    fn retain_dyn<'a>(&'a self, policy: &'a Retention) -> StoreFuture<'a, RetentionReport> {
        Box::pin(self.0.retain(policy))
    }

    fn prune_dyn<'a>(
        &'a self,
        id: &'a str,
        keep: usize,
        archive: &'a Archive<'a>,
    ) -> StoreFuture<'a, usize> {
        Box::pin(self.0.prune(id, keep, archive))
    }

    fn fork_dyn<'a>(&'a self, from: &'a str, at: usize, to: &'a str) -> StoreFuture<'a, usize> {
        Box::pin(self.0.fork(from, at, to))
    }

    fn rewind_dyn<'a>(&'a self, id: &'a str, to: usize) -> StoreFuture<'a, Vec<Message>> {
        Box::pin(self.0.rewind(id, to))
    }
}

impl<S: SessionStore> DynLease for Leased<S> {
    fn append<'a>(&'a mut self, messages: &'a [Message]) -> StoreFuture<'a, ()> {
        Box::pin(self.store.append(&mut self.lease, messages))
    }

    fn rewrite<'a>(&'a mut self, from: usize, messages: &'a [Message]) -> StoreFuture<'a, ()> {
        Box::pin(self.store.rewrite(&mut self.lease, from, messages))
    }

    fn release(self: Box<Self>) -> StoreFuture<'static, ()> {
        let Leased { store, lease } = *self;
        Box::pin(async move { store.release(lease).await })
    }

    fn abandon(self: Box<Self>, ending: Abandoned) {
        let Leased { store, lease } = *self;
        store.abandon(lease, ending);
    }
}
