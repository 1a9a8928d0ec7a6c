//! The session store as the server uses it beyond its agents' `SessionLog`: deleting
//! the session of a request that needs none after it, and the store of a server that
//! has none ([`NoStore`]).

use std::time::Duration;

use brute::Message;
use brute::session::{BoxStore, SessionError, SessionStore};

use crate::chat_tap::Tap;

/// Deletes a session the server made for one request (a chat completion, whose
/// conversation lives in the client): with [`Forget::now`] once the turn has ended,
/// or, if the request is dropped before that, on a task of its own. A turn that ended
/// having kept no session (no `SessionLog`) is followed by no store traffic. A session whose
/// turn paused on a call of the agent's own that waits for approval ([`Tap::asked`])
/// is kept for the decision and deleted `expiry` later instead.
pub(crate) struct Forget {
    sessions: BoxStore,
    id: Option<String>,
    tap: Tap,
    expiry: Duration,
}

impl Forget {
    /// A guard deleting session `id` (after `expiry` when `tap` says a call waits for
    /// approval).
    pub(crate) fn new(sessions: BoxStore, id: String, tap: Tap, expiry: Duration) -> Forget {
        Forget {
            sessions,
            id: Some(id),
            tap,
            expiry,
        }
    }

    /// Deletes the session now, or schedules its deletion when a call waits for
    /// approval; does nothing when the turn kept no session.
    pub(crate) async fn now(mut self) {
        let Some(id) = self.id.take() else { return };
        if !self.tap.persisted() {
            return;
        }
        if self.tap.asked() {
            self.later(id);
        } else {
            delete(&self.sessions, &id).await;
        }
    }

    /// Deletes session `id` once the approval has had `expiry` to come.
    fn later(&self, id: String) {
        let (sessions, expiry) = (self.sessions.clone(), self.expiry);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                tokio::time::sleep(expiry).await;
                delete(&sessions, &id).await;
            });
        }
    }
}

impl Drop for Forget {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        // A request dropped mid-turn may have left a session before its first model
        // call said so: deleted whatever the flag says.
        if self.tap.asked() {
            return self.later(id);
        }
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

/// The store of a server built without one ([`Server::without_store`](crate::Server::without_store)):
/// it holds no session (every load is empty, every delete has nothing to do) and does
/// no I/O. Its agents keep no session either: a lease is refused.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct NoStore;

impl NoStore {
    fn refused(action: &'static str) -> SessionError {
        SessionError::Io {
            path: "".into(),
            action,
            source: std::io::Error::other("this server was built without a session store"),
        }
    }
}

impl SessionStore for NoStore {
    type Lease = ();

    async fn open(&self, _id: &str) -> Result<((), Vec<Message>), SessionError> {
        Err(NoStore::refused("open a session"))
    }

    async fn append(&self, _lease: &mut (), _messages: &[Message]) -> Result<(), SessionError> {
        Err(NoStore::refused("append to a session"))
    }

    async fn rewrite(
        &self,
        _lease: &mut (),
        _from: usize,
        _messages: &[Message],
    ) -> Result<(), SessionError> {
        Err(NoStore::refused("rewrite a session"))
    }

    async fn release(&self, _lease: ()) -> Result<(), SessionError> {
        Ok(())
    }

    async fn load(&self, _id: &str) -> Result<Vec<Message>, SessionError> {
        Ok(Vec::new())
    }

    async fn list(&self) -> Result<Vec<String>, SessionError> {
        Ok(Vec::new())
    }

    async fn delete(&self, _id: &str) -> Result<(), SessionError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use brute::Message;
    use brute::session::{BoxStore, SessionError, SessionStore};
    use tokio::sync::mpsc;

    use super::Forget;
    use crate::chat_tap::Tap;

    /// A store that reports each deletion and holds nothing.
    struct Deletions(mpsc::UnboundedSender<String>);

    impl SessionStore for Deletions {
        type Lease = ();
        async fn open(&self, _: &str) -> Result<((), Vec<Message>), SessionError> {
            Ok(((), Vec::new()))
        }
        async fn append(&self, _: &mut (), _: &[Message]) -> Result<(), SessionError> {
            Ok(())
        }
        async fn rewrite(&self, _: &mut (), _: usize, _: &[Message]) -> Result<(), SessionError> {
            Ok(())
        }
        async fn release(&self, _: ()) -> Result<(), SessionError> {
            Ok(())
        }
        async fn load(&self, _: &str) -> Result<Vec<Message>, SessionError> {
            Ok(Vec::new())
        }
        async fn list(&self) -> Result<Vec<String>, SessionError> {
            Ok(Vec::new())
        }
        async fn delete(&self, id: &str) -> Result<(), SessionError> {
            let _ = self.0.send(id.to_owned());
            Ok(())
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_session_paused_for_approval_is_deleted_when_it_expires_not_before() {
        let (tx, mut deleted) = mpsc::unbounded_channel();
        let store = BoxStore::from_arc(Arc::new(Deletions(tx)));
        let expiry = Duration::from_secs(3600);
        Forget::new(
            store.clone(),
            "asked".into(),
            Tap::marked(true, true),
            expiry,
        )
        .now()
        .await;
        Forget::new(
            store.clone(),
            "done".into(),
            Tap::marked(true, false),
            expiry,
        )
        .now()
        .await;
        Forget::new(store, "none".into(), Tap::marked(false, false), expiry)
            .now()
            .await;
        // The finished turn's session went at once; the paused one waits for its
        // expiry (the clock is paused and moved by hand).
        assert_eq!(deleted.try_recv().as_deref(), Ok("done"));
        tokio::time::advance(expiry - Duration::from_secs(1)).await;
        tokio::task::yield_now().await;
        assert!(deleted.try_recv().is_err(), "deleted before its expiry");
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(deleted.recv().await.as_deref(), Some("asked"));
        // A turn that kept no session deleted nothing.
        assert!(deleted.try_recv().is_err());
    }
}
