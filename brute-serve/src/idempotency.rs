//! Idempotent turns and decisions: the `Idempotency-Key` header of
//! `POST /v1/sessions/{id}/turns` and `POST /v1/sessions/{id}/approvals/{call_id}`.
//!
//! The key is stored in the session with what the request writes, before the model is
//! called: on the turn's prompt (in the write that stores the prompt), on the reply
//! holding the decided call (a decision; written before the decision is applied). A
//! retry with the key reads the session and finds how far the first attempt got
//! ([`brute::session::keyed_turn`]): an ended (or paused) turn is answered again from
//! the history without running anything; an unfinished one is resumed on the stored
//! messages ([`brute::session::ResumeKeyed`]) when its lease is free, and is a 409
//! while a live turn holds it. `SessionLog` checks under the lease that a retry never stores a prompt
//! twice and never resumes a turn that ended meanwhile; the handlers then read the
//! session again.

use std::ops::ControlFlow;
use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use brute::stream::{TurnItem, TurnResult, Verdict};
use brute::{BoxAgent, Env, Message};
use futures_util::{Stream, StreamExt};
use serde::Serialize;

use crate::encode;
use crate::error::ApiError;
use crate::runner::{self, Started};
use crate::state::Shared;

/// The request header that carries the key.
pub(crate) const HEADER: &str = "idempotency-key";

/// The response header of an answer given again from the history.
pub(crate) const REPLAYED: &str = "idempotent-replayed";

/// How many times a handler reads the session again when the turn it started found,
/// under the lease, that another attempt with the key got there first.
pub(crate) const ATTEMPTS: usize = 4;

/// The request's key: `None` without the header; 400 for a key that is not 1 to 255
/// visible ASCII characters.
pub(crate) fn key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get(HEADER) else {
        return Ok(None);
    };
    let bytes = value.as_bytes();
    if bytes.is_empty() || bytes.len() > 255 || !bytes.iter().all(u8::is_ascii_graphic) {
        return Err(ApiError::invalid(
            "header `Idempotency-Key`: expected 1 to 255 visible ASCII characters (no space or control character)",
        ));
    }
    Ok(Some(String::from_utf8_lossy(bytes).into_owned()))
}

/// Whether the client asked for one JSON object (`Accept: application/json`, without
/// `text/event-stream`) instead of Server-Sent Events.
pub(crate) fn wants_json(headers: &HeaderMap) -> bool {
    let accept = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",");
    let types: Vec<&str> = accept
        .split(',')
        .map(|t| t.split(';').next().unwrap_or("").trim())
        .collect();
    types.contains(&"application/json") && !types.contains(&"text/event-stream")
}

/// What a decision's key is stored as on the reply it decided: the key, the call and
/// the verdict, so that the same key with another decision is told apart.
pub(crate) fn decision_record(key: &str, call_id: &str, verdict: &Verdict) -> String {
    let verdict = serde_json::to_string(verdict).unwrap_or_default();
    serde_json::to_string(&(key, call_id, verdict)).unwrap_or_default()
}

/// The record of decision key `key` stored in `history`, if any (it may be of another
/// call or verdict).
pub(crate) fn stored_decision<'a>(history: &'a [Message], key: &str) -> Option<&'a str> {
    history
        .iter()
        .rev()
        .flat_map(|m| m.idempotency_keys())
        .find(|record| {
            serde_json::from_str::<(String, String, String)>(record)
                .is_ok_and(|(stored, ..)| stored == key)
        })
        .map(String::as_str)
}

/// 422: the key was used for another input.
pub(crate) fn other_input(key: &str) -> ApiError {
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "idempotency_key_reused",
        format!(
            "header `Idempotency-Key` `{key}`: this idempotency key was used for another input"
        ),
    )
}

