//! `POST /v1/chat/completions`: an OpenAI-compatible face of the agents, streamed and
//! not. The request carries the whole conversation, as with OpenAI: each request
//! runs one turn in a session of its own, deleted when the turn ends (or when the
//! client goes away first), kept a while when a call waits for approval.
//!
//! The request's `tools` run on the client ([`ClientTools`]): the model sees them next
//! to the agent's own, a call to one pauses the turn and comes back as `tool_calls`
//! (`finish_reason: "tool_calls"`), and the client's next request, the conversation
//! with its `tool` results, goes on from there. Streamed chunks: `chat_stream`.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use brute::session::SessionId;
use brute::tools::ClientTools;
use brute::{StopReason, ToolCall};

use crate::chat_tap::Tap;
use crate::chat_wire::{
    APPROVAL_STATUS, ChatRequest, Reply, completion, finish_reason, wire_usage,
};
use crate::error::{ApiError, parse};
use crate::runner;
use crate::sessions::Forget;
use crate::state::Shared;

/// A completion id unique in this process and across servers (time, process, count).
fn completion_id() -> String {
    crate::ids::unique_id("chatcmpl")
}

/// Seconds since the Unix epoch: the `created` of a completion.
fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Runs the agent named by `model` on the request's messages, with the request's
/// tools advertised (they run on the client) and its `response_format` as the
/// turn's output schema.
#[utoipa::path(
    post,
    path = "/v1/chat/completions",
    operation_id = "create_chat_completion",
    tag = "chat",
    request_body = ChatRequest,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The completion; with `stream: true`, its chunks as \
            Server-Sent Events (`data:` a `chat.completion.chunk`, `[DONE]` last)",
            content(
                (crate::chat_wire::ChatCompletion<'_> = "application/json"),
                (crate::schema::DataEvent = "text/event-stream"),
            )),
        (status = 403, description = "The turn paused on a call of the agent's own that waits \
            for a person's approval: the session kept for the decision", body = crate::chat_wire::ApprovalRequired),
        (status = 404, description = "No agent of that `model`", body = crate::error::ErrorBody<'_>),
        (status = 500, description = "The turn failed", body = crate::error::ErrorBody<'_>),
        (status = 504, description = "The turn ran past the request timeout", body = crate::error::ErrorBody<'_>),
    ),
)]
pub(crate) async fn post(
    State(shared): State<Arc<Shared>>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let request: ChatRequest = parse(&body)?;
    let agent = shared.agent(Some(&request.model))?.clone();
    let id = completion_id();
    if request.messages.is_empty() {
        return Err(ApiError::invalid("messages: empty; send the conversation"));
    }
    let mut env = agent.env();
    env.extensions.insert(SessionId(id.clone()));
    for (index, message) in request.messages.into_iter().enumerate() {
        env.messages.push(message.into_message(index)?);
    }
    let tools = request.tools.unwrap_or_default();
    let mut names = Vec::with_capacity(tools.len());
    for (index, tool) in tools.into_iter().enumerate() {
        let spec = tool.into_spec(index)?;
        if names.contains(&spec.name) {
            return Err(ApiError::invalid(format!(
                "tools[{index}].function.name: `{}` is given twice",
                spec.name
            )));
        }
        names.push(spec.name.clone());
        env.tools.push(spec);
    }
    let client = ClientTools::new(names);
    if !client.names().is_empty() {
        env.extensions.insert(client.clone());
    }
    if let Some(format) = request.response_format
        && let Some(schema) = format.into_schema()?
    {
        env.extensions.insert(schema);
    }
    let tap = Tap::default();
    env.extensions.insert(tap.clone());
    // The conversation lives in the client: the request's session goes afterwards
    // (kept a while when a call waits for approval). A server without a store has
    // nothing to delete.
    let forget = shared.keeps_sessions.then(|| {
        Forget::new(
            shared.sessions.clone(),
            id.clone(),
            tap.clone(),
            shared.approval_expiry,
        )
    });
    let reply = Reply {
        id,
        model: request.model,
        created: now(),
        client,
        tap,
        keeps_sessions: shared.keeps_sessions,
        approval_expiry: shared.approval_expiry,
    };
    if request.stream.unwrap_or(false) {
        let include_usage = request.stream_options.is_some_and(|o| o.include_usage);
        let started = runner::start(&shared, agent, env, &reply.id, forget).await?;
        return Ok(crate::chat_stream::sse(
            started.items(),
            reply,
            include_usage,
        ));
    }
    let turn = tokio::time::timeout(shared.timeout, agent.turn(env)).await;
    if let Some(forget) = forget {
        forget.now().await;
    }
    let outcome = turn
        .map_err(|_| ApiError::timeout("the chat completion", shared.timeout))?
        .map_err(|e| ApiError::turn(&reply.id, &e))?;
    let message = outcome.message();
    let calls: Vec<&ToolCall> = message
        .map(|m| m.tool_calls.iter().collect())
        .unwrap_or_default();
    if let Some(pending) = outcome.stop.awaiting_approval() {
        let asked: Vec<&ToolCall> = calls
            .iter()
            .copied()
            .filter(|c| pending.contains(&c.id) && !reply.client.contains(&c.name))
            .collect();
        if !asked.is_empty() {
            let status = StatusCode::from_u16(APPROVAL_STATUS).unwrap_or(StatusCode::FORBIDDEN);
            return Ok((status, Json(reply.approval(&asked))).into_response());
        }
    }
    let client_calls: Vec<&ToolCall> = calls
        .into_iter()
        .filter(|c| reply.client.contains(&c.name))
        .collect();
    let finish = finish_reason(
        !client_calls.is_empty(),
        outcome.stop == StopReason::Completed,
    );
    let usage = wire_usage(&outcome.env.usage());
    let text = message.map(|m| m.content.as_str()).unwrap_or_default();
    Ok(Json(completion(
        &reply.id,
        reply.created,
        &reply.model,
        text,
        &client_calls,
        finish,
        usage,
    ))
    .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;
    use brute::Message;
    use serde_json::json;

    #[test]
    fn completion_ids_differ() {
        assert_ne!(completion_id(), completion_id());
    }

    #[test]
    fn a_message_with_text_parts_joins_them() {
        let request: ChatRequest = serde_json::from_value(json!({
            "model": "m",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
        }))
        .expect("valid request");
        let message = request.messages.into_iter().next().expect("one message");
        let message: Message = message.into_message(0).expect("text parts");
        assert_eq!(message.content, "ab");
    }
}
