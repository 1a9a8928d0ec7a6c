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
    #[serde(
        default,
        rename = "historyLength",
        deserialize_with = "crate::whole::optional_query"
    )]
    history_length: Option<usize>,
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
    // The agent in the path names a resource: an unknown one is a 404 (the server's
    // error shape, as on its card), not a parameter of the message.
    if let Some(name) = agent
        && let Err(error) = a2a.shared.agent(Some(name))
    {
        return error.into_response();
    }
    let outcome = async {
        let (agent, value) = body(a2a, agent, headers, raw)?;
        let framing = stream.then_some(Framing::Rest);
        jsonrpc::send(a2a, agent, jsonrpc::parse(value)?, framing).await
    };
    reply(outcome.await)
}

/// `POST /a2a-rest/message:send`.
#[utoipa::path(
    post,
    path = "/a2a-rest/message:send",
    operation_id = "a2a_rest_send",
    tag = "a2a",
    request_body(content = super::wire::SendParams, description = "The message (`SendMessageRequest`)"),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The task (or the agent's message)", body = super::wire::StreamResponse),
        (status = 400, description = "A request A2A refuses (`INVALID_REQUEST`, `INVALID_PARAMS`, `VERSION_NOT_SUPPORTED`, ..), or a path or query the server cannot read", body = crate::schema::RestError),
        (status = 404, description = "No such task, agent or method", body = crate::schema::RestError),
        (status = 500, description = "The server failed", body = crate::schema::RestError),
    ),
)]
pub(crate) async fn message_send(
    State(a2a): State<Arc<A2a>>,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    send(&a2a, None, &headers, &raw, false).await
}

/// `POST /a2a-rest/message:stream`.
#[utoipa::path(
    post,
    path = "/a2a-rest/message:stream",
    operation_id = "a2a_rest_stream",
    tag = "a2a",
    request_body(content = super::wire::SendParams, description = "The message (`SendMessageRequest`)"),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "One `A2aStreamResponse` per Server-Sent Event", body = crate::schema::DataEvent, content_type = "text/event-stream"),
        (status = 400, description = "A request A2A refuses (`INVALID_REQUEST`, `INVALID_PARAMS`, `VERSION_NOT_SUPPORTED`, ..), or a path or query the server cannot read", body = crate::schema::RestError),
        (status = 404, description = "No such task, agent or method", body = crate::schema::RestError),
        (status = 500, description = "The server failed", body = crate::schema::RestError),
    ),
)]
pub(crate) async fn message_stream(
    State(a2a): State<Arc<A2a>>,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    send(&a2a, None, &headers, &raw, true).await
}

/// `POST /a2a-rest/{agent}/message:send`.
#[utoipa::path(
    post,
    path = "/a2a-rest/{agent}/message:send",
    operation_id = "a2a_rest_agent_send",
    tag = "a2a",
    params(("agent" = String, Path, description = "The agent")),
    request_body(content = super::wire::SendParams, description = "The message (`SendMessageRequest`)"),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The task (or the agent's message)", body = super::wire::StreamResponse),
        (status = 400, description = "A request A2A refuses (`INVALID_REQUEST`, `INVALID_PARAMS`, `VERSION_NOT_SUPPORTED`, ..), or a path or query the server cannot read", body = crate::schema::RestError),
        (status = 404, description = "No such task, agent or method", body = crate::schema::RestError),
        (status = 500, description = "The server failed", body = crate::schema::RestError),
    ),
)]
pub(crate) async fn agent_message_send(
    State(a2a): State<Arc<A2a>>,
    Path(agent): Path<String>,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    send(&a2a, Some(&agent), &headers, &raw, false).await
}

