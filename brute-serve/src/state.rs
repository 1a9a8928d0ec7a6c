//! What every request handler shares: the store, the agents, the limits and the
//! running turns. Its own module, so that the server (which builds it) and the
//! handlers (which read it) both import it and never each other.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use brute::session::{BoxStore, SessionError, SessionStore};
use brute::{BoxAgent, Message};
use tokio_util::task::TaskTracker;

use crate::error::ApiError;

/// The archive of a server's prunes ([`Server::archive`](crate::Server::archive)).
pub(crate) type SharedArchive = Arc<brute::session::Archive<'static>>;

/// What every request handler shares: built once by
/// [`Server::router`](crate::Server::router).
pub(crate) struct Shared {
    /// The store of the agents' `SessionLog`, as the server reads it (histories,
    /// deletion).
    pub(crate) sessions: BoxStore,
    pub(crate) agents: BTreeMap<String, Arc<BoxAgent>>,
    pub(crate) default_agent: String,
    pub(crate) timeout: Duration,
    /// Whether the server has a store of its own (chat completions then delete the
    /// sessions their turns made).
    pub(crate) keeps_sessions: bool,
    /// How long a chat completion's session paused for approval is kept.
    pub(crate) approval_expiry: Duration,
    /// When the server was built, in seconds since the Unix epoch (the `created` of
    /// its models).
    pub(crate) created: u64,
    /// The running turns: shutdown waits for them.
    pub(crate) turns: TaskTracker,
    /// Where `POST /v1/admin/retention` hands what it prunes, if anywhere.
    pub(crate) archive: Option<SharedArchive>,
}

impl Shared {
    /// The agents' names, the default first.
    pub(crate) fn names(&self) -> Vec<&str> {
        let mut names = vec![self.default_agent.as_str()];
        names.extend(
            self.agents
                .keys()
                .map(String::as_str)
                .filter(|n| *n != self.default_agent),
        );
        names
    }

    /// Runs a store operation under the request timeout: one that does not answer in
    /// time is [`ApiError::timeout`] (504, naming `what`), a failure what `error` makes
    /// of it (most often [`ApiError::store`], whose own text goes to the log only).
    pub(crate) async fn timed<T>(
        &self,
        what: &str,
        work: impl Future<Output = Result<T, SessionError>>,
        error: impl FnOnce(&SessionError) -> ApiError,
    ) -> Result<T, ApiError> {
        tokio::time::timeout(self.timeout, work)
            .await
            .map_err(|_| ApiError::timeout(what, self.timeout))?
            .map_err(|e| error(&e))
    }

    /// The stored history of session `id`, read under the request timeout
    /// ([`Shared::timed`]): what every handler that looks at a session before its
    /// turn reads.
    pub(crate) async fn history(&self, id: &str) -> Result<Vec<Message>, ApiError> {
        let load = self.sessions.load(id);
        self.timed("loading the session", load, |e| ApiError::store(id, e))
            .await
    }

    /// The agent named `name`, or the first one registered.
    pub(crate) fn agent(&self, name: Option<&str>) -> Result<&Arc<BoxAgent>, ApiError> {
        let name = name.unwrap_or(&self.default_agent);
        self.agents.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.agents.keys().map(String::as_str).collect();
            ApiError::not_found(format!(
                "no agent `{name}` on this server (agents: {})",
                known.join(", ")
            ))
        })
    }
}
