//! The JSON-RPC binding: `POST /a2a` (the default agent) and `POST /a2a/{agent}`, one
//! JSON-RPC 2.0 request each: `SendMessage`, `SendStreamingMessage` (Server-Sent
//! Events, one JSON-RPC response per event), `GetTask` and `CancelTask`. Every error
//! is a JSON-RPC error object with A2A's code, answered with status 200. A
//! notification (no `id`) is processed and answered `204 No Content`, without a body;
//! a batch (an array) is not taken: one `-32600` error says so.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use brute::ExitReason;
use brute::session::SessionId;
use brute::stream::{ApprovalDecision, Verdict, pending_approvals};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::error::A2aError;
use super::events::Progress;
use super::run;
use super::shared::A2a;
use super::tasks::{self, Live, TaskRef};
use super::wire::{self, SendParams, StreamResponse, Task, TaskParams, TaskState, TaskStatus};

/// `POST /a2a`: a request to the default agent.
#[utoipa::path(
    post,
    path = "/a2a",
    operation_id = "a2a_jsonrpc",
    tag = "a2a",
    request_body(content = crate::schema::JsonRpcRequest, description = "A JSON-RPC 2.0 request", content_type = "application/json"),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The JSON-RPC response (its `error` for any request that fails); \
            `SendStreamingMessage`: one JSON-RPC response per Server-Sent Event. A batch (a JSON \
            array) is answered with one error (-32600): this server takes one request per HTTP request",
            content(
                (crate::schema::JsonRpcResponse = "application/json"),
                (crate::schema::DataEvent = "text/event-stream"),
            )),
        (status = 204, description = "A notification (a request without `id`): processed, and not answered (JSON-RPC 2.0)"),
    ),
)]
pub(crate) async fn default_agent(
    State(a2a): State<Arc<A2a>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(&a2a, None, &headers, &body).await
}

/// `POST /a2a/{agent}`: a request to `agent`.
#[utoipa::path(
    post,
    path = "/a2a/{agent}",
    operation_id = "a2a_agent_jsonrpc",
    tag = "a2a",
    params(("agent" = String, Path, description = "The agent (an unknown one is a JSON-RPC error)")),
    request_body(content = crate::schema::JsonRpcRequest, description = "A JSON-RPC 2.0 request", content_type = "application/json"),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The JSON-RPC response (its `error` for any request that fails); \
            `SendStreamingMessage`: one JSON-RPC response per Server-Sent Event. A batch (a JSON \
            array) is answered with one error (-32600): this server takes one request per HTTP request",
            content(
                (crate::schema::JsonRpcResponse = "application/json"),
                (crate::schema::DataEvent = "text/event-stream"),
            )),
        (status = 204, description = "A notification (a request without `id`): processed, and not answered (JSON-RPC 2.0)"),
    ),
)]
pub(crate) async fn named_agent(
    State(a2a): State<Arc<A2a>>,
    Path(agent): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(&a2a, Some(&agent), &headers, &body).await
}

/// A JSON-RPC response of request `id`.
fn answer(id: &Value, outcome: Result<Value, A2aError>) -> Value {
    match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error.to_json()}),
    }
}

async fn handle(a2a: &Arc<A2a>, agent: Option<&str>, headers: &HeaderMap, body: &[u8]) -> Response {
    let request: Value = match serde_json::from_slice(body) {
        Ok(request) => request,
        Err(e) => {
            return Json(answer(&Value::Null, Err(A2aError::Parse(e.to_string())))).into_response();
        }
    };
    if request.is_array() {
        // JSON-RPC 2.0 lets a server that does not take batches say so in one error.
        return Json(answer(
            &Value::Null,
            Err(A2aError::InvalidRequest(BATCH.to_owned())),
        ))
        .into_response();
    }
    let notification = is_notification(&request);
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let outcome = dispatch(a2a, agent, headers, &request, &id).await;
    if notification {
        // Processed (a stream's turn goes on on its own task), never answered, not
        // even with an error (JSON-RPC 2.0, 4.1).
        return StatusCode::NO_CONTENT.into_response();
    }
    match outcome {
        Ok(Reply::Json(result)) => Json(answer(&id, Ok(result))).into_response(),
        Ok(Reply::Stream(response)) => response,
        Err(error) => Json(answer(&id, Err(error))).into_response(),
    }
}