/// `POST /a2a-rest/{agent}/message:stream`.
#[utoipa::path(
    post,
    path = "/a2a-rest/{agent}/message:stream",
    operation_id = "a2a_rest_agent_stream",
    tag = "a2a",
    params(("agent" = String, Path, description = "The agent")),
    request_body(content = super::wire::SendParams, description = "The message (`SendMessageRequest`)"),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "One `A2aStreamResponse` per Server-Sent Event", body = crate::schema::DataEvent, content_type = "text/event-stream"),
        (status = 400, description = "A request A2A refuses (`INVALID_REQUEST`, `INVALID_PARAMS`, `VERSION_NOT_SUPPORTED`, ..), or a path or query the server cannot read", body = crate::schema::RestError),
        (status = 404, description = "No such task, agent or method", body = crate::schema::RestError),
        (status = 500, description = "The server failed", body = crate::schema::RestError),
    ),
)]
pub(crate) async fn agent_message_stream(
    State(a2a): State<Arc<A2a>>,
    Path(agent): Path<String>,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    send(&a2a, Some(&agent), &headers, &raw, true).await
}

/// `GET /a2a-rest/tasks/{id}`.
#[utoipa::path(
    get,
    path = "/a2a-rest/tasks/{id}",
    operation_id = "a2a_rest_get_task",
    tag = "a2a",
    params(("id" = String, Path, description = "The task: `{contextId}:{n}`"), ("historyLength" = Option<u64>, Query, minimum = 0, maximum = 9_007_199_254_740_991_f64, description = "At most this many messages of the history: a whole number from 0 to 2^53 - 1 (`2` or `2.0`)")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The task", body = super::wire::Task),
        (status = 400, description = "A request A2A refuses (`INVALID_REQUEST`, `INVALID_PARAMS`, `VERSION_NOT_SUPPORTED`, ..), or a path or query the server cannot read", body = crate::schema::RestError),
        (status = 404, description = "No such task, agent or method", body = crate::schema::RestError),
        (status = 500, description = "The server failed", body = crate::schema::RestError),
    ),
)]
pub(crate) async fn get_task(
    State(a2a): State<Arc<A2a>>,
    Path(path): Path<Vec<String>>,
    Query(history): Query<History>,
    headers: HeaderMap,
) -> Response {
    let id = path.last().cloned().unwrap_or_default();
    if id.ends_with(":cancel") {
        return wrong_method(&id, "POST");
    }
    let outcome = async {
        jsonrpc::check_version(&headers)?;
        let params = TaskParams {
            id,
            history_length: history.history_length,
        };
        jsonrpc::get(&a2a, params).await.map(Reply::Json)
    };
    reply(outcome.await)
}

/// `GET /a2a-rest/{agent}/tasks/{id}`: the same (tasks do not depend on the agent).
#[utoipa::path(
    get,
    path = "/a2a-rest/{agent}/tasks/{id}",
    operation_id = "a2a_rest_agent_get_task",
    tag = "a2a",
    params(("agent" = String, Path, description = "The agent"), ("id" = String, Path, description = "The task: `{contextId}:{n}`"), ("historyLength" = Option<u64>, Query, minimum = 0, maximum = 9_007_199_254_740_991_f64, description = "At most this many messages of the history: a whole number from 0 to 2^53 - 1 (`2` or `2.0`)")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The task", body = super::wire::Task),
        (status = 400, description = "A request A2A refuses (`INVALID_REQUEST`, `INVALID_PARAMS`, `VERSION_NOT_SUPPORTED`, ..), or a path or query the server cannot read", body = crate::schema::RestError),
        (status = 404, description = "No such task, agent or method", body = crate::schema::RestError),
        (status = 500, description = "The server failed", body = crate::schema::RestError),
    ),
)]
pub(crate) async fn agent_get_task(
    state: State<Arc<A2a>>,
    path: Path<Vec<String>>,
    history: Query<History>,
    headers: HeaderMap,
) -> Response {
    get_task(state, path, history, headers).await
}

