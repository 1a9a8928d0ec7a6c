//! The session store as the server uses it beyond its agents' `SessionLog`: deleting
//! the session of a request that needs none after it.

use brute::session::{BoxStore, SessionStore};

/// Deletes a session the server made for one request (a chat completion, whose
/// conversation lives in the client): with [`Forget::now`] once the turn has ended,
/// or, if the request is dropped before that, on a task of its own.
pub(crate) struct Forget {
    sessions: BoxStore,
    id: Option<String>,
}

impl Forget {
    /// A guard deleting session `id`.
    pub(crate) fn new(sessions: BoxStore, id: String) -> Forget {
        Forget {
            sessions,
            id: Some(id),
        }
    }

    /// Deletes the session now.
    pub(crate) async fn now(mut self) {
        if let Some(id) = self.id.take() {
            delete(&self.sessions, &id).await;
        }
    }
}

impl Drop for Forget {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let sessions = self.sessions.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { delete(&sessions, &id).await });
        }
    }
}

async fn delete(sessions: &BoxStore, id: &str) {
    if let Err(e) = sessions.delete(id).await {
        tracing::warn!(session = %id, "brute-serve: cannot delete the session of a chat completion: {e}");
    }
}
