//! `GET` and `DELETE /v1/sessions/{id}`.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use brute::session::SessionStore;
use brute::stream::pending_approvals;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::state::Shared;

/// `GET /v1/sessions/{id}`: the stored history, `{"id", "messages": [..],
/// "pending_approvals": [..]}` (messages in `brute::Message`'s serde form, the tool
/// calls that wait for a decision); 404 for a session with no messages.
pub(crate) async fn get(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    crate::session_id::check(&id).map_err(ApiError::invalid)?;
    let load = shared.sessions.load(&id);
    let messages = tokio::time::timeout(shared.timeout, load)
        .await
        .map_err(|_| ApiError::timeout("loading the session", shared.timeout))?
        .map_err(|e| ApiError::store(&id, &e))?;
    if messages.is_empty() {
        return Err(ApiError::not_found(format!("no session `{id}`")));
    }
    let pending = pending_approvals(&messages);
    Ok(Json(
        json!({ "id": id, "messages": messages, "pending_approvals": pending }),
    ))
}

/// `DELETE /v1/sessions/{id}`: 204; 409 while a turn runs on it.
pub(crate) async fn delete(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    crate::session_id::check(&id).map_err(ApiError::invalid)?;
    let delete = shared.sessions.delete(&id);
    tokio::time::timeout(shared.timeout, delete)
        .await
        .map_err(|_| ApiError::timeout("deleting the session", shared.timeout))?
        .map_err(|e| ApiError::store(&id, &e))?;
    Ok(StatusCode::NO_CONTENT)
}