/// `POST /a2a-rest/tasks/{id}:cancel` (the only `POST` on a task).
#[utoipa::path(
    post,
    path = "/a2a-rest/tasks/{id}:cancel",
    operation_id = "a2a_rest_cancel_task",
    tag = "a2a",
    params(("id" = String, Path, description = "The task: `{contextId}:{n}`")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The task", body = super::wire::Task),
        (status = 400, description = "A request A2A refuses (`INVALID_REQUEST`, `INVALID_PARAMS`, `VERSION_NOT_SUPPORTED`, ..), or a path or query the server cannot read", body = crate::schema::RestError),
        (status = 404, description = "No such task, agent or method", body = crate::schema::RestError),
        (status = 409, description = "The task cannot be canceled in its state (`TASK_NOT_CANCELABLE`)", body = crate::schema::RestError),
        (status = 500, description = "The server failed", body = crate::schema::RestError),
    ),
)]
pub(crate) async fn post_task(
    State(a2a): State<Arc<A2a>>,
    Path(path): Path<Vec<String>>,
    headers: HeaderMap,
) -> Response {
    let target = path.last().cloned().unwrap_or_default();
    let Some(id) = target.strip_suffix(":cancel") else {
        // `tasks/{id}:frob` asks for a custom method this binding lacks; `tasks/{id}`
        // (an id ends in its turn's number) is the task, which takes `GET` only.
        let verb = target.rsplit_once(':').map(|(_, verb)| verb);
        if verb.is_some_and(|v| !v.is_empty() && !v.bytes().all(|b| b.is_ascii_digit())) {
            return reply(Err(A2aError::MethodNotFound(format!(
                "`POST tasks/{}`: the REST binding here offers `tasks/{{id}}:cancel` only",
                crate::session_id::shown(&target)
            ))));
        }
        return wrong_method(&target, "GET, HEAD");
    };
    // `[agent, id]` under `/a2a-rest/{agent}/`, `[id]` for the default agent; an
    // unknown agent in the path is a 404, as for `message:send`.
    let agent = (path.len() > 1).then(|| path[0].as_str());
    if let Some(name) = agent
        && let Err(error) = a2a.shared.agent(Some(name))
    {
        return error.into_response();
    }
    let outcome = async {
        jsonrpc::check_version(&headers)?;
        let agent = a2a.shared.agent(agent).map_err(A2aError::from)?.clone();
        let params = TaskParams {
            id: id.to_owned(),
            history_length: None,
        };
        jsonrpc::cancel(&a2a, agent, params).await.map(Reply::Json)
    };
    reply(outcome.await)
}

/// `POST /a2a-rest/{agent}/tasks/{id}:cancel`: the same.
#[utoipa::path(
    post,
    path = "/a2a-rest/{agent}/tasks/{id}:cancel",
    operation_id = "a2a_rest_agent_cancel_task",
    tag = "a2a",
    params(("agent" = String, Path, description = "The agent"), ("id" = String, Path, description = "The task: `{contextId}:{n}`")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The task", body = super::wire::Task),
        (status = 400, description = "A request A2A refuses (`INVALID_REQUEST`, `INVALID_PARAMS`, `VERSION_NOT_SUPPORTED`, ..), or a path or query the server cannot read", body = crate::schema::RestError),
        (status = 404, description = "No such task, agent or method", body = crate::schema::RestError),
        (status = 409, description = "The task cannot be canceled in its state (`TASK_NOT_CANCELABLE`)", body = crate::schema::RestError),
        (status = 500, description = "The server failed", body = crate::schema::RestError),
    ),
)]
pub(crate) async fn agent_post_task(
    state: State<Arc<A2a>>,
    path: Path<Vec<String>>,
    headers: HeaderMap,
) -> Response {
    post_task(state, path, headers).await
}

/// The 405 of a task path that takes other methods: `tasks/{id}` is `GET` only and
/// `tasks/{id}:cancel` `POST` only, though one route serves both.
fn wrong_method(target: &str, allow: &'static str) -> Response {
    let mut response = crate::error::ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!(
            "`tasks/{}` takes `{allow}` only",
            crate::session_id::shown(target)
        ),
    )
    .into_response();
    response.headers_mut().insert(
        axum::http::header::ALLOW,
        axum::http::HeaderValue::from_static(allow),
    );
    response
}

/// Gives the 405 of a task route the methods of the path asked for (`GET, HEAD` for
/// `tasks/{id}`, `POST` for `tasks/{id}:cancel`) rather than those of the route.
pub(crate) async fn task_allow(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let allow = if request.uri().path().ends_with(":cancel") {
        "POST"
    } else {
        "GET, HEAD"
    };
    let mut response = next.run(request).await;
    if response.status() == StatusCode::METHOD_NOT_ALLOWED {
        response.headers_mut().insert(
            axum::http::header::ALLOW,
            axum::http::HeaderValue::from_static(allow),
        );
    }
    response
}
