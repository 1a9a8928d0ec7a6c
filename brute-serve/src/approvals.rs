//! `POST /v1/sessions/{id}/approvals/{call_id}`: a person's decision on a tool call
//! that waits for approval; the paused turn resumes and streams like a new one.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use brute::session::{SessionId, SessionStore};
use brute::stream::{ApprovalDecision, Verdict, pending_approvals};
use serde::Deserialize;

use crate::error::{ApiError, parse};
use crate::runner;
use crate::state::Shared;

/// `?agent=name`: the agent whose turn is paused (the default when absent).
#[derive(Debug, Deserialize)]
pub(crate) struct Which {
    agent: Option<String>,
}

/// Applies the decision (`{"decision":"approve"}`, `{"decision":"deny","reason":..}`
/// or `{"decision":"edit","arguments":{..}}`) and streams the rest of the turn. Any
/// server on the session's store can take it: nothing of the paused turn is kept in
/// memory. 404 when the call does not wait; 409 while a turn runs on the session.
pub(crate) async fn post(
    State(shared): State<Arc<Shared>>,
    Path((id, call_id)): Path<(String, String)>,
    Query(which): Query<Which>,
    body: Bytes,
) -> Result<Response, ApiError> {
    crate::session_id::check(&id).map_err(ApiError::invalid)?;
    let verdict: Verdict = parse(&body)?;
    let name = which.agent.as_deref().filter(|name| !name.is_empty());
    let agent = shared.agent(name)?.clone();
    pending(&shared, &id, &call_id).await?;
    let mut env = agent.env();
    env.extensions.insert(SessionId(id.clone()));
    env.extensions
        .insert(ApprovalDecision::new(call_id, verdict));
    let started = runner::start(&shared, agent, env, &id, None).await?;
    Ok(started.sse())
}

/// Answers 404 before starting a turn when the session has no call `call_id` waiting
/// (the turn checks again, under the session's lease).
async fn pending(shared: &Shared, id: &str, call_id: &str) -> Result<(), ApiError> {
    let messages = shared
        .sessions
        .load(id)
        .await
        .map_err(|e| ApiError::store(id, &e))?;
    let waiting: Vec<&str> = pending_approvals(&messages)
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
