//! The session store as the server reads it: the history of a session and its
//! deletion, behind a pointer (the agents write through their own `SessionLog`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use brute::Message;
use brute::session::{SessionError, SessionStore};

type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, SessionError>> + Send + 'a>>;

/// The server's handle on the store its agents' `SessionLog` uses.
pub(crate) trait Sessions: Send + Sync {
    /// The stored messages of session `id` (empty for an unknown one).
    fn load<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<Message>>;
    /// Deletes session `id`; fails while a turn holds it.
    fn delete<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()>;
}

pub(crate) struct Erased<S>(pub(crate) Arc<S>);

impl<S: SessionStore> Sessions for Erased<S> {
    fn load<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<Message>> {
        Box::pin(self.0.load(id))
    }

    fn delete<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(self.0.delete(id))
    }
}
