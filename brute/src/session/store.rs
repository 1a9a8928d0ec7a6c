//! `SessionStore`: where sessions live (a JSONL file per session, SQLite, PostgreSQL),
//! and [`Store`], the shared handle `SessionLog` persists through.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::error::SessionError;
use crate::cost::Spend;
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

    fn spend(&self, lease: &BoxLease) -> Spend {
        lease.0.spend()
    }

    fn set_spend(&self, lease: &mut BoxLease, spend: Spend) {
        lease.0.set_spend(spend);
    }

    async fn load_spend(&self, id: &str) -> Result<Spend, SessionError> {
        self.0.load_spend_dyn(id).await
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
    fn load_spend_dyn<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Spend>;
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
    fn spend(&self) -> Spend;
    fn set_spend(&mut self, spend: Spend);
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

    fn load_spend_dyn<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Spend> {
        Box::pin(self.0.load_spend(id))
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

    fn spend(&self) -> Spend {
        self.store.spend(&self.lease)
    }

    fn set_spend(&mut self, spend: Spend) {
        self.store.set_spend(&mut self.lease, spend);
    }
}
