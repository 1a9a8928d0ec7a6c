//! [`TurnStream`]: a turn as a `Stream` of [`TurnItem`]s, and the `Agent` methods that
//! make one.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use futures_core::Stream;

use super::item::{KINDS, TurnItem};
use crate::agent::{Agent, Outcome};
use crate::env::{Env, EventHandler};
use crate::error::Error;
use crate::handler::Handler;
use crate::stop::{ApprovalDecision, ApprovalError, Verdict};

type Turn<'a> = Pin<Box<dyn Future<Output = Result<Outcome, Error>> + Send + 'a>>;
type Queue = Arc<Mutex<VecDeque<TurnItem>>>;

/// A turn as a [`Stream`] of [`TurnItem`]s: made by [`Agent::stream`].
///
/// The stream runs the turn itself: polling it drives the turn, and **dropping it
/// cancels the turn** (the turn's future is dropped, with its tool calls and their
/// processes). Every message the turn finished is already stored by `SessionLog`; a
/// message being streamed is not, and a call cut off before its result is given an
/// error result (see `SessionLog`), so the session stays a valid history.
///
/// The last item is always [`TurnItem::End`]; after it the stream ends, and
/// [`TurnStream::take_result`] gives the turn's [`Outcome`] or typed [`Error`].
pub struct TurnStream<'a> {
    turn: Option<Turn<'a>>,
    items: Queue,
    result: Option<Result<Outcome, Error>>,
}

impl<'a> TurnStream<'a> {
    /// Streams the turn `run` makes of `env` (after this stream's listener is added).
    fn new<F>(mut env: Env, run: impl FnOnce(Env) -> F) -> Self
    where
        F: Future<Output = Result<Outcome, Error>> + Send + 'a,
    {
        let items: Queue = Arc::default();
        let sink = items.clone();
        let handler: EventHandler = Arc::new(move |env, event| {
            if let Some(item) = TurnItem::from_event(env, event) {
                sink.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push_back(item);
            }
        });
        env.listen(&KINDS, handler);
        TurnStream {
            turn: Some(Box::pin(run(env))),
            items,
            result: None,
        }
    }

    /// The turn's result, once the stream has ended (`None` before, and after it was
    /// taken).
    pub fn take_result(&mut self) -> Option<Result<Outcome, Error>> {
        self.result.take()
    }

    /// The next item, or `None` after [`TurnItem::End`]: `stream.next()` without
    /// needing a stream extension trait.
    pub async fn next_item(&mut self) -> Option<TurnItem> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await
    }

    fn pop(&self) -> Option<TurnItem> {
        self.items
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()
    }
}

impl Stream for TurnStream<'_> {
    type Item = TurnItem;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<TurnItem>> {
        let this = self.get_mut();
        loop {
            if let Some(item) = this.pop() {
                return Poll::Ready(Some(item));
            }
            // Items are made only while the turn is polled (events are emitted from
            // inside it), so an empty queue and a pending turn mean: nothing yet.
            let Some(turn) = this.turn.as_mut() else {
                return Poll::Ready(None);
            };
            match turn.as_mut().poll(cx) {
                Poll::Ready(result) => {
                    this.turn = None;
                    this.result = Some(result);
                }
                Poll::Pending => return this.pop().map_or(Poll::Pending, |i| Poll::Ready(Some(i))),
            }
        }
    }
}

impl fmt::Debug for TurnStream<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TurnStream")
            .field("running", &self.turn.is_some())
            .field("result", &self.result)
            .finish_non_exhaustive()
    }
}

impl<S: Handler<Env>> Agent<S> {
    /// Runs one turn on `env` (see [`Agent::env`]) as a [`Stream`] of [`TurnItem`]s.
    /// Dropping the stream cancels the turn.
    ///
    /// ```
    /// use brute::{Message, brute_agent};
    /// use brute::stream::{TurnItem, TurnResult};
    /// use futures_util::StreamExt;
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let agent = brute_agent! { run |_env| async { Ok(Message::assistant("hi")) }; };
    /// let mut env = agent.env();
    /// env.messages.push(Message::user("hello"));
    /// let items: Vec<TurnItem> = agent.stream(env).collect().await;
    /// assert_eq!(
    ///     items.last(),
    ///     Some(&TurnItem::End { result: TurnResult::Completed { text: Some("hi".into()) } })
    /// );
    /// # })
    /// ```
    pub fn stream(&self, env: Env) -> TurnStream<'_> {
        TurnStream::new(env, |env| self.turn(env))
    }

    /// [`Agent::stream`] on a shared agent: the stream owns its handle, so it can
    /// outlive the caller (a server's response body).
    pub fn stream_owned(self: Arc<Self>, env: Env) -> TurnStream<'static>
    where
        S: 'static,
    {
        TurnStream::new(env, move |env| async move { self.turn(env).await })
    }

    /// Resumes a turn paused for approval ([`ExitReason::AwaitingApproval`](crate::ExitReason::AwaitingApproval)):
    /// applies `verdict` to the pending call `call_id` of the session `env` names (a
    /// [`SessionId`](crate::session::SessionId) or [`SessionPath`](crate::session::SessionPath)
    /// in its extensions, as for any turn), runs the call (approved or edited) or
    /// answers it with a denial, and goes on with the turn when no call waits any
    /// more. Works in any process that has the session's store: nothing of the paused
    /// turn is kept in memory.
    ///
    /// `env` carries no new message. A stack without `SessionLog` keeps nothing
    /// between turns: pass the paused turn's own env ([`Outcome::env`]) instead. To
    /// stream the resumed turn, put an
    /// [`ApprovalDecision`] in its extensions and call [`Agent::stream`].
    ///
    /// Fails with [`ApprovalError::NotPending`] (inside [`Error::Layer`], reached with
    /// [`Error::downcast_ref`]) when the call does not wait, and with
    /// [`ApprovalError::NotApplied`] when the stack has no tool pipeline.
    pub async fn decide(
        &self,
        mut env: Env,
        call_id: impl Into<String>,
        verdict: Verdict,
    ) -> Result<Outcome, Error> {
        let call_id = call_id.into();
        env.extensions
            .insert(ApprovalDecision::new(call_id.clone(), verdict));
        let outcome = self.turn(env).await?;
        if outcome.env.extensions.get::<ApprovalDecision>().is_some() {
            return Err(Error::from_layer(
                "Agent::decide",
                ApprovalError::NotApplied { call_id },
            ));
        }
        Ok(outcome)
    }
}
