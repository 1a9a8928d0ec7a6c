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
        Ok(Err(e)) => Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "not_ready",
            format!("the session store fails: {e}"),
        )),
        Err(_) => Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "not_ready",
            "the session store did not answer within 5 s",
        )),
    }
}

/// `GET /v1/agents`: the agents this server hosts, the default first.
pub(crate) async fn agents(State(shared): State<Arc<Shared>>) -> Json<Value> {
    let mut names = vec![shared.default_agent.clone()];
    names.extend(
        shared
            .agents
            .keys()
            .filter(|n| **n != shared.default_agent)
            .cloned(),
    );
    Json(json!({ "agents": names }))
}
