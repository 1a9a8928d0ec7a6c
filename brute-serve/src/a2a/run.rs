//! Runs the turn of a task on its own task, like the server's other turns, but
//! stoppable: `CancelTask` cancels its token, which drops the turn's stream (brute's
//! `SessionLog` leaves the session whole). The request waits until the turn holds its
//! session, so a busy session is an error before any byte of a stream.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use brute::stream::{TurnItem, TurnResult};
use brute::{BoxAgent, Env};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

use super::error::A2aError;
use super::tasks::{CANCELED, Registry, TaskRef};
use super::wire::{Part, TaskState};
use crate::error::ApiError;
use crate::live::Sink;
use crate::state::Shared;
use serde_json::json;

/// What the turn's task sends to the request.
#[derive(Debug)]
enum Signal {
    /// An item for the client.
    Item(TurnItem),
    /// The turn failed (its last signal): the request answers with this error when
    /// the stream has not started, the stream ends with it otherwise.
    Failed(ApiError),
}

/// The items of a started turn: the first one (when it came before the turn was
/// seen to hold its session), then the rest.
pub(crate) struct Started {
    first: Option<TurnItem>,
    rx: mpsc::UnboundedReceiver<Signal>,
}

impl Started {
    /// The next item; `None` after the end.
    pub(crate) async fn next(&mut self) -> Option<TurnItem> {
        if let Some(item) = self.first.take() {
            return Some(item);
        }
        match self.rx.recv().await? {
            Signal::Item(item) => Some(item),
            Signal::Failed(error) => Some(error.end_item()),
        }
    }
}

/// Starts the turn of `task` (`env` holds its session and input) and waits until it
/// holds the session or fails.
pub(crate) async fn start(
    shared: &Shared,
    registry: &Arc<Registry>,
    agent: Arc<BoxAgent>,
    mut env: Env,
    task: &TaskRef,
) -> Result<Started, A2aError> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let held = Arc::new(Notify::new());
    env.extensions
        .insert(Sink::waking(Arc::new(AtomicBool::new(false)), held.clone()));
    let id = task.id();
    let token = CancellationToken::new();
    let done = CancellationToken::new();
    registry.running(&id, token.clone(), done.clone());
    let timeout = shared.timeout;
    let session = task.session.clone();
    let registry_of_turn = registry.clone();
    let id_of_turn = id.clone();
    shared.turns.spawn(async move {
        let mut stream = agent.stream_owned(env);
        let drive = async {
            let mut end = None;
            while let Some(item) = stream.next_item().await {
                if matches!(item, TurnItem::End { .. }) {
                    end = Some(item);
                } else {
                    let _ = tx.send(Signal::Item(crate::error::shown_item(item)));
                }
            }
            (end, stream.take_result())
        };
        let signal = tokio::select! {
            () = token.cancelled() => Signal::Item(TurnItem::End {
                result: TurnResult::Exited { reason: CANCELED.to_owned() },
            }),
            outcome = tokio::time::timeout(timeout, drive) => match outcome {
                Err(_) => Signal::Failed(ApiError::timeout(
                    &format!("the turn of session `{session}`"),
                    timeout,
                )),
                Ok((_, Some(Err(error)))) => Signal::Failed(ApiError::turn(&session, &error)),
                Ok((Some(end), _)) => Signal::Item(end),
                Ok((None, _)) => Signal::Failed(ApiError::new(
                    axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                    "turn",
                    format!("session `{session}`: the turn's stream ended without its end"),
                )),
            },
        };
        drop(stream);
        let ended = match &signal {
            Signal::Failed(error) => Some((
                TaskState::Failed,
                ended_why(&TurnResult::Failed {
                    error: error.failed_text(),
                }),
            )),
            Signal::Item(TurnItem::End { result }) => match result {
                TurnResult::Exited { reason } if reason == CANCELED => {
                    Some((TaskState::Canceled, vec![Part::text(CANCELED)]))
                }
                TurnResult::Completed { .. } | TurnResult::Paused { .. } => None,
                other => Some((TaskState::Failed, ended_why(other))),
            },
            _ => None,
        };
        registry_of_turn.finished(&id_of_turn, ended);
        done.cancel();
        let _ = tx.send(signal);
    });
    // The turn holds its session once an event inside it was seen (the mark wakes
    // `held`); an item or a failure before that comes first on the channel.
    let first = tokio::select! {
        biased;
        () = held.notified() => return Ok(Started { first: None, rx }),
        signal = rx.recv() => signal,
    };
    let first = match first {
        Some(Signal::Item(item)) => Some(item),
        Some(Signal::Failed(error)) => {
            registry.forget(&id);
            return Err(error.into());
        }
        None => {
            registry.forget(&id);
            return Err(A2aError::Internal(format!(
                "task `{id}`: the turn ended without a result"
            )));
        }
    };
    Ok(Started { first, rx })
}

/// Why a turn that ended without an answer ended: the parts of the task's status
/// message. A failed turn's says what failed and has a data part `{"kind": ..}`
/// with the error's stable kind (the `type` of the server's JSON errors).
pub(crate) fn ended_why(result: &TurnResult) -> Vec<Part> {
    let text = match result {
        TurnResult::Exited { reason } => format!("the turn ended early: {reason}"),
        TurnResult::Failed { error } => {
            let (kind, message) = crate::error::split_failure(error);
            return vec![Part::text(message), Part::data(json!({ "kind": kind }))];
        }
        TurnResult::Unfinished => "the turn ended without a final answer".to_owned(),
        _ => "the turn ended without an answer".to_owned(),
    };
    vec![Part::text(text)]
}
