//! `POST /v1/sessions/{id}/turns`: JSON in, Server-Sent Events out.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use brute::Message;
use brute::session::SessionId;
use brute::stream::TurnItem;
use futures_util::StreamExt;
use serde::Deserialize;

use crate::error::{ApiError, parse};
use crate::runner;
use crate::state::Shared;

/// The body of a turn request.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TurnRequest {
    /// The user's message.
    pub(crate) input: String,
    /// The agent to run; the server's default when absent.
    #[serde(default)]
    pub(crate) agent: Option<String>,
}

/// Runs a turn of session `id` and streams its `TurnItem`s, one SSE event each,
/// the `end` item last. 409 when another turn holds the session.
pub(crate) async fn post(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    crate::session_id::check(&id).map_err(ApiError::invalid)?;
    let request: TurnRequest = parse(&body)?;
    let agent = shared.agent(request.agent.as_deref())?.clone();
    let mut env = agent.env();
    env.extensions.insert(SessionId(id.clone()));
    env.messages.push(Message::user(request.input));
    let started = runner::start(&shared, agent, env, &id, None).await?;
    Ok(sse(started.items()))
}

/// The SSE response of a stream of items.
pub(crate) fn sse(items: impl futures_util::Stream<Item = TurnItem> + Send + 'static) -> Response {
    let events = items.map(|item| Ok::<_, Infallible>(event(&item)));
    Sse::new(events)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

/// The SSE event of an item: named by its `type`, the item as JSON its data.
fn event(item: &TurnItem) -> Event {
    match serde_json::to_value(item) {
        Ok(value) => {
            let name = value["type"].as_str().unwrap_or("item").to_owned();
            Event::default().event(name).data(value.to_string())
        }
        Err(e) => Event::default().event("end").data(
            serde_json::json!({
                "type": "end",
                "result": { "status": "failed", "error": format!("cannot encode an item: {e}") },
            })
            .to_string(),
        ),
    }
}
