//! `POST /v1/sessions/{id}/turns`: JSON in, Server-Sent Events out.

use std::ops::ControlFlow;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use brute::Message;
use brute::session::{KeyedTurn, ResumeKeyed, SessionId, keyed_turn};
use serde::Deserialize;

use crate::error::{ApiError, parse};
use crate::state::Shared;
use crate::{idempotency, runner};

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
    params(crate::session_id::SessionPath, crate::schema::IdempotencyHeader),
    request_body = TurnRequest,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The turn as it runs: one Server-Sent Event per `TurnItem` \
            (`event:` its `type`, `data:` its JSON), the `end` item last; with \
            `Accept: application/json`, one object with the turn's outcome once it ends. A retry \
            with the `Idempotency-Key` of a turn that ended is answered again from the session, \
            without running anything, with `Idempotent-Replayed: true`",
            headers(("Idempotent-Replayed" = String, description = "`true` when the answer was given again from the session")),
            content(
                (crate::schema::TurnEvent = "text/event-stream"),
                (crate::idempotency::TurnOutcome = "application/json"),
            )),
        (status = 400, description = "The body, the session id or the `Idempotency-Key` is not what the route takes", body = crate::error::ErrorBody<'_>),
        (status = 404, description = "No agent of that name", body = crate::error::ErrorBody<'_>),
        (status = 409, description = "Another turn holds the session, or a turn with this `Idempotency-Key` still runs (with `Retry-After`)", body = crate::error::ErrorBody<'_>,
            headers(("Retry-After" = String, description = "Seconds to wait before a retry with the same key"))),
        (status = 422, description = "The `Idempotency-Key` was used for another input", body = crate::error::ErrorBody<'_>),
        (status = 500, description = "The session store failed", body = crate::error::ErrorBody<'_>),
        (status = 504, description = "The store did not answer within the request timeout", body = crate::error::ErrorBody<'_>),
    ),
)]
pub(crate) async fn post(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    crate::session_id::check(&id).map_err(ApiError::invalid)?;
    let key = idempotency::key(&headers)?;
    let json = idempotency::wants_json(&headers);
    let request: TurnRequest = parse(&body)?;
    let agent = shared.agent(request.agent.as_deref())?.clone();
    let Some(key) = key else {
        let mut env = agent.env();
        env.extensions.insert(SessionId(id.clone()));
        env.messages.push(Message::user(request.input));
        let started = runner::start(&shared, agent, env, &id, None).await?;
        return Ok(idempotency::running(started, json).await);
    };
    let mut last = None;
    for _ in 0..idempotency::ATTEMPTS {
        let history = shared.history(&id).await?;
        let mut env = agent.env();
        env.extensions.insert(SessionId(id.clone()));
        match keyed_turn(&history, &key) {
            None => {
                // A first attempt: the key goes into the session with the prompt.
                let prompt = Message::user(request.input.clone()).with_idempotency_key(&*key);
                env.messages.push(prompt);
            }
            Some((at, ..))
                if history[at].role != brute::Role::User
                    || history[at].content != request.input =>
            {
                return Err(idempotency::other_input(&key));
            }
            Some((at, end, KeyedTurn::Finished | KeyedTurn::Paused)) => {
                let items = idempotency::replay(&history, at, end);
                return Ok(idempotency::replayed(items, json).await);
            }
            Some(_) => {
                // Unfinished: its server died or stalled past its lease, or a live turn
                // runs it (then the lease refuses this one).
                env.extensions.insert(ResumeKeyed(key.clone()));
            }
        }
        let resuming = env.extensions.get::<ResumeKeyed>().is_some();
        match idempotency::attempt(&shared, &agent, env, (&id, &key), resuming, json).await {
            ControlFlow::Break(answer) => return answer,
            ControlFlow::Continue(raced) => last = Some(raced),
        }
    }
    Err(last.unwrap_or_else(|| ApiError::busy(&id)))
}
