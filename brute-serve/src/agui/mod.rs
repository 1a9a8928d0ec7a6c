//! AG-UI 1.0 (the agent–user interaction protocol that CopilotKit and other agent
//! front ends consume) for the server's agents: a run is one turn of a brute session,
//! streamed as AG-UI events over Server-Sent Events.
//!
//! | route | what |
//! |---|---|
//! | `POST /agui`, `POST /agui/{agent}` | `RunAgentInput` in (behind the server's auth), AG-UI events out |
//!
//! - `threadId` is the session id: the session keeps the conversation, so of the
//!   input's `messages` only the new input at the end is read: the user's new message
//!   (text, or text parts), with the `context` entries appended under a heading; or
//!   the `tool` messages that answer front-end calls (below).
//! - The events: `RUN_STARTED`; each model pass's text as `TEXT_MESSAGE_START` /
//!   `CONTENT` / `END`; each tool call of a reply as `TOOL_CALL_START` / `ARGS` /
//!   `END` and, for the agent's own tools, which run on the server, its
//!   `TOOL_CALL_RESULT`; then `RUN_FINISHED` (outcome `success`, naming the front-end
//!   calls left to the client in `pendingToolCallIds`, or `interrupt` with one
//!   interrupt per call that waits for approval, decided through
//!   `POST /v1/sessions/{threadId}/approvals/{toolCallId}`) or `RUN_ERROR`.
//! - Front-end tools (`tools` in the input; `frontend.rs`) are offered to the model
//!   beside the agent's own and run by the client: a call to one pauses the turn
//!   durably (the session holds it, as an approval pause), the run finishes, and the
//!   next run's `tool` message resumes the turn with the result, stored once. A
//!   result for a call that does not wait for one is a `RUN_ERROR` (`not_pending`);
//!   a front-end tool named like one of the agent's own is a `400`.
//! - A session that another turn holds is `409` before any event; a bad input is
//!   `400`.

mod events;
mod frontend;
pub(crate) mod wire;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use brute::session::SessionId;
use brute::{BoxAgent, Message};
use futures_util::StreamExt;

use crate::error::{ApiError, parse};
use crate::runner;
use crate::state::Shared;
use events::Progress;
use frontend::{Answer, FrontEnd};
use wire::{AguiEvent, RunAgentInput};

/// The AG-UI routes, for the authenticated part of the server.
pub(crate) fn routes() -> Router<Arc<Shared>> {
    Router::new()
        .route("/agui", post(default_agent))
        .route("/agui/{agent}", post(named_agent))
}

/// `POST /agui`: a run of the default agent.
#[utoipa::path(
    post,
    path = "/agui",
    operation_id = "agui_run",
    tag = "agui",
    request_body = wire::RunAgentInput,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The run's AG-UI events, one per Server-Sent Event (`data:` the event's JSON): `RUN_STARTED` first, `RUN_FINISHED` or `RUN_ERROR` last", body = crate::schema::DataEvent, content_type = "text/event-stream"),
        (status = 404, description = "No agent of that name", body = crate::error::ErrorBody<'_>),
        (status = 409, description = "Another turn holds the thread's session", body = crate::error::ErrorBody<'_>),
        (status = 500, description = "The session store failed", body = crate::error::ErrorBody<'_>),
    ),
)]
pub(crate) async fn default_agent(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    run(&shared, None, &body)
        .await
        .unwrap_or_else(|e| e.into_response())
}

/// `POST /agui/{agent}`: a run of `agent`.
#[utoipa::path(
    post,
    path = "/agui/{agent}",
    operation_id = "agui_agent_run",
    tag = "agui",
    params(("agent" = String, Path, description = "The agent")),
    request_body = wire::RunAgentInput,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The run's AG-UI events, one per Server-Sent Event (`data:` the event's JSON): `RUN_STARTED` first, `RUN_FINISHED` or `RUN_ERROR` last", body = crate::schema::DataEvent, content_type = "text/event-stream"),
        (status = 404, description = "No agent of that name", body = crate::error::ErrorBody<'_>),
        (status = 409, description = "Another turn holds the thread's session", body = crate::error::ErrorBody<'_>),
        (status = 500, description = "The session store failed", body = crate::error::ErrorBody<'_>),
    ),
)]
pub(crate) async fn named_agent(
    State(shared): State<Arc<Shared>>,
    Path(agent): Path<String>,
    body: Bytes,
) -> Response {
    run(&shared, Some(&agent), &body)
        .await
        .unwrap_or_else(|e| e.into_response())
}

