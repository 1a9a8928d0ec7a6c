//! `GET` and `DELETE /v1/sessions/{id}`.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use brute::session::SessionStore;
use brute::stream::pending_approvals;
use brute::{Message, ToolCall};
use serde::Serialize;

use crate::error::ApiError;
use crate::state::Shared;

/// A stored session as `GET /v1/sessions/{id}` shows it.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct SessionView<'a> {
    /// The session id.
    id: &'a str,
    /// The history, in `brute::Message`'s serde form.
    #[schema(value_type = Vec<crate::schema::MessageSchema>)]
    messages: &'a [Message],
    /// The tool calls that wait for a decision.
    #[schema(value_type = Vec<crate::schema::ToolCallSchema>)]
    pending_approvals: Vec<&'a ToolCall>,
}

/// `GET /v1/sessions/{id}`: the stored history, `{"id", "messages": [..],
/// "pending_approvals": [..]}` (messages in `brute::Message`'s serde form, the tool
/// calls that wait for a decision); 404 for a session with no messages.
#[utoipa::path(
    get,
    path = "/v1/sessions/{id}",
    operation_id = "get_session",
    tag = "sessions",
    params(crate::session_id::SessionPath),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The stored history and the calls that wait for approval", body = SessionView<'_>),
        (status = 404, description = "No session of that id (none with a message)", body = crate::error::ErrorBody<'_>),
        (status = 500, description = "The session store failed", body = crate::error::ErrorBody<'_>),
        (status = 504, description = "The store did not answer within the request timeout", body = crate::error::ErrorBody<'_>),
    ),
)]
pub(crate) async fn get(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> Result<axum::response::Response, ApiError> {
    crate::session_id::check(&id).map_err(ApiError::invalid)?;
    let messages = shared.history(&id).await?;
    if messages.is_empty() {
        return Err(ApiError::not_found(format!("no session `{id}`")));
    }
    let view = SessionView {
        id: &id,
        messages: &messages,
        pending_approvals: pending_approvals(&messages),
    };
    Ok(axum::response::IntoResponse::into_response(Json(view)))
}

/// `DELETE /v1/sessions/{id}`: 204; 409 while a turn runs on it.
#[utoipa::path(
    delete,
    path = "/v1/sessions/{id}",
    operation_id = "delete_session",
    tag = "sessions",
    params(crate::session_id::SessionPath),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Deleted (also when there was no such session)"),
        (status = 409, description = "A turn runs on the session", body = crate::error::ErrorBody<'_>),
        (status = 500, description = "The session store failed", body = crate::error::ErrorBody<'_>),
        (status = 504, description = "The store did not answer within the request timeout", body = crate::error::ErrorBody<'_>),
    ),
)]
pub(crate) async fn delete(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    crate::session_id::check(&id).map_err(ApiError::invalid)?;
    let delete = shared.sessions.delete(&id);
    shared
        .timed("deleting the session", delete, |e| ApiError::store(&id, e))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
