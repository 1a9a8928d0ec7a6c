//! Runs one turn inside the request that asked for it, as a [`brute::stream::TurnStream`]
//! that the response body polls: no task and no channel per turn. [`start`] polls the
//! turn until it holds its session (or fails), so that a turn that cannot start (a
//! busy session) is an error the request answers with, before any byte of a stream.
//!
//! A client that goes away does not cancel the turn: when the response body is
//! dropped before the turn's end, the rest of the turn moves to a task of its own
//! (it finishes and is stored, and the session's history shows it). Graceful shutdown
//! waits for every turn, in a request or on such a task (each holds a token of the
//! server's tracker).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::Response;
use brute::stream::{TurnItem, TurnStream};
use brute::{BoxAgent, Env};
use futures_util::Stream;
use tokio::time::{Instant, Sleep};
use tokio_util::task::TaskTracker;
use tokio_util::task::task_tracker::TaskTrackerToken;

use crate::encode;
use crate::error::ApiError;
use crate::live::Sink;
use crate::sessions::Forget;
use crate::state::Shared;

/// How long a stream may stay silent before it sends a keep-alive comment.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// A turn that holds its session: its items, to be streamed.
pub(crate) struct Started {
    first: Option<TurnItem>,
    turn: Turn,
}

impl Started {
    /// The turn's items, ending with [`TurnItem::End`] (a turn that failed or timed
    /// out ends with an `End` that says so).
    pub(crate) fn items(self) -> impl Stream<Item = TurnItem> + Send + 'static {
        let Started {
            mut first,
            mut turn,
        } = self;
        futures_util::stream::poll_fn(move |cx| {
            if let Some(item) = first.take() {
                return Poll::Ready(Some(item));
            }
            loop {
                return Poll::Ready(match ready!(turn.poll_step(cx)) {
                    None => None,
                    Some(Step::Item(item)) => Some(item),
                    Some(Step::Failed(error)) => Some(failed(&error)),
                    Some(Step::Idle) => continue,
                });
            }
        })
    }

    /// The SSE response of the turn: one event per item, named by its `type`, the
    /// item as JSON its data, and a keep-alive comment every 15 s.
    pub(crate) fn sse(self) -> Response {
        let Started {
            mut first,
            mut turn,
        } = self;
        encode::response(futures_util::stream::poll_fn(move |cx| {
            if let Some(item) = first.take() {
                return Poll::Ready(Some(encode::item(&item)));
            }
            Poll::Ready(match ready!(turn.poll_step(cx)) {
                None => None,
                Some(Step::Item(item)) => Some(encode::item(&item)),
                Some(Step::Failed(error)) => Some(encode::item(&failed(&error))),
                Some(Step::Idle) => Some(Bytes::from_static(encode::KEEP_ALIVE)),
            })
        }))
    }
}

/// Starts a turn of `agent` on `env` (its session already in the extensions) and
/// polls it until it holds the session or fails. `forget` deletes the session once
/// the turn has ended, before its last item is given.
pub(crate) async fn start(
    shared: &Shared,
    agent: Arc<BoxAgent>,
    mut env: Env,
    session: &str,
    forget: Option<Forget>,
) -> Result<Started, ApiError> {
    let held = Arc::new(AtomicBool::new(false));
    env.extensions.insert(Sink::new(held.clone()));
    let now = Instant::now();
    let deadline = now + shared.timeout;
    let mut turn = Turn {
        state: Some(State {
            stream: Some(agent.stream_owned(env)),
            end: None,
            session: session.to_owned(),
            timeout: shared.timeout,
            deadline,
            wake: deadline.min(now + KEEP_ALIVE),
            timer: None,
            forget,
            forgetting: None,
            last: None,
            tracker: shared.turns.clone(),
            _token: shared.turns.token(),
            detached: false,
        }),
    };
    let first = std::future::poll_fn(|cx| {
        loop {
            return match turn.poll_step(cx) {
                Poll::Ready(Some(Step::Item(item))) => Poll::Ready(Ok(Some(item))),
                Poll::Ready(Some(Step::Failed(error))) => Poll::Ready(Err(error)),
                Poll::Ready(Some(Step::Idle)) => continue,
                Poll::Ready(None) => Poll::Ready(Err(ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "turn",
                    format!("session `{session}`: the turn ended without a result"),
                ))),
                // Any event inside the turn means that it holds its session.
                Poll::Pending if held.load(Ordering::Relaxed) => Poll::Ready(Ok(None)),
                Poll::Pending => Poll::Pending,
            };
        }
    })
    .await?;
    Ok(Started { first, turn })
}