/// 409 with `Retry-After`: a live turn with this key still holds the session.
pub(crate) fn still_running(session: &str, key: &str) -> Response {
    let error = ApiError::new(
        StatusCode::CONFLICT,
        "busy",
        format!(
            "session `{session}`: a turn with idempotency key `{key}` is still running; retry after it ends"
        ),
    );
    let mut response = error.into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// Whether a turn that could not start was refused because another attempt with the
/// key got there first (its prompt stored, its turn ended, its decision applied): the
/// handler reads the session again.
fn raced(error: &ApiError) -> bool {
    matches!(error.kind, "key_stored" | "not_resumable" | "not_pending")
}

/// One attempt to start the turn of a keyed request on session `id`: its answer
/// (`Break`), or the refusal of a turn that lost a race to another attempt with the
/// key (`Continue`), after which the handler reads the session again. `known`: the
/// session holds the key already, so a `busy` refusal is that key's own turn, still
/// running (409 with `Retry-After`).
pub(crate) async fn attempt(
    shared: &Shared,
    agent: &Arc<BoxAgent>,
    env: Env,
    (id, key): (&str, &str),
    known: bool,
    json: bool,
) -> ControlFlow<Result<Response, ApiError>, ApiError> {
    match runner::start(shared, agent.clone(), env, id, None).await {
        Ok(started) => ControlFlow::Break(Ok(running(started, json).await)),
        Err(e) if known && e.kind == "busy" => ControlFlow::Break(Ok(still_running(id, key))),
        Err(e) if raced(&e) => ControlFlow::Continue(e),
        Err(e) => ControlFlow::Break(Err(e)),
    }
}

/// The answer of the turn that ran from `anchor` (the message carrying the key) to
/// `end` in `history`, without running anything: its messages as the items a turn
/// streams, then its `end`.
pub(crate) fn replay(history: &[Message], anchor: usize, end: usize) -> Vec<TurnItem> {
    let turn = &history[anchor + 1..end];
    let mut items = Vec::with_capacity(turn.len() + 1);
    let mut pending = Vec::new();
    for message in turn {
        match message.role {
            brute::Role::Assistant => items.push(TurnItem::Message {
                message: message.clone(),
            }),
            brute::Role::Tool => {
                let id = message.tool_call_id.clone().unwrap_or_default();
                let call = history[..end]
                    .iter()
                    .rev()
                    .flat_map(|m| &m.tool_calls)
                    .find(|c| c.id == id);
                match call {
                    Some(call) if message.awaiting_approval() => {
                        pending.push(id);
                        items.push(TurnItem::ApprovalRequired { call: call.clone() });
                    }
                    _ => items.push(TurnItem::ToolResult {
                        name: call.map(|c| c.name.clone()).unwrap_or_default(),
                        call_id: id,
                        content: message.content.clone(),
                        is_error: false,
                    }),
                }
            }
            _ => {}
        }
    }
    let result = if pending.is_empty() {
        TurnResult::Completed {
            text: turn
                .iter()
                .rev()
                .find(|m| m.role == brute::Role::Assistant && m.tool_calls.is_empty())
                .map(|m| m.content.clone()),
        }
    } else {
        TurnResult::Paused { pending }
    };
    items.push(TurnItem::End { result });
    items
}

/// A turn's outcome as one JSON object (`Accept: application/json`).
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct TurnOutcome {
    /// The text of the turn's last answer, when it completed with one.
    #[schema(value_type = Option<String>)]
    text: Option<String>,
    /// The calls waiting for approval, when the turn ended paused.
    #[schema(value_type = Option<Vec<String>>)]
    paused: Option<Vec<String>>,
    /// The turn's `end` result, as the `end` event carries it.
    #[schema(value_type = Object)]
    result: TurnResult,
    /// Every item of the turn, as the stream would have sent them, the `end` last.
    #[schema(value_type = Vec<Object>)]
    items: Vec<TurnItem>,
}

/// The outcome of a turn from its `items`.
async fn outcome(items: impl Stream<Item = TurnItem>) -> TurnOutcome {
    let items: Vec<TurnItem> = items.collect().await;
    let result = items
        .iter()
        .rev()
        .find_map(|item| match item {
            TurnItem::End { result } => Some(result.clone()),
            _ => None,
        })
        .unwrap_or(TurnResult::Unfinished);
    let (text, paused) = match &result {
        TurnResult::Completed { text } => (text.clone(), None),
        TurnResult::Paused { pending } => (None, Some(pending.clone())),
        _ => (None, None),
    };
    TurnOutcome {
        text,
        paused,
        result,
        items,
    }
}

/// The answer of a turn that runs: SSE, or one JSON object once it ends.
pub(crate) async fn running(started: Started, json: bool) -> Response {
    if json {
        axum::Json(outcome(started.items()).await).into_response()
    } else {
        started.sse()
    }
}

/// The answer given again from the history, marked `Idempotent-Replayed: true`.
pub(crate) async fn replayed(items: Vec<TurnItem>, json: bool) -> Response {
    let mut response = if json {
        axum::Json(outcome(futures_util::stream::iter(items)).await).into_response()
    } else {
        encode::response(futures_util::stream::iter(items).map(|item| encode::item(&item)))
    };
    response
        .headers_mut()
        .insert(REPLAYED, HeaderValue::from_static("true"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_one_to_255_visible_ascii_characters() {
        let mut headers = HeaderMap::new();
        assert!(matches!(key(&headers), Ok(None)));
        for good in ["a", "order-17/retry:ok", &"k".repeat(255)] {
            headers.insert(
                HEADER,
                HeaderValue::from_str(good).unwrap_or_else(|_| HeaderValue::from_static("x")),
            );
            assert_eq!(key(&headers).ok().flatten().as_deref(), Some(good));
        }
        for bad in ["", "a b", &"k".repeat(256)] {
            headers.insert(
                HEADER,
                HeaderValue::from_str(bad).unwrap_or_else(|_| HeaderValue::from_static(" ")),
            );
            assert!(key(&headers).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn json_only_when_asked_without_event_stream() {
        let mut headers = HeaderMap::new();
        assert!(!wants_json(&headers));
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        assert!(wants_json(&headers));
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream, application/json;q=0.5"),
        );
        assert!(!wants_json(&headers));
    }
}
