//! A2A v1.0 (agent-to-agent protocol) for the server's agents: each agent's card and
//! its JSON-RPC binding. A2A tasks are turns of brute sessions (see [`tasks`]); a tool
//! call that waits for approval is the task's `INPUT_REQUIRED` state, and the next
//! message on the task decides it. [`client`] is the other side: a tool that calls any
//! A2A server.
//!
//! | route | what |
//! |---|---|
//! | `GET /.well-known/agent-card.json` | the default agent's card (no auth: discovery) |
//! | `GET /a2a/{agent}/.well-known/agent-card.json` | the card of `agent` |
//! | `POST /a2a`, `POST /a2a/{agent}` | JSON-RPC 2.0: `SendMessage`, `SendStreamingMessage`, `GetTask`, `CancelTask` (behind the server's auth) |
//! | `/a2a-rest/…`, `/a2a-rest/{agent}/…` | the same as HTTP+JSON: `POST message:send`, `POST message:stream`, `GET tasks/{id}`, `POST tasks/{id}:cancel` |

mod card;
pub(crate) mod client;
mod error;
mod events;
pub(crate) mod jsonrpc;
pub(crate) mod rest;
mod run;
mod shared;
mod tasks;
pub(crate) mod wire;

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::auth::Auth;
use crate::state::Shared;
use shared::A2a;

/// The A2A routes: `rpc` for the authenticated API, `cards` for the open routes.
pub(crate) struct Routes<S> {
    /// The JSON-RPC endpoints.
    pub(crate) rpc: Router<S>,
    /// The agent cards.
    pub(crate) cards: Router<S>,
}

/// The A2A routes of the server's agents; `auth` decides what the cards announce.
pub(crate) fn routes<S: Clone + Send + Sync + 'static>(
    shared: &Arc<Shared>,
    auth: &Auth,
) -> Routes<S> {
    let a2a = Arc::new(A2a {
        shared: shared.clone(),
        registry: Arc::default(),
        bearer: matches!(auth, Auth::Bearer(_)),
    });
    Routes {
        rpc: Router::new()
            .route("/a2a", post(jsonrpc::default_agent))
            .route("/a2a/{agent}", post(jsonrpc::named_agent))
            .route("/a2a-rest/message:send", post(rest::message_send))
            .route("/a2a-rest/message:stream", post(rest::message_stream))
            .route(
                "/a2a-rest/{agent}/message:send",
                post(rest::agent_message_send),
            )
            .route(
                "/a2a-rest/{agent}/message:stream",
                post(rest::agent_message_stream),
            )
            .merge(
                Router::new()
                    .route(
                        "/a2a-rest/tasks/{id}",
                        get(rest::get_task).post(rest::post_task),
                    )
                    .route(
                        "/a2a-rest/{agent}/tasks/{id}",
                        get(rest::agent_get_task).post(rest::agent_post_task),
                    )
                    .route_layer(axum::middleware::from_fn(rest::task_allow)),
            )
            .with_state(a2a.clone()),
        cards: Router::new()
            .route("/.well-known/agent-card.json", get(default_card))
            .route("/a2a/{agent}/.well-known/agent-card.json", get(named_card))
            .with_state(a2a),
    }
}

/// `GET /.well-known/agent-card.json`: the default agent's card (public: discovery).
#[utoipa::path(
    get,
    path = "/.well-known/agent-card.json",
    operation_id = "a2a_card",
    tag = "a2a",
    responses((status = 200, description = "The default agent's A2A card", body = crate::schema::AgentCard)),
)]
pub(crate) async fn default_card(State(a2a): State<Arc<A2a>>, headers: HeaderMap) -> Response {
    let name = a2a.shared.default_agent.clone();
    let base = card::base(&headers);
    Json(card::card(&name, &base, "", a2a.bearer)).into_response()
}

/// `GET /a2a/{agent}/.well-known/agent-card.json`: the card of `agent`.
#[utoipa::path(
    get,
    path = "/a2a/{agent}/.well-known/agent-card.json",
    operation_id = "a2a_agent_card",
    tag = "a2a",
    params(("agent" = String, Path, description = "The agent")),
    responses(
        (status = 200, description = "The agent's A2A card", body = crate::schema::AgentCard),
        (status = 404, description = "No agent of that name", body = crate::error::ErrorBody<'_>),
    ),
)]
pub(crate) async fn named_card(
    State(a2a): State<Arc<A2a>>,
    Path(agent): Path<String>,
    headers: HeaderMap,
) -> Response {
    match a2a.shared.agent(Some(&agent)) {
        Ok(_) => {
            let base = card::base(&headers);
            let path = format!("/{agent}");
            Json(card::card(&agent, &base, &path, a2a.bearer)).into_response()
        }
        Err(error) => error.into_response(),
    }
}