/// What a turn gives next.
enum Step {
    /// An item for the client.
    Item(TurnItem),
    /// The turn failed (its last step): the request answers with this error when the
    /// stream has not started, the stream ends with it otherwise.
    Failed(ApiError),
    /// Nothing for [`KEEP_ALIVE`]: time for a keep-alive.
    Idle,
}

/// A running turn; `None` once its last step was given.
struct Turn {
    state: Option<State>,
}

struct State {
    /// The turn, until it ends (or times out).
    stream: Option<TurnStream<'static>>,
    /// The `End` item, once the stream gave it (the stream ends right after).
    end: Option<TurnItem>,
    session: String,
    timeout: Duration,
    deadline: Instant,
    /// When the timer fires: the next keep-alive or the deadline.
    wake: Instant,
    /// Made at the turn's first wait (a turn that never waits needs none).
    timer: Option<Pin<Box<Sleep>>>,
    forget: Option<Forget>,
    /// The deletion of the session, after the turn and before its last step.
    forgetting: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    /// The last step, given once `forgetting` is done.
    last: Option<Step>,
    tracker: TaskTracker,
    /// Graceful shutdown waits for the turn while this lives.
    _token: TaskTrackerToken,
    /// On a task of its own already: dropping it cancels it.
    detached: bool,
}

impl Turn {
    /// The next step; `None` after the last.
    fn poll_step(&mut self, cx: &mut Context<'_>) -> Poll<Option<Step>> {
        let Some(state) = self.state.as_mut() else {
            return Poll::Ready(None);
        };
        let (step, last) = ready!(state.poll(cx));
        if last {
            self.state = None;
        }
        Poll::Ready(Some(step))
    }
}

impl Drop for Turn {
    /// A client gone before the turn's end: the rest of the turn runs on a task.
    fn drop(&mut self) {
        let Some(mut state) = self.state.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if state.detached {
            return;
        }
        state.detached = true;
        let tracker = state.tracker.clone();
        let mut turn = Turn { state: Some(state) };
        tracker.spawn_on(
            std::future::poll_fn(move |cx| {
                while ready!(turn.poll_step(cx)).is_some() {}
                Poll::Ready(())
            }),
            &runtime,
        );
    }
}

impl State {
    /// The next step, and whether it is the last.
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<(Step, bool)> {
        loop {
            if let Some(forgetting) = self.forgetting.as_mut() {
                ready!(forgetting.as_mut().poll(cx));
                self.forgetting = None;
                return Poll::Ready((self.last.take().unwrap_or(Step::Idle), true));
            }
            let Some(stream) = self.stream.as_mut() else {
                return Poll::Ready((self.last.take().unwrap_or(Step::Idle), true));
            };
            let last = match Pin::new(&mut *stream).poll_next(cx) {
                Poll::Ready(Some(end @ TurnItem::End { .. })) => {
                    // The stream ends once the turn returns (its lease released).
                    self.end = Some(end);
                    continue;
                }
                Poll::Ready(Some(item)) => {
                    return Poll::Ready((Step::Item(crate::error::shown_item(item)), false));
                }
                Poll::Ready(None) => match (stream.take_result(), self.end.take()) {
                    (Some(Err(error)), _) => Step::Failed(ApiError::turn(&self.session, &error)),
                    (_, Some(end)) => Step::Item(end),
                    (_, None) => Step::Failed(ApiError::new(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "turn",
                        format!(
                            "session `{}`: the turn's stream ended without its end",
                            crate::session_id::shown(&self.session)
                        ),
                    )),
                },
                Poll::Pending => {
                    let wake = self.wake;
                    let timer = self
                        .timer
                        .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(wake)));
                    ready!(timer.as_mut().poll(cx));
                    if Instant::now() < self.deadline {
                        self.wake = self.deadline.min(Instant::now() + KEEP_ALIVE);
                        timer.as_mut().reset(self.wake);
                        return Poll::Ready((Step::Idle, false));
                    }
                    Step::Failed(ApiError::timeout(
                        &format!("the turn of session `{}`", self.session),
                        self.timeout,
                    ))
                }
            };
            // The turn is over (or stopped): its future goes, then the session if it
            // is to be forgotten, then the last step.
            self.stream = None;
            self.timer = None;
            match self.forget.take() {
                Some(forget) => {
                    self.forgetting = Some(Box::pin(forget.now()));
                    self.last = Some(last);
                }
                None => return Poll::Ready((last, true)),
            }
        }
    }
}

/// The end item of a turn that failed after its stream started.
fn failed(error: &ApiError) -> TurnItem {
    error.end_item()
}
