//! `POST /v1/sessions/{id}/turns`: JSON in, Server-Sent Events out.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::Response;
use brute::Message;
use brute::session::SessionId;
use serde::Deserialize;

use crate::error::{ApiError, parse};
use crate::runner;
use crate::state::Shared;

/// The body of a turn request.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TurnRequest {
    /// The user's message.
    pub(crate) input: String,
    /// The agent to run; the server's default when absent.
    #[serde(default)]
    pub(crate) agent: Option<String>,
}

/// Runs a turn of session `id` and streams its `TurnItem`s, one SSE event each,
/// the `end` item last. 409 when another turn holds the session.
#[utoipa::path(
    post,
    path = "/v1/sessions/{id}/turns",
    operation_id = "run_turn",
    tag = "sessions",
    params(crate::session_id::SessionPath),
    request_body = TurnRequest,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The turn as it runs: one Server-Sent Event per `TurnItem` \
            (`event:` its `type`, `data:` its JSON), the `end` item last", body = crate::openapi::TurnEvent, content_type = "text/event-stream"),
        (status = 404, description = "No agent of that name", body = crate::error::ErrorBody<'_>),
        (status = 409, description = "Another turn holds the session", body = crate::error::ErrorBody<'_>),
        (status = 500, description = "The session store failed", body = crate::error::ErrorBody<'_>),
    ),
)]
pub(crate) async fn post(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    crate::session_id::check(&id).map_err(ApiError::invalid)?;
    let request: TurnRequest = parse(&body)?;
    let agent = shared.agent(request.agent.as_deref())?.clone();
    let mut env = agent.env();
    env.extensions.insert(SessionId(id.clone()));
    env.messages.push(Message::user(request.input));
    let started = runner::start(&shared, agent, env, &id, None).await?;
    Ok(started.sse())
}
