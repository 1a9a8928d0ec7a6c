//! Health and readiness, and the list of agents.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use brute::session::SessionStore;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::state::Shared;

/// `GET /healthz`: the process answers.
pub(crate) async fn live() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// `GET /readyz`: the session store answers (a load of a session that need not
/// exist), so a load balancer sends requests only to servers that can serve them.
pub(crate) async fn ready(State(shared): State<Arc<Shared>>) -> Result<Json<Value>, ApiError> {
    let probe = shared.sessions.load("brute-serve-readiness-probe");
    match tokio::time::timeout(std::time::Duration::from_secs(5), probe).await {
        Ok(Ok(_)) => Ok(Json(json!({ "status": "ready" }))),
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
pub(crate) async fn agents(State(shared): State<Arc<Shared>>) -> Json<Value> {
    Json(json!({ "agents": shared.names() }))
}
