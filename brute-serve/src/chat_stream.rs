//! The chunks of a streamed chat completion: the role first, then the text as it
//! comes, the client's tool calls as `tool_calls` deltas, the finish, and (with
//! `stream_options.include_usage`) a last chunk with the usage; `[DONE]` ends it.

use std::convert::Infallible;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use brute::ToolCall;
use brute::stream::{TurnItem, TurnResult};
use futures_util::{Stream, StreamExt};
use serde_json::{Value, json};

use crate::chat_wire::{Reply, chunk, finish_reason, tool_call, usage_chunk, wire_usage};

/// The SSE response of a streamed completion of `items`.
pub(crate) fn sse(
    items: impl Stream<Item = TurnItem> + Send + 'static,
    reply: Reply,
    include_usage: bool,
) -> Response {
    let done = futures_util::stream::once(async { Event::default().data("[DONE]") });
    let events = chunks(items, reply, include_usage)
        .chain(done)
        .map(Ok::<_, Infallible>);
    Sse::new(events)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

/// What the stream has seen so far.
struct Seen {
    /// Whether the current reply streamed deltas (then its `message` repeats them).
    streamed: bool,
    /// How many client tool calls were sent (the `index` of the next one).
    client_calls: usize,
    /// The agent's own calls that wait for approval.
    asked: Vec<ToolCall>,
}

fn chunks(
    items: impl Stream<Item = TurnItem> + Send + 'static,
    reply: Reply,
    include_usage: bool,
) -> impl Stream<Item = Event> + Send + 'static {
    let head = chunk(
        &reply.id,
        reply.created,
        &reply.model,
        json!({ "role": "assistant", "content": "" }),
        None,
    );
    let head = futures_util::stream::once(async move { data(&head) });
    let mut seen = Seen {
        streamed: false,
        client_calls: 0,
        asked: Vec::new(),
    };
    let body = items.flat_map(move |item| {
        let out = on_item(&reply, &mut seen, item, include_usage);
        futures_util::stream::iter(out.into_iter().map(|v| data(&v)))
    });
    head.chain(body)
}

/// The chunks of one item.
fn on_item(reply: &Reply, seen: &mut Seen, item: TurnItem, include_usage: bool) -> Vec<Value> {
    let delta = |delta: Value| chunk(&reply.id, reply.created, &reply.model, delta, None);
    match item {
        TurnItem::ContentDelta { text } => {
            seen.streamed = true;
            vec![delta(json!({ "content": text }))]
        }
        TurnItem::Message { message } => {
            let mut out = Vec::new();
            if !seen.streamed && !message.content.is_empty() {
                out.push(delta(json!({ "content": message.content })));
            }
            seen.streamed = false;
            for call in &message.tool_calls {
                if reply.client.contains(&call.name) {
                    let call = tool_call(call, Some(seen.client_calls));
                    seen.client_calls += 1;
                    out.push(delta(json!({ "tool_calls": [call] })));
                }
            }
            out
        }
        TurnItem::ApprovalRequired { call } if !reply.client.contains(&call.name) => {
            seen.asked.push(call);
            Vec::new()
        }
        TurnItem::End {
            result: TurnResult::Failed { error },
        } => {
            let (kind, message) = crate::error::split_failure(&error);
            vec![
                json!({ "error": { "type": kind, "code": kind, "param": null, "message": message } }),
            ]
        }
        TurnItem::End { result } => {
            if !seen.asked.is_empty() {
                let asked: Vec<&ToolCall> = seen.asked.iter().collect();
                return vec![serde_json::to_value(reply.approval(&asked)).unwrap_or_default()];
            }
            let completed = matches!(result, TurnResult::Completed { .. });
            let finish = finish_reason(seen.client_calls > 0, completed);
            let mut out = vec![chunk(
                &reply.id,
                reply.created,
                &reply.model,
                json!({}),
                Some(finish),
            )];
            if include_usage {
                let usage = wire_usage(&reply.tap.usage());
                out.push(usage_chunk(&reply.id, reply.created, &reply.model, usage));
            }
            out
        }
        _ => Vec::new(),
    }
}

fn data(value: &Value) -> Event {
    Event::default().data(value.to_string())
}
