//! Runs one turn on its own task, as a [`brute::stream::TurnStream`], and hands its
//! items over once the turn holds its session: a turn that cannot start (a busy
//! session) is an error the request answers with, before any byte of a stream.
//!
//! The task, not the response, drives the turn: a client that goes away does not
//! cancel it (it finishes and is stored, and the session's history shows it), and
//! graceful shutdown waits for it.

use std::sync::Arc;
use std::time::Duration;

use brute::stream::{TurnItem, TurnResult};
use brute::{BoxAgent, Env};
use futures_util::Stream;
use tokio::sync::mpsc;

use crate::error::ApiError;
use crate::live::{Signal, Sink};
use crate::sessions::Forget;
use crate::state::Shared;

/// The items of a started turn.
pub(crate) struct Started {
    first: Option<TurnItem>,
    rx: mpsc::UnboundedReceiver<Signal>,
}

impl Started {
    /// The turn's items, ending with [`TurnItem::End`].
    pub(crate) fn items(self) -> impl Stream<Item = TurnItem> + Send + 'static {
        let Started { first, rx } = self;
        futures_util::stream::unfold((first, rx, false), |(mut first, mut rx, done)| async move {
            if done {
                return None;
            }
            let item = match first.take() {
                Some(item) => item,
                None => loop {
                    match rx.recv().await? {
                        Signal::Started => continue,
                        Signal::Item(item) => break item,
                        Signal::Failed(error) => break failed(&error),
                    }
                },
            };
            let end = matches!(item, TurnItem::End { .. });
            Some((item, (None, rx, end)))
        })
    }
}

/// Starts a turn of `agent` on `env` (its session already in the extensions) and
/// waits until it holds the session or fails. `forget` deletes the session once the
/// turn has ended, before its last item is sent.
pub(crate) async fn start(
    shared: &Shared,
    agent: Arc<BoxAgent>,
    mut env: Env,
    session: &str,
    forget: Option<Forget>,
) -> Result<Started, ApiError> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    env.extensions.insert(Sink(tx.clone()));
    shared.turns.spawn(run(
        agent,
        env,
        tx,
        session.to_owned(),
        shared.timeout,
        forget,
    ));
    let first = match rx.recv().await {
        Some(Signal::Started) => None,
        Some(Signal::Item(item)) => Some(item),
        Some(Signal::Failed(error)) => return Err(error),
        None => {
            return Err(ApiError::new(
                axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                "turn",
                format!("session `{session}`: the turn ended without a result"),
            ));
        }
    };
    Ok(Started { first, rx })
}

/// The turn task: the stream under the request timeout, each item sent on, then its
/// end (or the error that ended it).
async fn run(
    agent: Arc<BoxAgent>,
    env: Env,
    tx: mpsc::UnboundedSender<Signal>,
    session: String,
    timeout: Duration,
    forget: Option<Forget>,
) {
    let mut stream = agent.stream_owned(env);
    let drive = async {
        let mut end = None;
        while let Some(item) = stream.next_item().await {
            if matches!(item, TurnItem::End { .. }) {
                end = Some(item);
            } else {
                let _ = tx.send(Signal::Item(item));
            }
        }
        (end, stream.take_result())
    };
    let signal = match tokio::time::timeout(timeout, drive).await {
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
    };
    drop(stream);
    if let Some(forget) = forget {
        forget.now().await;
    }
    let _ = tx.send(signal);
}

/// The end item of a turn that failed after its stream started.
fn failed(error: &ApiError) -> TurnItem {
    TurnItem::End {
        result: TurnResult::Failed {
            error: format!("{}: {}", error.kind, error.message),
        },
    }
}
