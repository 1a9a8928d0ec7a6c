//! Server-Sent Events written straight into bytes: one buffer per event, the JSON
//! serialized into it in place (no `serde_json::Value` tree, no intermediate string),
//! handed to the response body without a copy. The bytes are those of axum's `Sse`
//! for the same events (`event: NAME\ndata: JSON\n\n`; compact JSON holds no line
//! break, so the data is one line), and a response made by [`response`] carries the
//! same headers.
//!
//! Reusable by any endpoint that streams JSON events: [`item`] for a turn's items
//! (named by their `type`), [`data`] for unnamed events (chat-completion chunks).

use std::convert::Infallible;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use brute::stream::TurnItem;
use futures_util::Stream;
use serde::Serialize;

/// The keep-alive of an idle stream: an empty comment, axum's default.
pub(crate) const KEEP_ALIVE: &[u8] = b":\n\n";

/// The bytes of one SSE event of a turn: named by the item's `type`, the item as
/// compact JSON its data.
pub(crate) fn item(item: &TurnItem) -> Bytes {
    match known_name(item) {
        Some(name) => {
            let mut buf = Vec::with_capacity(40 + name.len() + size_hint(item));
            buf.extend_from_slice(b"event: ");
            buf.extend_from_slice(name.as_bytes());
            buf.extend_from_slice(b"\ndata: ");
            if let Err(e) = serde_json::to_writer(&mut buf, item) {
                return unencodable(&e);
            }
            buf.extend_from_slice(b"\n\n");
            Bytes::from(buf)
        }
        None => named_by_tag(item),
    }
}

/// The bytes of one unnamed SSE event: `value` as compact JSON its data.
#[allow(
    dead_code,
    reason = "for the chat-completion chunks, which chat.rs still builds with axum's Sse"
)]
pub(crate) fn data<T: Serialize + ?Sized>(value: &T) -> Bytes {
    let mut buf = Vec::with_capacity(256);
    buf.extend_from_slice(b"data: ");
    if let Err(e) = serde_json::to_writer(&mut buf, value) {
        return unencodable(&e);
    }
    buf.extend_from_slice(b"\n\n");
    Bytes::from(buf)
}

/// A `200` SSE response streaming `events` (each one or more whole events), with the
/// headers of axum's `Sse`.
pub(crate) fn response(events: impl Stream<Item = Bytes> + Send + 'static) -> Response {
    use futures_util::StreamExt;
    let mut response = Response::new(Body::from_stream(events.map(Ok::<_, Infallible>)));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The `type` of the items this version knows, without serializing them.
fn known_name(item: &TurnItem) -> Option<&'static str> {
    Some(match item {
        TurnItem::ContentDelta { .. } => "content_delta",
        TurnItem::ReasoningDelta { .. } => "reasoning_delta",
        TurnItem::Message { .. } => "message",
        TurnItem::ToolCallStart { .. } => "tool_call_start",
        TurnItem::ToolResult { .. } => "tool_result",
        TurnItem::Retry { .. } => "retry",
        TurnItem::Compacted { .. } => "compacted",
        TurnItem::ApprovalRequired { .. } => "approval_required",
        TurnItem::End { .. } => "end",
        _ => return None,
    })
}

/// A guess of the JSON's length, so that most events fit their first buffer.
fn size_hint(item: &TurnItem) -> usize {
    match item {
        TurnItem::ContentDelta { text } | TurnItem::ReasoningDelta { text } => text.len() + 16,
        TurnItem::Message { message } => message.content.len() + 96,
        TurnItem::ToolResult { content, .. } => content.len() + 96,
        _ => 96,
    }
}

