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

/// Deletes a session the server made for one request (a chat completion, whose
/// conversation lives in the client): with [`Forget::now`] once the turn has ended,
/// or, if the request is dropped before that, on a task of its own.
pub(crate) struct Forget {
    sessions: Arc<dyn Sessions>,
    id: Option<String>,
}

impl Forget {
    /// A guard deleting session `id`.
    pub(crate) fn new(sessions: Arc<dyn Sessions>, id: String) -> Forget {
        Forget {
            sessions,
            id: Some(id),
        }
    }

    /// Deletes the session now.
    pub(crate) async fn now(mut self) {
        if let Some(id) = self.id.take() {
            delete(&*self.sessions, &id).await;
        }
    }
}

impl Drop for Forget {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let sessions = self.sessions.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { delete(&*sessions, &id).await });
        }
    }
}

async fn delete(sessions: &dyn Sessions, id: &str) {
    if let Err(e) = sessions.delete(id).await {
        tracing::warn!(session = %id, "brute-serve: cannot delete the session of a chat completion: {e}");
    }
}