/// Runs the turn of one AG-UI run and streams its events.
async fn run(shared: &Shared, agent: Option<&str>, body: &[u8]) -> Result<Response, ApiError> {
    let input: RunAgentInput = parse(body)?;
    crate::session_id::check(&input.thread_id)
        .map_err(|e| ApiError::invalid(format!("threadId: {e}")))?;
    let front = FrontEnd::of(&input.tools)?;
    let agent = shared.agent(agent)?.clone();
    let thread = input.thread_id.clone();
    let mut progress = Progress::new(thread.clone(), input.run_id.clone(), front.client().clone());
    if input.messages.last().is_some_and(|m| m.role == "tool") {
        let answers =
            match frontend::answers(shared, &thread, &input.messages, &front, &mut progress).await?
            {
                Ok(answers) => answers,
                Err(refusal) => return Ok(refused(progress, refusal)),
            };
        return resume(shared, agent, &front, &answers, progress).await;
    }
    let text = user_input(&input)?;
    let mut env = agent.env();
    env.extensions.insert(SessionId(thread.clone()));
    front.install(&mut env);
    env.messages.push(Message::user(text));
    let started = runner::start(shared, agent, env, &thread, None).await?;
    Ok(stream(progress, started))
}

/// Stores the client's `answers` to the thread's front-end calls, one resumed turn
/// each (a turn takes one decision), and streams the last one, which goes on once no
/// call waits. A call that stopped waiting in between (another run answered it) is a
/// `RUN_ERROR`.
async fn resume(
    shared: &Shared,
    agent: Arc<BoxAgent>,
    front: &FrontEnd,
    answers: &[Answer],
    progress: Progress,
) -> Result<Response, ApiError> {
    let thread = progress.thread().to_owned();
    let Some((last, before)) = answers.split_last() else {
        return Ok(refused(progress, "no front-end call to answer".to_owned()));
    };
    for answer in before {
        let env = frontend::resumed(agent.env(), &thread, front, answer);
        let turn = tokio::time::timeout(shared.timeout, agent.turn(env))
            .await
            .map_err(|_| {
                ApiError::timeout(&format!("the turn of session `{thread}`"), shared.timeout)
            })?;
        if let Err(e) = turn {
            let error = ApiError::turn(&thread, &e);
            return not_pending(progress, error);
        }
    }
    let env = frontend::resumed(agent.env(), &thread, front, last);
    match runner::start(shared, agent, env, &thread, None).await {
        Ok(started) => Ok(stream(progress, started)),
        Err(error) => not_pending(progress, error),
    }
}

/// The run's answer to a turn that could not start: a refused answer (`not_pending`)
/// as a `RUN_ERROR`, any other error as the server's JSON error.
fn not_pending(progress: Progress, error: ApiError) -> Result<Response, ApiError> {
    if error.kind == "not_pending" {
        return Ok(refused(progress, error.message));
    }
    Err(error)
}

/// A run that refuses its input after it started: `RUN_STARTED`, then `RUN_ERROR`
/// saying why (code `not_pending`).
fn refused(progress: Progress, why: String) -> Response {
    let events = [progress.started(), Progress::error(why, "not_pending")];
    let events =
        futures_util::stream::iter(events).map(|event| Ok::<_, Infallible>(sse_event(&event)));
    Sse::new(events).into_response()
}

/// The SSE response of a started turn: `RUN_STARTED`, then the turn's events.
fn stream(mut progress: Progress, started: runner::Started) -> Response {
    let first = progress.started();
    let rest = started
        .items()
        .flat_map(move |item| futures_util::stream::iter(progress.events(&item)));
    let events = futures_util::stream::once(async { first })
        .chain(rest)
        .map(|event| Ok::<_, Infallible>(sse_event(&event)));
    Sse::new(events)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

/// The new user message of the run: the last message's text, with the context.
fn user_input(input: &RunAgentInput) -> Result<String, ApiError> {
    let index = input.messages.len().checked_sub(1).ok_or_else(|| {
        ApiError::invalid("messages: empty; the last message must be the user's new input")
    })?;
    let last = &input.messages[index];
    if last.role != "user" {
        return Err(ApiError::invalid(format!(
            "messages[{index}]: a `{}` message; the last message must be the user's new input, or a `tool` message answering a front-end tool call (the thread `{}` keeps the rest)",
            last.role,
            crate::session_id::shown(&input.thread_id)
        )));
    }
    let mut text = last.text().ok_or_else(|| {
        ApiError::invalid(format!(
            "messages[{index}].content: only text parts are supported"
        ))
    })?;
    if !input.context.is_empty() {
        text.push_str("\n\nContext from the application:");
        for entry in &input.context {
            text.push_str(&format!("\n- {}: {}", entry.description, entry.value));
        }
    }
    Ok(text)
}

/// The SSE event of an AG-UI event: its JSON as the data, no event name (the
/// protocol's HTTP encoding).
fn sse_event(event: &AguiEvent) -> Event {
    match serde_json::to_string(event) {
        Ok(json) => Event::default().data(json),
        Err(e) => Event::default().data(
            serde_json::json!({
                "type": "RUN_ERROR",
                "message": format!("cannot encode an event: {e}"),
                "code": "encoding",
            })
            .to_string(),
        ),
    }
}