/// The error of a batch (a JSON array of requests), which this server does not take.
pub(crate) const BATCH: &str =
    "a batch (a JSON array) is not supported here: send one request per HTTP request";

/// Whether `request` is a notification: a JSON-RPC 2.0 request without an `id`
/// member (`"id": null` is a request, answered with `id` null).
fn is_notification(request: &Value) -> bool {
    request.as_object().is_some_and(|object| {
        !object.contains_key("id")
            && object.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
            && object.get("method").is_some_and(Value::is_string)
    })
}

/// What a method answers with.
pub(crate) enum Reply {
    Json(Value),
    Stream(Response),
}

async fn dispatch(
    a2a: &Arc<A2a>,
    agent: Option<&str>,
    headers: &HeaderMap,
    request: &Value,
    id: &Value,
) -> Result<Reply, A2aError> {
    if request.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(A2aError::InvalidRequest(
            "`jsonrpc` must be \"2.0\"".to_owned(),
        ));
    }
    if !matches!(id, Value::String(_) | Value::Number(_) | Value::Null) {
        return Err(A2aError::InvalidRequest(
            "`id` must be a string, a number or null".to_owned(),
        ));
    }
    let method = request
        .get("method")
        .and_then(Value::as_str)
        .ok_or_else(|| A2aError::InvalidRequest("`method` must be a string".to_owned()))?;
    check_version(headers)?;
    let params = request.get("params").cloned().unwrap_or(Value::Null);
    let agent = a2a.shared.agent(agent).map_err(A2aError::from)?.clone();
    match method {
        "SendMessage" => send(a2a, agent, parse(params)?, None).await,
        "SendStreamingMessage" => {
            send(
                a2a,
                agent,
                parse(params)?,
                Some(Framing::JsonRpc(id.clone())),
            )
            .await
        }
        "GetTask" => get(a2a, parse(params)?).await.map(Reply::Json),
        "CancelTask" => cancel(a2a, agent, parse(params)?).await.map(Reply::Json),
        m if m.contains("PushNotificationConfig") => Err(A2aError::PushNotSupported),
        "ListTasks" | "SubscribeToTask" | "GetExtendedAgentCard" => {
            Err(A2aError::Unsupported(format!(
                "`{method}` is not offered by this server (it offers SendMessage, SendStreamingMessage, GetTask and CancelTask)"
            )))
        }
        m if m.contains('/') => Err(A2aError::MethodNotFound(format!(
            "method `{}` is of A2A 0.3; this server speaks A2A 1.0 (SendMessage, SendStreamingMessage, GetTask, CancelTask)",
            crate::session_id::shown(m)
        ))),
        m => Err(A2aError::MethodNotFound(format!(
            "no method `{}` (this server offers SendMessage, SendStreamingMessage, GetTask and CancelTask)",
            crate::session_id::shown(m)
        ))),
    }
}

/// Refuses an `A2A-Version` header of another major version than 1 (an absent one is
/// taken as 1.0).
pub(crate) fn check_version(headers: &HeaderMap) -> Result<(), A2aError> {
    if let Some(version) = headers.get("a2a-version") {
        let version = String::from_utf8_lossy(version.as_bytes())
            .trim()
            .to_owned();
        if !version.is_empty() && version.split('.').next() != Some("1") {
            return Err(A2aError::Version(crate::session_id::shown(&version)));
        }
    }
    Ok(())
}

/// The params of a method, or an invalid-params error naming the field.
pub(crate) fn parse<T: DeserializeOwned>(params: Value) -> Result<T, A2aError> {
    if !params.is_object() {
        return Err(A2aError::InvalidParams(
            "`params` must be an object".to_owned(),
        ));
    }
    serde_json::from_value(params).map_err(|e| A2aError::InvalidParams(format!("params: {e}")))
}

async fn load(a2a: &A2a, session: &str) -> Result<Vec<brute::Message>, A2aError> {
    Ok(a2a.shared.history(session).await?)
}

