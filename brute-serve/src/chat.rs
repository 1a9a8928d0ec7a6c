//! `POST /v1/chat/completions`: an OpenAI-compatible face of the agents, streamed and
//! not. The request carries the whole conversation, as with OpenAI: each request
//! runs one turn in a session of its own, deleted when the turn ends (or when the
//! client goes away first).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use brute::StopReason;
use brute::session::SessionId;
use brute::stream::{TurnItem, TurnResult};
use futures_util::StreamExt;
use serde_json::{Value, json};

use crate::chat_wire::{ChatRequest, WireUsage, chunk, completion};
use crate::error::{ApiError, parse};
use crate::runner;
use crate::sessions::Forget;
use crate::state::Shared;

/// A completion id unique in this process and across servers (time, process, count).
fn completion_id() -> String {
    crate::ids::unique_id("chatcmpl")
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Runs the agent named by `model` on the request's messages.
pub(crate) async fn post(
    State(shared): State<Arc<Shared>>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let request: ChatRequest = parse(&body)?;
    let agent = shared.agent(Some(&request.model))?.clone();
    let id = completion_id();
    let mut env = agent.env();
    env.extensions.insert(SessionId(id.clone()));
    for (index, message) in request.messages.into_iter().enumerate() {
        env.messages.push(message.into_message(index)?);
    }
    if !env.messages.iter().any(|m| m.role != brute::Role::System) {
        return Err(ApiError::invalid("messages: no user message"));
    }
    let model = request.model;
    // The conversation lives in the client: the request's session goes afterwards.
    let forget = Forget::new(shared.sessions.clone(), id.clone());
    if request.stream {
        let started = runner::start(&shared, agent, env, &id, Some(forget)).await?;
        let done = futures_util::stream::once(async { Event::default().data("[DONE]") });
        let events = chunks(started.items(), id, model)
            .chain(done)
            .map(Ok::<_, Infallible>);
        return Ok(Sse::new(events)
            .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
            .into_response());
    }
    let turn = tokio::time::timeout(shared.timeout, agent.turn(env)).await;
    forget.now().await;
    let outcome = turn
        .map_err(|_| ApiError::timeout("the chat completion", shared.timeout))?
        .map_err(|e| ApiError::turn(&id, &e))?;
    let finish = match outcome.stop {
        StopReason::Completed => "stop",
        _ => "length",
    };
    let usage = outcome.env.usage();
    let usage = WireUsage {
        prompt_tokens: usage.input_tokens,
        completion_tokens: usage.output_tokens,
        total_tokens: usage.total(),
    };
    let text = outcome.text().unwrap_or_default();
    Ok(Json(completion(&id, now(), &model, text, finish, usage)).into_response())
}

/// The chunks of a streamed completion: the role first, then the text as it comes
/// (the whole text of a reply whose model did not stream), then the finish.
fn chunks(
    items: impl futures_util::Stream<Item = TurnItem> + Send + 'static,
    id: String,
    model: String,
) -> impl futures_util::Stream<Item = Event> + Send + 'static {
    let created = now();
    let head = chunk(
        &id,
        created,
        &model,
        json!({ "role": "assistant", "content": "" }),
        None,
    );
    let head = futures_util::stream::once(async move { data(&head) });
    // Whether the current reply streamed deltas (then its `message` repeats them).
    let mut streamed = false;
    let body = items.filter_map(move |item| {
        let out = match item {
            TurnItem::ContentDelta { text } => {
                streamed = true;
                Some(chunk(
                    &id,
                    created,
                    &model,
                    json!({ "content": text }),
                    None,
                ))
            }
            TurnItem::Message { message } => {
                let out = (!streamed && !message.content.is_empty()).then(|| {
                    chunk(
                        &id,
                        created,
                        &model,
                        json!({ "content": message.content }),
                        None,
                    )
                });
                streamed = false;
                out
            }
            TurnItem::End {
                result: TurnResult::Failed { error },
            } => Some(json!({ "error": { "type": "turn", "message": error } })),
            TurnItem::End { result } => {
                let finish = match result {
                    TurnResult::Completed { .. } => "stop",
                    _ => "length",
                };
                Some(chunk(&id, created, &model, json!({}), Some(finish)))
            }
            _ => None,
        };
        std::future::ready(out.map(|v| data(&v)))
    });
    head.chain(body)
}

fn data(value: &Value) -> Event {
    Event::default().data(value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use brute::Message;

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
