//! [`Store`], the shared handle `SessionLog` persists through, and [`BoxStore`], any
//! [`SessionStore`] behind one pointer (the store chosen at run time): each method of
//! the trait forwarded through an object-safe twin (`DynStore`, `DynLease`).

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use crate::cost::Spend;
use crate::message::Message;
use crate::session::admin::retention::{
    Archive, Retention, RetentionReport, SessionInfo, SessionSize, StoreSize,
};
use crate::session::error::SessionError;
use crate::session::store::{Abandoned, SessionStore, StoreFuture};

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

#[cfg(test)]
#[path = "boxed_tests.rs"]
mod tests;
