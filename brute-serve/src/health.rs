//! Health and readiness, and the list of agents.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use brute::session::SessionStore;
use serde::Serialize;

use crate::error::ApiError;
use crate::state::Shared;

/// The answer of a health check.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct Health {
    /// `ok` (`/healthz`) or `ready` (`/readyz`).
    #[schema(value_type = String, pattern = "^(ok|ready)$")]
    status: &'static str,
}

/// The agents of the server.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct Agents<'a> {
    /// Their names, the default first.
    agents: Vec<&'a str>,
}

/// `GET /healthz`: the process answers.
#[utoipa::path(
    get,
    path = "/healthz",
    operation_id = "healthz",
    tag = "server",
    responses((status = 200, description = "The process answers", body = Health)),
)]
pub(crate) async fn live() -> Json<Health> {
    Json(Health { status: "ok" })
}

/// `GET /readyz`: the session store answers (a load of a session that need not
/// exist), so a load balancer sends requests only to servers that can serve them.
#[utoipa::path(
    get,
    path = "/readyz",
    operation_id = "readyz",
    tag = "server",
    responses(
        (status = 200, description = "The session store answers", body = Health),
        (status = 503, description = "The session store fails or does not answer", body = crate::error::ErrorBody<'_>),
    ),
)]
pub(crate) async fn ready(State(shared): State<Arc<Shared>>) -> Result<Json<Health>, ApiError> {
    let probe = shared.sessions.load("brute-serve-readiness-probe");
    match tokio::time::timeout(std::time::Duration::from_secs(5), probe).await {
        Ok(Ok(_)) => Ok(Json(Health { status: "ready" })),
        Ok(Err(e)) => {
            // The store's message (a path, a database's) goes to the log only.
            tracing::warn!("brute-serve: not ready: the session store fails: {e}");
            Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "not_ready",
                "the session store fails (the server's log has the details)",
            ))
        }
        Err(_) => Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "not_ready",
            "the session store did not answer within 5 s",
        )),
    }
}

/// `GET /v1/agents`: the agents this server hosts, the default first.
#[utoipa::path(
    get,
    path = "/v1/agents",
    operation_id = "list_agents",
    tag = "agents",
    security(("bearer" = [])),
    responses((status = 200, description = "The agents, the default first", body = Agents<'_>)),
)]
pub(crate) async fn agents(State(shared): State<Arc<Shared>>) -> axum::response::Response {
    axum::response::IntoResponse::into_response(Json(Agents {
        agents: shared.names(),
    }))
}
