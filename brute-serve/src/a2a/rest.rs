//! The HTTP+JSON (REST) binding: `POST /a2a-rest/message:send`, `POST
//! /a2a-rest/message:stream` (Server-Sent Events, one `StreamResponse` each), `GET
//! /a2a-rest/tasks/{id}` and `POST /a2a-rest/tasks/{id}:cancel`, for the default agent and
//! under `/a2a-rest/{agent}/` for each agent. The methods are the JSON-RPC binding's;
//! errors are `google.rpc.Status` bodies with A2A's reason and HTTP status.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;

use super::error::A2aError;
use super::jsonrpc::{self, Framing, Reply};
use super::shared::A2a;
use super::wire::TaskParams;

/// `?historyLength=N` of `GET /tasks/{id}`.
#[derive(Debug, Deserialize)]
pub(crate) struct History {
    #[serde(default, rename = "historyLength")]
    history_length: Option<i64>,
}

fn reply(outcome: Result<Reply, A2aError>) -> Response {
    match outcome {
        Ok(Reply::Json(value)) => Json(value).into_response(),
        Ok(Reply::Stream(response)) => response,
        Err(error) => {
            let status =
                StatusCode::from_u16(error.rest().0).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            (status, Json(error.rest_json())).into_response()
        }
    }
}

/// Checks the version, finds the agent and parses the body.
fn body(
    a2a: &A2a,
    agent: Option<&str>,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(Arc<brute::BoxAgent>, Value), A2aError> {
    jsonrpc::check_version(headers)?;
    let agent = a2a.shared.agent(agent).map_err(A2aError::from)?.clone();
    let value = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Object(serde_json::Map::new())
    } else {
        serde_json::from_slice(body).map_err(|e| A2aError::Parse(e.to_string()))?
    };
    Ok((agent, value))
}

async fn send(
    a2a: &Arc<A2a>,
    agent: Option<&str>,
    headers: &HeaderMap,
    raw: &[u8],
    stream: bool,
) -> Response {
    let outcome = async {
        let (agent, value) = body(a2a, agent, headers, raw)?;
        let framing = stream.then_some(Framing::Rest);
        jsonrpc::send(a2a, agent, jsonrpc::parse(value)?, framing).await
    };
    reply(outcome.await)
}

/// `POST /a2a-rest/message:send`.
pub(crate) async fn message_send(
    State(a2a): State<Arc<A2a>>,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    send(&a2a, None, &headers, &raw, false).await
}

/// `POST /a2a-rest/message:stream`.
pub(crate) async fn message_stream(
    State(a2a): State<Arc<A2a>>,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    send(&a2a, None, &headers, &raw, true).await
}

/// `POST /a2a-rest/{agent}/message:send`.
pub(crate) async fn agent_message_send(
    State(a2a): State<Arc<A2a>>,
    Path(agent): Path<String>,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    send(&a2a, Some(&agent), &headers, &raw, false).await
}

/// `POST /a2a-rest/{agent}/message:stream`.
pub(crate) async fn agent_message_stream(
    State(a2a): State<Arc<A2a>>,
    Path(agent): Path<String>,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    send(&a2a, Some(&agent), &headers, &raw, true).await
}

/// `GET /a2a-rest/tasks/{id}` (and under an agent: tasks do not depend on it).
pub(crate) async fn get_task(
    State(a2a): State<Arc<A2a>>,
    Path(path): Path<Vec<String>>,
    Query(history): Query<History>,
    headers: HeaderMap,
) -> Response {
    let outcome = async {
        jsonrpc::check_version(&headers)?;
        let id = path.last().cloned().unwrap_or_default();
        let params = TaskParams {
            id,
            history_length: history.history_length,
        };
        jsonrpc::get(&a2a, params).await.map(Reply::Json)
    };
    reply(outcome.await)
}

/// `POST /a2a-rest/tasks/{id}:cancel` (the only `POST` on a task).
pub(crate) async fn post_task(
    State(a2a): State<Arc<A2a>>,
    Path(path): Path<Vec<String>>,
    headers: HeaderMap,
) -> Response {
    let outcome = async {
        jsonrpc::check_version(&headers)?;
        let target = path.last().cloned().unwrap_or_default();
        let Some(id) = target.strip_suffix(":cancel") else {
            return Err(A2aError::MethodNotFound(format!(
                "`POST tasks/{}`: the REST binding here offers `tasks/{{id}}:cancel` only",
                crate::session_id::shown(&target)
            )));
        };
        let params = TaskParams {
            id: id.to_owned(),
            history_length: None,
        };
        jsonrpc::cancel(&a2a, params).await.map(Reply::Json)
    };
    reply(outcome.await)
}
