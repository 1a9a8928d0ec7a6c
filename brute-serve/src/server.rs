//! [`Server`]: the agents, the store and the limits, turned into an axum router and
//! served with graceful shutdown.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use brute::session::{BoxStore, SessionStore};
use brute::{Agent, BoxAgent, Env, Handler};
use tokio::net::TcpListener;
use tokio_util::task::TaskTracker;

use crate::error::ServeError;
use crate::state::Shared;
use crate::{
    admin, approvals, auth, chat, chat_tap, fallback, health, live, models, sessions_api, turns,
    web,
};

/// Builds a server that hosts agents over HTTP; see the [crate docs](crate).
///
/// Every agent that keeps a conversation does so with `SessionLog { store }` on the
/// store given to [`Server::new`]: the server keeps no session state of its own, so
/// any number of servers on one store (PostgreSQL) serve the same sessions. Agents
/// that keep none need no store: [`Server::without_store`].
pub struct Server {
    sessions: BoxStore,
    agents: Vec<(String, Arc<BoxAgent>)>,
    auth: Option<auth::Auth>,
    body_limit: usize,
    timeout: Duration,
    drain: Duration,
    /// Whether the server was built with a store (false: `without_store`).
    keeps_sessions: bool,
    approval_expiry: Duration,
    archive: Option<crate::state::SharedArchive>,
}

impl Server {
    /// A server whose agents keep their sessions in `store`.
    pub fn new<S: SessionStore>(store: Arc<S>) -> Server {
        Server {
            sessions: BoxStore::from_arc(store),
            agents: Vec::new(),
            auth: None,
            body_limit: 1 << 20,
            timeout: Duration::from_secs(300),
            drain: Duration::from_secs(30),
            keeps_sessions: true,
            approval_expiry: Duration::from_secs(3600),
            archive: None,
        }
    }

    /// A server for agents that keep no session (no `SessionLog`): it has no store,
    /// so a chat completion touches none, `GET /v1/sessions/{id}` finds nothing and
    /// `/readyz` needs nothing. Turn requests still run, without a history.
    pub fn without_store() -> Server {
        let mut server = Server::new(Arc::new(crate::sessions::NoStore));
        server.keeps_sessions = false;
        server
    }

    /// How long the session of a chat completion that paused for approval is kept
    /// for the decision (`POST /v1/sessions/{id}/approvals/{call_id}`) before it is
    /// deleted (default an hour; the deletion is scheduled in this process, so a
    /// restart in between leaves the session in the store).
    pub fn approval_expiry(mut self, expiry: Duration) -> Server {
        self.approval_expiry = expiry;
        self
    }

