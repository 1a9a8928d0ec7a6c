//! Runs one turn on its own task and hands its items over as a stream, once the turn
//! holds its session: a turn that cannot start (a busy session) is an error the
//! request answers with, before any byte of a stream.

use std::sync::Arc;
use std::time::Duration;

use brute::{BoxAgent, Env, StopReason};
use futures_util::Stream;
use tokio::sync::mpsc;

use crate::error::ApiError;
use crate::live::{Signal, Sink, TurnItem};
use crate::server::Shared;

/// The items of a started turn, its first one already received.
pub(crate) struct Started {
    first: Option<TurnItem>,
    rx: mpsc::UnboundedReceiver<Signal>,
    session: String,
}

impl Started {
    /// The turn's items, ending with [`TurnItem::End`].
    pub(crate) fn items(self) -> impl Stream<Item = TurnItem> + Send + 'static {
        let Started { first, rx, session } = self;
        futures_util::stream::unfold(
            (first, rx, session, false),
            |(mut first, mut rx, session, done)| async move {
                if done {
                    return None;
                }
                if let Some(item) = first.take() {
                    let end = matches!(item, TurnItem::End { .. });
                    return Some((item, (None, rx, session, end)));
                }
                loop {
                    let item = match rx.recv().await? {
                        Signal::Started => continue,
                        Signal::Item(item) => item,
                        Signal::Failed(error) => error_end(&error),
                    };
                    let end = matches!(item, TurnItem::End { .. });
                    return Some((item, (None, rx, session, end)));
                }
            },
        )
    }
}

/// Starts a turn of `agent` on `env` (its session already in the extensions) and
/// waits until it holds the session or fails.
pub(crate) async fn start(
    shared: &Shared,
    agent: Arc<BoxAgent>,
    mut env: Env,
    session: &str,
) -> Result<Started, ApiError> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    env.extensions.insert(Sink(tx.clone()));
    let name = session.to_owned();
    let timeout = shared.timeout;
    shared.turns.spawn(run(agent, env, tx, name, timeout));
    let first = loop {
        match rx.recv().await {
            Some(Signal::Started) => break None,
            Some(Signal::Item(item)) => break Some(item),
            Some(Signal::Failed(error)) => return Err(error),
            None => {
                return Err(ApiError::new(
                    axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                    "turn",
                    format!("session `{session}`: the turn ended without a result"),
                ));
            }
        }
    };
    Ok(Started {
        first,
        rx,
        session: session.to_owned(),
    })
}

/// The turn task: the turn under the request timeout, then its end item.
async fn run(
    agent: Arc<BoxAgent>,
    env: Env,
    tx: mpsc::UnboundedSender<Signal>,
    session: String,
    timeout: Duration,
) {
    let signal = match tokio::time::timeout(timeout, agent.turn(env)).await {
        Err(_) => Signal::Failed(ApiError::timeout(
            &format!("the turn of session `{session}`"),
            timeout,
        )),
        Ok(Err(error)) => Signal::Failed(ApiError::turn(&session, &error)),
        Ok(Ok(outcome)) => {
            let text = outcome.text().map(str::to_owned);
            let (stop, reason) = match &outcome.stop {
                StopReason::Completed => ("completed", None),
                StopReason::Exited(reason) => ("exited", Some(reason.to_string())),
                _ => ("unfinished", None),
            };
            Signal::Item(TurnItem::End {
                stop: stop.to_owned(),
                text,
                reason,
                error: None,
            })
        }
    };
    let _ = tx.send(signal);
}

/// The end item of a turn that failed after its stream started.
fn error_end(error: &ApiError) -> TurnItem {
    TurnItem::End {
        stop: "error".to_owned(),
        text: None,
        reason: None,
        error: Some(format!("{}: {}", error.kind, error.message)),
    }
}