/// `SendMessage`, or `SendStreamingMessage` when `stream` holds the request id: a
/// message without `taskId` starts a task (a turn of the session named by `contextId`,
/// a new one when absent); a message on a task that waits for input decides its
/// pending call and resumes the turn.
/// How a stream frames its events: each one a JSON-RPC response of the request's id,
/// or (the REST binding) the bare `StreamResponse`.
#[derive(Clone, Debug)]
pub(crate) enum Framing {
    JsonRpc(Value),
    Rest,
}

pub(crate) async fn send(
    a2a: &Arc<A2a>,
    agent: Arc<brute::BoxAgent>,
    params: SendParams,
    stream: Option<Framing>,
) -> Result<Reply, A2aError> {
    let mut message = params.message;
    if !message.role.is_empty() && message.role != wire::ROLE_USER {
        return Err(A2aError::InvalidParams(format!(
            "params.message.role: expected {}, got `{}`",
            wire::ROLE_USER,
            crate::session_id::shown(&message.role)
        )));
    }
    let mut env = agent.env();
    let (task, waiting) = match message.task_id.clone() {
        Some(task_id) => {
            let task = TaskRef::parse(&task_id)?;
            if let Some(context) = message.context_id.as_ref().filter(|c| **c != task.session) {
                return Err(A2aError::InvalidParams(format!(
                    "params.message.contextId: `{}` is not the context of task `{task_id}` (`{}`)",
                    crate::session_id::shown(context),
                    task.session
                )));
            }
            let messages = load(a2a, &task.session).await?;
            let seen = tasks::view(&task, &messages, a2a.registry.get(&task_id), None)?;
            match seen.status.state {
                TaskState::InputRequired => {}
                TaskState::Working => {
                    return Err(A2aError::Unsupported(format!(
                        "task `{task_id}` is still working: wait for it (GetTask) or cancel it"
                    )));
                }
                state => {
                    return Err(A2aError::Unsupported(format!(
                        "task `{task_id}` is in terminal state {}: send the message without a taskId to start a new task in context `{}`",
                        state.name(),
                        task.session
                    )));
                }
            }
            let pending = pending_approvals(&messages);
            let (call_id, verdict) = tasks::decision(&message, &pending)?;
            let waiting = pending
                .iter()
                .filter(|call| call.id != call_id)
                .map(|call| (*call).clone())
                .collect();
            env.extensions
                .insert(ApprovalDecision::new(call_id, verdict));
            (task, waiting)
        }
        None => {
            let session = match &message.context_id {
                Some(context) => {
                    crate::session_id::check(context).map_err(|e| {
                        A2aError::InvalidParams(format!("params.message.contextId: {e}"))
                    })?;
                    context.clone()
                }
                None => crate::ids::unique_id("a2a"),
            };
            let text = tasks::input(&message)?;
            let turn = load(a2a, &session).await?.len();
            env.messages.push(brute::Message::user(text));
            (TaskRef { session, turn }, Vec::new())
        }
    };
    env.extensions.insert(SessionId(task.session.clone()));
    message.task_id = Some(task.id());
    message.context_id = Some(task.session.clone());
    message.role = wire::ROLE_USER.to_owned();
    let mut started = run::start(&a2a.shared, &a2a.registry, agent, env, &task).await?;
    let submitted = Task {
        id: task.id(),
        context_id: task.session.clone(),
        status: TaskStatus {
            state: TaskState::Working,
            message: None,
        },
        artifacts: Vec::new(),
        history: vec![message],
    };
    let configuration = params.configuration.unwrap_or_default();
    let Some(framing) = stream else {
        if configuration.return_immediately {
            return to_json(&StreamResponse::Task(submitted)).map(Reply::Json);
        }
        while started.next().await.is_some() {}
        let messages = load(a2a, &task.session).await?;
        let done = tasks::view(
            &task,
            &messages,
            a2a.registry.get(&task.id()),
            configuration.history_length,
        )?;
        return to_json(&StreamResponse::Task(done)).map(Reply::Json);
    };
    let progress = Progress::new(task).waiting(waiting);
    let first = vec![StreamResponse::Task(submitted)];
    let events = futures_util::stream::unfold(
        (Some(first), started, progress, framing),
        |(mut pending, mut started, mut progress, framing)| async move {
            loop {
                if let Some(batch) = pending.take().filter(|b| !b.is_empty()) {
                    let events: Vec<Result<Event, Infallible>> = batch
                        .iter()
                        .map(|event| Ok(sse_event(&framing, event)))
                        .collect();
                    return Some((
                        futures_util::stream::iter(events),
                        (None, started, progress, framing),
                    ));
                }
                let item = started.next().await?;
                pending = Some(progress.events(&item));
            }
        },
    );
    let events = futures_util::StreamExt::flatten(events);
    Ok(Reply::Stream(
        Sse::new(events)
            .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
            .into_response(),
    ))
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<Value, A2aError> {
    serde_json::to_value(value).map_err(|e| A2aError::Internal(format!("cannot encode: {e}")))
}

/// One stream event: a JSON-RPC response of request `id`.
fn sse_event(framing: &Framing, event: &StreamResponse) -> Event {
    match framing {
        Framing::JsonRpc(id) => Event::default().data(answer(id, to_json(event)).to_string()),
        Framing::Rest => match to_json(event) {
            Ok(json) => Event::default().data(json.to_string()),
            Err(error) => Event::default()
                .event("error")
                .data(error.rest_json().to_string()),
        },
    }
}

/// `GetTask`.
pub(crate) async fn get(a2a: &A2a, params: TaskParams) -> Result<Value, A2aError> {
    let task = TaskRef::parse(&params.id)?;
    let messages = load(a2a, &task.session).await?;
    let seen = tasks::view(
        &task,
        &messages,
        a2a.registry.get(&params.id),
        params.history_length,
    )?;
    to_json(&seen)
}

/// `CancelTask`: stops a turn that runs on this server and answers with the task as it
/// is then. A task waiting for approval is canceled by denying every call that waits
/// (a turn of `agent` that applies the denials and stops before the model runs again):
/// it ends `CANCELED`, on every server of the store. An ended task cannot be canceled.
pub(crate) async fn cancel(
    a2a: &A2a,
    agent: Arc<brute::BoxAgent>,
    params: TaskParams,
) -> Result<Value, A2aError> {
    let task = TaskRef::parse(&params.id)?;
    if let Some(Live::Running { stop, done }) = a2a.registry.get(&params.id) {
        stop.cancel();
        done.cancelled().await;
        return get(a2a, params).await;
    }
    let messages = load(a2a, &task.session).await?;
    let seen = tasks::view(&task, &messages, a2a.registry.get(&params.id), None)?;
    if seen.status.state != TaskState::InputRequired {
        return Err(A2aError::NotCancelable(format!(
            "task `{}` is in state {} and runs on no turn of this server",
            params.id,
            seen.status.state.name()
        )));
    }
    let waiting: Vec<String> = pending_approvals(&messages)
        .iter()
        .map(|call| call.id.clone())
        .collect();
    for call_id in waiting {
        let mut env = agent.env();
        env.extensions.insert(SessionId(task.session.clone()));
        env.extensions.insert(ApprovalDecision::new(
            call_id,
            Verdict::Deny {
                reason: Some(tasks::CANCEL_DENIAL.to_owned()),
            },
        ));
        // The pass that applies the decision is the last: the model does not run.
        env.exit(ExitReason::Requested {
            by: "CancelTask".to_owned(),
            reason: tasks::CANCELED.to_owned(),
        });
        let timeout = a2a.shared.timeout;
        match tokio::time::timeout(timeout, agent.turn(env)).await {
            Err(_) => {
                return Err(crate::error::ApiError::timeout(
                    &format!("the cancel of task `{}`", params.id),
                    timeout,
                )
                .into());
            }
            Ok(Err(error)) => {
                return Err(crate::error::ApiError::turn(&task.session, &error).into());
            }
            Ok(Ok(_)) => {}
        }
    }
    a2a.registry.finished(
        &params.id,
        Some((TaskState::Canceled, vec![wire::Part::text(tasks::CANCELED)])),
    );
    get(a2a, params).await
}