/// An item of a kind newer than this module: serialized first, named by the `type`
/// its JSON starts with (serde writes an internally tagged enum's tag first).
fn named_by_tag(item: &TurnItem) -> Bytes {
    let json = match serde_json::to_vec(item) {
        Ok(json) => json,
        Err(e) => return unencodable(&e),
    };
    let name = json
        .strip_prefix(br#"{"type":""#)
        .and_then(|rest| rest.iter().position(|b| *b == b'"').map(|end| &rest[..end]))
        .unwrap_or(b"item");
    let mut buf = Vec::with_capacity(json.len() + name.len() + 16);
    buf.extend_from_slice(b"event: ");
    buf.extend_from_slice(name);
    buf.extend_from_slice(b"\ndata: ");
    buf.extend_from_slice(&json);
    buf.extend_from_slice(b"\n\n");
    Bytes::from(buf)
}

/// The `end` event of a stream whose item could not be encoded.
fn unencodable(error: &serde_json::Error) -> Bytes {
    let end = TurnItem::End {
        result: brute::stream::TurnResult::Failed {
            error: format!("cannot encode an item: {error}"),
        },
    };
    let mut buf = b"event: end\ndata: ".to_vec();
    // An `end` of a string cannot fail to encode.
    let _ = serde_json::to_writer(&mut buf, &end);
    buf.extend_from_slice(b"\n\n");
    Bytes::from(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::response::IntoResponse;
    use axum::response::sse::{Event, Sse};
    use brute::stream::TurnResult;
    use brute::{Message, ToolCall};

    /// The bytes axum's `Sse` wrote for an item before this module: a `Value` tree,
    /// named by its `type`.
    fn axum_bytes(event: Event) -> Vec<u8> {
        let response =
            Sse::new(futures_util::stream::iter([Ok::<_, Infallible>(event)])).into_response();
        let body = response.into_body();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        rt.block_on(axum::body::to_bytes(body, usize::MAX))
            .expect("a body")
            .to_vec()
    }

    fn old_item(item: &TurnItem) -> Vec<u8> {
        let value = serde_json::to_value(item).expect("an item encodes");
        let name = value["type"].as_str().unwrap_or("item").to_owned();
        axum_bytes(Event::default().event(name).data(value.to_string()))
    }

    fn items() -> Vec<TurnItem> {
        let mut message = Message::assistant("line one\nline \"two\"\r\n\u{2028} é");
        message.tool_calls.push(ToolCall::new(
            "c1",
            "search",
            serde_json::json!({"q": "a\nb", "n": 2}),
        ));
        vec![
            TurnItem::ContentDelta {
                text: "he\nllo\r".into(),
            },
            TurnItem::ReasoningDelta {
                text: String::new(),
            },
            TurnItem::Message { message },
            TurnItem::ToolCallStart {
                call: ToolCall::new("c2", "t", serde_json::json!({})),
            },
            TurnItem::ToolResult {
                call_id: "c2".into(),
                name: "t".into(),
                content: "x\n\ny".into(),
                is_error: true,
            },
            TurnItem::Retry {
                attempt: 1,
                delay_ms: 250,
                error: "503".into(),
            },
            TurnItem::Compacted {
                strategy: "summary".into(),
                removed: 3,
                tokens_before: 900,
                tokens_after: 100,
                reported_before: Some(950),
            },
            TurnItem::ApprovalRequired {
                call: ToolCall::new("c3", "rm", serde_json::json!({"path": "/"})),
            },
            TurnItem::End {
                result: TurnResult::Completed {
                    text: Some("done".into()),
                },
            },
            TurnItem::End {
                result: TurnResult::Paused {
                    pending: vec!["c3".into()],
                },
            },
            TurnItem::End {
                result: TurnResult::Failed {
                    error: "turn: boom".into(),
                },
            },
        ]
    }

    /// An event's name line, its data (parsed) and whether it is framed as one
    /// `event:` line, one `data:` line and a blank line.
    fn fields(bytes: &[u8]) -> (String, serde_json::Value) {
        let text = std::str::from_utf8(bytes).expect("UTF-8");
        let body = text.strip_suffix("\n\n").expect("ends with a blank line");
        let (event, data) = body.split_once('\n').expect("two lines");
        assert!(!data.contains('\n') && !data.contains('\r'), "{text:?}");
        let name = event.strip_prefix("event: ").expect("an event line");
        let data = data.strip_prefix("data: ").expect("a data line");
        (
            name.to_owned(),
            serde_json::from_str(data).expect("JSON data"),
        )
    }

    /// The JSON keys are now in the item's own order (`type` first, as in the
    /// `TurnItem` docs) where the `Value` tree sorted them: the same event name, the
    /// same framing and the same JSON value, so every JSON client reads the same.
    #[test]
    fn items_are_the_events_axum_wrote_from_a_value_tree() {
        for item in items() {
            let new = super::item(&item);
            assert_eq!(fields(&new), fields(&old_item(&item)), "{item:?}");
            let json = serde_json::to_string(&item).expect("an item encodes");
            let name = fields(&new).0;
            assert_eq!(new, format!("event: {name}\ndata: {json}\n\n").as_bytes());
        }
    }

    #[test]
    fn the_name_read_from_the_tag_is_the_known_name() {
        for item in items() {
            assert_eq!(named_by_tag(&item), super::item(&item), "{item:?}");
        }
    }

    #[test]
    fn data_is_the_bytes_axum_wrote() {
        let chunk = serde_json::json!({"id": "x", "choices": [{"delta": {"content": "a\nb"}}]});
        assert_eq!(
            data(&chunk).to_vec(),
            axum_bytes(Event::default().data(chunk.to_string()))
        );
    }

    #[test]
    fn keep_alive_is_axums() {
        assert_eq!(KEEP_ALIVE, axum_bytes(Event::DEFAULT_KEEP_ALIVE));
    }
}