    /// Hosts `agent` under `name` (the `agent` field of a turn, the `model` of a chat
    /// completion). The first agent registered is the default.
    pub fn agent<S: Handler<Env> + 'static>(
        mut self,
        name: impl Into<String>,
        agent: Agent<S>,
    ) -> Server {
        let mut agent = agent.boxed();
        live::attach(&mut agent);
        chat_tap::attach(&mut agent);
        self.agents.push((name.into(), Arc::new(agent)));
        self
    }

    /// Requires `Authorization: Bearer <token>` on every endpoint but the health
    /// checks, the web page, the agent cards and the OpenAPI description (call again
    /// to accept several tokens).
    pub fn bearer_token(mut self, token: impl Into<String>) -> Server {
        let mut tokens = match self.auth.take() {
            Some(auth::Auth::Bearer(tokens)) => tokens,
            _ => Vec::new(),
        };
        tokens.push(token.into());
        self.auth = Some(auth::Auth::Bearer(tokens));
        self
    }

    /// Serves without authentication: only for a server that a proxy in front of it
    /// authenticates, or one on loopback. A server with neither this nor a token
    /// refuses to start ([`ServeError::NoAuth`]).
    pub fn without_auth(mut self) -> Server {
        self.auth = Some(auth::Auth::Disabled);
        self
    }

    /// The largest request body accepted, in bytes (default 1 MiB); larger ones get 413.
    pub fn body_limit(mut self, bytes: usize) -> Server {
        self.body_limit = bytes;
        self
    }

    /// How long one request may run, a whole streamed turn included (default 5
    /// minutes). A turn past it is stopped and its stream ends with an error item; a
    /// request that was not streaming gets 504.
    pub fn timeout(mut self, timeout: Duration) -> Server {
        self.timeout = timeout;
        self
    }

    /// Where `POST /v1/admin/retention` hands the messages a prune removes, before
    /// they go (the session id, the messages oldest first; an error keeps them):
    /// the archive a `Compacted` event handler writes to. Without one, a prune
    /// needs `"discard": true`.
    pub fn archive(
        mut self,
        archive: impl Fn(&str, &[brute::Message]) -> Result<(), brute::BoxError> + Send + Sync + 'static,
    ) -> Server {
        self.archive = Some(Arc::new(archive));
        self
    }

    /// How long graceful shutdown waits for running turns to finish (default 30 s).
    pub fn drain(mut self, drain: Duration) -> Server {
        self.drain = drain;
        self
    }

    /// The router, with the running turns' tracker that shutdown waits on.
    fn build(self) -> Result<(Router, TaskTracker, Duration), ServeError> {
        let auth = self.auth.ok_or(ServeError::NoAuth)?;
        let default_agent = self
            .agents
            .first()
            .map(|(name, _)| name.clone())
            .ok_or(ServeError::NoAgent)?;
        let mut agents = BTreeMap::new();
        for (name, agent) in self.agents {
            if agents.insert(name.clone(), agent).is_some() {
                return Err(ServeError::DuplicateAgent(name));
            }
        }
        let turns = TaskTracker::new();
        let shared = Arc::new(Shared {
            sessions: self.sessions,
            agents,
            default_agent,
            timeout: self.timeout,
            keeps_sessions: self.keeps_sessions,
            approval_expiry: self.approval_expiry,
            created: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            turns: turns.clone(),
            archive: self.archive,
        });
        let a2a = crate::a2a::routes(&shared, &auth);
        let api = Router::new()
            .merge(a2a.rpc)
            .merge(crate::agui::routes())
            .route("/v1/sessions/{id}/turns", post(turns::post))
            .route(
                "/v1/sessions/{id}/approvals/{call_id}",
                post(approvals::post),
            )
            .route(
                "/v1/sessions/{id}",
                get(sessions_api::get).delete(sessions_api::delete),
            )
            .route("/v1/sessions/{id}/fork", post(admin::fork))
            .route("/v1/sessions/{id}/rewind", post(admin::rewind))
            .route("/v1/admin/store", get(admin::store))
            .route("/v1/admin/retention", post(admin::retention))
            .route("/v1/chat/completions", post(chat::post))
            .route("/v1/agents", get(health::agents))
            .route("/v1/models", get(models::list))
            .route("/v1/models/{*id}", get(models::get))
            .layer(axum::middleware::from_fn_with_state(
                Arc::new(auth),
                auth::check,
            ));
        let open = Router::new()
            .route("/", get(web::page))
            .route("/healthz", get(health::live))
            .route("/readyz", get(health::ready))
            .route("/openapi.json", crate::openapi::handler())
            .merge(a2a.cards);
        let router = api
            .merge(open)
            .layer(axum::middleware::from_fn(fallback::json_errors))
            .layer(DefaultBodyLimit::max(self.body_limit))
            .with_state(shared);
        Ok((router, turns, self.drain))
    }

    /// The axum router of the server, to nest in an application of your own. Turns
    /// started through it run on their own tasks; use [`Server::serve`] to have
    /// shutdown wait for them.
    pub fn router(self) -> Result<Router, ServeError> {
        self.build().map(|(router, _, _)| router)
    }

    /// Serves on `listener` until `shutdown` completes, then stops accepting
    /// requests, lets the running turns finish (up to the `drain` time; a turn
    /// stopped there keeps everything it stored, as after a crash) and returns.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        let (router, turns, drain) = self.build()?;
        // Each SSE event is a small write: without TCP_NODELAY, Nagle's algorithm
        // holds it until the client's delayed ACK (tens of milliseconds per event).
        let listener = listener.tap_io(|tcp| {
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::debug!("brute-serve: cannot set TCP_NODELAY: {e}");
            }
        });
        axum::serve(listener, router)
            .with_graceful_shutdown(shutdown)
            .await?;
        turns.close();
        if tokio::time::timeout(drain, turns.wait()).await.is_err() {
            tracing::warn!(
                running = turns.len(),
                "brute-serve: turns still running after the drain time; stopping them"
            );
        }
        Ok(())
    }
}
