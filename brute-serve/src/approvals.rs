//! `POST /v1/sessions/{id}/approvals/{call_id}`: a person's decision on a tool call
//! that waits for approval; the paused turn resumes and streams like a new one.

use std::ops::ControlFlow;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use brute::session::{DecisionKey, KeyedTurn, ResumeKeyed, SessionId, keyed_turn};
use brute::stream::{ApprovalDecision, Verdict, pending_approvals};
use brute::{BoxAgent, Env, Message};
use serde::Deserialize;

use crate::error::{ApiError, parse};
use crate::state::Shared;
use crate::{idempotency, runner};

/// `?agent=name`: the agent whose turn is paused (the default when absent).
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct Which {
    /// The agent whose turn is paused (the server's default when absent or empty).
    agent: Option<String>,
}

/// The path of a decision, as the OpenAPI description states it.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)] // Only its description is read.
pub(crate) struct CallPath {
    /// The session: 1 to 128 bytes of UTF-8, not starting with `.`, without `/`, `\\`
    /// or a control character.
    #[param(
        min_length = 1,
        max_length = 128,
        pattern = r"^[^./\\\x00-\x1f\x7f-\x9f][^/\\\x00-\x1f\x7f-\x9f]*$"
    )]
    id: String,
    /// The id of the tool call that waits for approval.
    call_id: String,
}

/// Applies the decision (`{"decision":"approve"}`, `{"decision":"deny","reason":..}`
/// or `{"decision":"edit","arguments":{..}}`) and streams the rest of the turn. Any
/// server on the session's store can take it: nothing of the paused turn is kept in
/// memory. 404 when the call does not wait; 409 while a turn runs on the session.
#[utoipa::path(
    post,
    path = "/v1/sessions/{id}/approvals/{call_id}",
    operation_id = "decide_approval",
    tag = "sessions",
    params(CallPath, Which, crate::schema::IdempotencyHeader),
    request_body(content = crate::schema::VerdictSchema, description = "The decision"),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The rest of the turn, streamed as by `POST /v1/sessions/{id}/turns` \
            (one JSON object with `Accept: application/json`); a retry with the decision's \
            `Idempotency-Key` is answered again from the session (`Idempotent-Replayed: true`)",
            headers(("Idempotent-Replayed" = String, description = "`true` when the answer was given again from the session")),
            content(
                (crate::schema::TurnEvent = "text/event-stream"),
                (crate::idempotency::TurnOutcome = "application/json"),
            )),
        (status = 400, description = "The body, the session id or the `Idempotency-Key` is not what the route takes", body = crate::error::ErrorBody<'_>),
        (status = 404, description = "No agent of that name, or the call does not wait for approval (`not_pending`)", body = crate::error::ErrorBody<'_>),
        (status = 409, description = "Another turn holds the session, or the turn of this `Idempotency-Key` still runs (with `Retry-After`)", body = crate::error::ErrorBody<'_>,
            headers(("Retry-After" = String, description = "Seconds to wait before a retry with the same key"))),
        (status = 422, description = "The `Idempotency-Key` was used for another decision", body = crate::error::ErrorBody<'_>),
        (status = 500, description = "The session store failed", body = crate::error::ErrorBody<'_>),
        (status = 504, description = "The store did not answer within the request timeout", body = crate::error::ErrorBody<'_>),
    ),
)]
pub(crate) async fn post(
    State(shared): State<Arc<Shared>>,
    Path((id, call_id)): Path<(String, String)>,
    Query(which): Query<Which>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    crate::session_id::check(&id).map_err(ApiError::invalid)?;
    let key = idempotency::key(&headers)?;
    let json = idempotency::wants_json(&headers);
    let verdict: Verdict = parse(&body)?;
    let name = which.agent.as_deref().filter(|name| !name.is_empty());
    let agent = shared.agent(name)?.clone();
    let Some(key) = key else {
        pending(&shared.history(&id).await?, &id, &call_id)?;
        let env = decision(&agent, &id, &call_id, &verdict);
        let started = runner::start(&shared, agent, env, &id, None).await?;
        return Ok(idempotency::running(started, json).await);
    };
    let record = idempotency::decision_record(&key, &call_id, &verdict);
    let mut last = None;
    for _ in 0..idempotency::ATTEMPTS {
        let history = shared.history(&id).await?;
        let waits = pending_approvals(&history).iter().any(|c| c.id == call_id);
        let stored = idempotency::stored_decision(&history, &key);
        // A key the session holds belongs to an attempt that got there first: while a
        // turn holds the session, that is this decision's turn, still running.
        let known = stored.is_some();
        let env = match stored {
            Some(stored) if stored != record => return Err(idempotency::other_input(&key)),
            // The first attempt, or one that stored its key and died before applying
            // the decision (the call still waits: nothing of it ran).
            None | Some(_) if waits => {
                let mut env = decision(&agent, &id, &call_id, &verdict);
                env.extensions.insert(DecisionKey(record.clone()));
                env
            }
            // Not waiting and never decided with this key: 404 `not_pending`.
            None => return pending(&history, &id, &call_id).and(Err(ApiError::busy(&id))),
            Some(_) => match keyed_turn(&history, &record) {
                Some((at, end, KeyedTurn::Finished | KeyedTurn::Paused)) => {
                    let items = idempotency::replay(&history, at, end);
                    return Ok(idempotency::replayed(items, json).await);
                }
                _ => {
                    // Decided, and its turn died before its end: resumed on the stored
                    // messages (a call whose result is missing gets brute's repair).
                    let mut env = agent.env();
                    env.extensions.insert(SessionId(id.clone()));
                    env.extensions.insert(ResumeKeyed(record.clone()));
                    env
                }
            },
        };
        match idempotency::attempt(&shared, &agent, env, (&id, &key), known, json).await {
            ControlFlow::Break(answer) => return answer,
            ControlFlow::Continue(raced) => last = Some(raced),
        }
    }
    Err(last.unwrap_or_else(|| ApiError::busy(&id)))
}

/// The env of the turn that applies `verdict` to call `call_id` of session `id`.
fn decision(agent: &BoxAgent, id: &str, call_id: &str, verdict: &Verdict) -> Env {
    let mut env = agent.env();
    env.extensions.insert(SessionId(id.to_owned()));
    env.extensions
        .insert(ApprovalDecision::new(call_id, verdict.clone()));
    env
}

/// Answers 404 before starting a turn when `messages` (session `id`) have no call
/// `call_id` waiting (the turn checks again, under the session's lease).
fn pending(messages: &[Message], id: &str, call_id: &str) -> Result<(), ApiError> {
    let waiting: Vec<&str> = pending_approvals(messages)
        .into_iter()
        .map(|call| call.id.as_str())
        .collect();
    if waiting.contains(&call_id) {
        return Ok(());
    }
    Err(ApiError::new(
        axum::http::StatusCode::NOT_FOUND,
        "not_pending",
        format!(
            "session `{id}`: tool call `{call_id}` does not wait for approval (waiting: {})",
            if waiting.is_empty() {
                "none".to_owned()
            } else {
                waiting.join(", ")
            }
        ),
    ))
}
