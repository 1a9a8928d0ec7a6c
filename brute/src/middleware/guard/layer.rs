//! `Guardrail`: the layer that asks a [`Guard`] about a turn's text and tool calls.

use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;

use super::check::{Check, DeltaFilter, GUARDRAIL, Guard, Stage, blocked_message};
use crate::cost::Cost;
use crate::env::{Env, EventHandler, Listeners};
use crate::error::Error;
use crate::event::{Event, EventKind};
use crate::handler::Handler;
use crate::message::{Message, Role};
use crate::stop::ExitReason;
use crate::usage::Usage;

/// Guards a turn: asks a [`Guard`] about the prompt and tool results before the
/// model sees them, about the reply before it is stored or reaches the caller, and
/// about each tool call before it runs. Each check passes, rewrites, or blocks.
///
/// A rewrite replaces the text (or the call's arguments) in the conversation, so the
/// session stores the rewritten form. A block ends the turn: the reply of that pass,
/// if any, is dropped unseen, an assistant message saying why takes its place (stored
/// like any reply; [`blocked_reason`](super::blocked_reason) reads it back), and the turn
/// stops with [`ExitReason::Blocked`]. A prompt blocked before the model call never
/// reaches the model; the prompt itself is stored as it was (rewrite it, with
/// [`Action::Redact`](super::Action::Redact) say, to keep a value out of the store).
///
/// Streamed replies are filtered before the caller sees them: the guard's
/// [`DeltaFilter`] (for [`PiiGuard`](super::PiiGuard), the text but its unfinished
/// last word), or, for a guard without one, the whole reply held back until it was
/// checked. The reply's [`Event::ModelResponse`] is sent after the check, with the
/// message as it is stored.
///
/// # Options
///
/// | option | type | default | what it is |
/// |---|---|---|---|
/// | `guard` | `impl` [`Guard`] | (required) | the checks |
/// | `concurrent` | `bool` | `false` | check the input while the model call runs (the model call is dropped when the input is blocked; a rewrite then applies to what is stored, not to what the model saw) |
///
/// Placement: no loop and no tool pipeline below it (`forbids_inner = Loops`,
/// `forbids_inner = ToolPipeline`), so it sees every reply before its tool calls
/// run; checked at compile time. Put it right above `run`.
///
/// ```
/// use brute::middleware::guard::{Action, Pii, PiiGuard};
/// use brute::middleware::Guardrail;
/// use brute::{ExitReason, Message, StopReason, brute_agent};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let agent = brute_agent! {
///     use Guardrail { guard: PiiGuard::new().detect(Pii::Card, Action::Block), concurrent: true };
///     run |_env| async { Ok(Message::assistant("noted")) };
/// };
/// let outcome = agent.start("my card is 4111-1111-1111-1111").await?;
/// assert_eq!(
///     outcome.stop,
///     StopReason::Exited(ExitReason::Blocked {
///         by: "Guardrail",
///         stage: "input",
///         reason: "the prompt contains a card number".into(),
///     })
/// );
/// # Ok::<(), brute::Error>(()) }).unwrap();
/// ```
#[derive(crate::Middleware, Debug, Clone)]
#[middleware(
    crate = crate,
    forbids_inner = crate::kind::Loops,
    forbids_inner = crate::kind::ToolPipeline
)]
pub struct Guardrail<A, G> {
    app: A,
    /// The checks.
    #[middleware(bound = Guard)]
    guard: G,
    /// Check the input while the model call runs.
    concurrent: bool,
}

/// A blocked check: where, and why.
fn blocked(stage: Stage, reason: String) -> ExitReason {
    ExitReason::Blocked {
        by: GUARDRAIL,
        stage: stage.name(),
        reason,
    }
}

/// Replaces the message at `index` by `fix`ing it: a rewrite from its position, the
/// messages after it appended again.
fn rewrite_at(env: &mut Env, index: usize, fix: impl FnOnce(&mut Message)) {
    let mut tail: Vec<Message> = env.messages.as_slice()[index..].to_vec();
    if let Some(first) = tail.first_mut() {
        fix(first);
    }
    env.messages.truncate(index);
    env.messages.extend(tail);
}

/// The messages the model has not answered yet: the prompt or the tool results after
/// the last assistant message, with the stage each is checked at.
fn unanswered(env: &Env) -> Vec<(usize, Stage)> {
    let messages = env.messages.as_slice();
    let start = messages
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .map_or(0, |i| i + 1);
    (start..messages.len())
        .filter_map(|i| match messages[i].role {
            Role::User => Some((i, Stage::Input)),
            Role::Tool => Some((i, Stage::ToolResult)),
            _ => None,
        })
        .collect()
}

/// What the input checks decided: the rewrites, and the block that stopped them.
type InputChecks = (Vec<(usize, String)>, Option<ExitReason>);

/// Asks `guard` about each input in turn, up to the first block.
async fn check_inputs<G: Guard>(guard: &G, inputs: &[(usize, Stage, String)]) -> InputChecks {
    let mut rewrites = Vec::new();
    for (index, stage, text) in inputs {
        match guard.check(text, *stage).await {
            Check::Pass => {}
            Check::Rewrite(text) => rewrites.push((*index, text)),
            Check::Block(reason) => return (rewrites, Some(blocked(*stage, reason))),
        }
    }
    (rewrites, None)
}

/// Ends the turn blocked: drops what the pass added from `from` on, and says why.
fn block(env: &mut Env, from: usize, reason: ExitReason) {
    env.messages.truncate(from);
    env.messages.push(blocked_message(&reason));
    env.exit(reason);
}

impl<A: Handler<Env>, G: Guard> Handler<Env> for Guardrail<A, G> {
    const WATCHED: bool = false;

    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        let inputs: Vec<(usize, Stage, String)> = unanswered(env)
            .into_iter()
            .map(|(i, stage)| (i, stage, env.messages[i].content.clone()))
            .collect();
        if !self.concurrent || inputs.is_empty() {
            let (rewrites, stop) = check_inputs(&self.guard, &inputs).await;
            for (index, text) in rewrites {
                rewrite_at(env, index, |m| m.content = text);
            }
            if let Some(reason) = stop {
                let end = env.messages.len();
                block(env, end, reason);
                return env.persist().await;
            }
            return self
                .model_pass(env, None::<std::future::Ready<InputChecks>>)
                .await;
        }
        let checks = check_inputs(&self.guard, &inputs);
        self.model_pass(env, Some(checks)).await
    }
}

/// What the interceptor of a pass saw: the streamed text held back, and the reply's
/// usage and cost, for the `ModelResponse` sent after the check.
struct Seen {
    filter: Option<Box<dyn DeltaFilter>>,
    held: bool,
    response: Option<(Option<Usage>, Option<Cost>)>,
    /// What a delta released, kept to reuse its buffer.
    out: String,
}

/// The handlers set aside while a pass is intercepted, and what they were not yet sent.
struct Intercepted {
    saved: Option<Arc<Listeners>>,
    seen: Arc<Mutex<Seen>>,
}

impl Intercepted {
    /// Intercepts the deltas and the reply of one pass, when someone listens to them.
    fn install(
        env: &mut Env,
        filter: impl FnOnce() -> Option<Box<dyn DeltaFilter>>,
    ) -> Option<Intercepted> {
        let deltas = env.listens(EventKind::ContentDelta);
        if !deltas && !env.listens(EventKind::ModelResponse) {
            return None;
        }
        let seen = Arc::new(Mutex::new(Seen {
            filter: filter(),
            held: false,
            response: None,
            out: String::new(),
        }));
        let state = seen.clone();
        let handler = move |forward: Option<Arc<Listeners>>| -> EventHandler {
            Arc::new(move |env, event| {
                let mut seen = state.lock().unwrap_or_else(PoisonError::into_inner);
                let seen = &mut *seen;
                match event {
                    Event::ContentDelta(text) => {
                        let Some(filter) = seen.filter.as_mut() else {
                            seen.held = true;
                            return;
                        };
                        seen.out.clear();
                        filter.push(text, &mut seen.out);
                        if let Some(listeners) = forward.as_deref()
                            && !seen.out.is_empty()
                        {
                            listeners.dispatch(env, &Event::ContentDelta(&seen.out));
                        }
                        return;
                    }
                    Event::ModelResponse { usage, cost, .. } => {
                        seen.response = Some((usage.cloned(), *cost));
                        return;
                    }
                    Event::Retry { .. } => {
                        // The failed attempt's text belongs to no answer.
                        if let Some(filter) = seen.filter.as_mut() {
                            filter.finish(&mut String::new());
                        }
                        seen.held = false;
                    }
                    _ => {}
                }
                if let Some(listeners) = forward.as_deref() {
                    listeners.dispatch(env, event);
                }
            })
        };
        let kinds: &[EventKind] = if deltas {
            &[
                EventKind::ContentDelta,
                EventKind::ModelResponse,
                EventKind::Retry,
            ]
        } else {
            &[EventKind::ModelResponse]
        };
        let listeners = env.intercept(kinds, handler);
        Some(Intercepted {
            saved: listeners,
            seen,
        })
    }

    /// The reply is complete: what the filter still held, to send once it was checked.
    fn finish(&self) -> String {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let mut rest = String::new();
        if let Some(filter) = seen.filter.as_mut() {
            filter.finish(&mut rest);
        }
        rest
    }

    /// Puts the handlers back and sends them the rest of the reply's text and its
    /// `ModelResponse`, with `reply` as checked (`blocked`: nothing more of the text).
    fn restore(self, env: &mut Env, reply: Option<usize>, blocked: bool, mut rest: String) {
        env.restore_listeners(self.saved);
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(index) = reply else { return };
        let message = &env.messages[index];
        if seen.held && !blocked {
            rest = message.content.clone();
        }
        if !rest.is_empty() && !blocked {
            env.emit(Event::ContentDelta(&rest));
        }
        if let Some((usage, cost)) = seen.response.take() {
            env.emit(Event::ModelResponse {
                message,
                usage: usage.as_ref(),
                cost,
            });
        }
    }
}

impl<A: Handler<Env>, G: Guard> Guardrail<A, G> {
    /// One model call with its reply checked before it is stored: the persistence is
    /// set aside for the call, so the terminal stores nothing, and taken up again after
    /// the check. With `inputs`, the input checks run while the model call does.
    async fn model_pass(
        &self,
        env: &mut Env,
        inputs: Option<impl Future<Output = InputChecks> + Send>,
    ) -> Result<(), Error> {
        if env.persists() {
            env.persist().await?;
        }
        let recorded = env.messages.mark().recorded();
        let sink = env.take_persist();
        let intercepted = Intercepted::install(env, || self.guard.deltas());
        let before = env.messages.len();
        let (result, input) = match inputs {
            None => (self.app.call(env).await, None),
            Some(checks) => race(checks, self.app.call(env)).await,
        };
        let rest = intercepted
            .as_ref()
            .map(Intercepted::finish)
            .unwrap_or_default();
        let stop = match (&result, input.as_ref().and_then(|(_, stop)| stop.clone())) {
            (_, Some(stop)) => Some(stop),
            (Ok(()), None) => self.check_outputs(env, before).await,
            (Err(_), None) => None,
        };
        if let Some(reason) = &stop {
            block(env, before, reason.clone());
        }
        let reply = (env.messages.len() > before).then(|| env.messages.len() - 1);
        if let Some(intercepted) = intercepted {
            intercepted.restore(env, reply, stop.is_some(), rest);
        }
        if let Some(sink) = sink {
            env.set_persist(sink, recorded);
        }
        // Input rewrites change stored messages: made once the persistence is back.
        for (index, text) in input.map(|(rewrites, _)| rewrites).unwrap_or_default() {
            rewrite_at(env, index, |m| m.content = text);
        }
        if result.is_err() && stop.is_none() {
            return result;
        }
        env.persist().await
    }

    /// Checks the reply (its text, then its tool calls) and applies rewrites; the
    /// block, if any.
    async fn check_outputs(&self, env: &mut Env, before: usize) -> Option<ExitReason> {
        for index in before..env.messages.len() {
            let message = &env.messages[index];
            if message.role != Role::Assistant {
                continue;
            }
            let mut content = None;
            if !message.content.is_empty() {
                match self.guard.check(&message.content, Stage::Output).await {
                    Check::Pass => {}
                    Check::Rewrite(text) => content = Some(text),
                    Check::Block(reason) => return Some(blocked(Stage::Output, reason)),
                }
            }
            let mut arguments = Vec::new();
            for (call, tool_call) in message.tool_calls.iter().enumerate() {
                match self.guard.check_call(tool_call).await {
                    Check::Pass => {}
                    Check::Rewrite(value) => arguments.push((call, value)),
                    Check::Block(reason) => return Some(blocked(Stage::ToolCall, reason)),
                }
            }
            if content.is_some() || !arguments.is_empty() {
                rewrite_at(env, index, |m| {
                    if let Some(text) = content {
                        m.content = text;
                    }
                    for (call, value) in arguments {
                        m.tool_calls[call].arguments = value;
                    }
                });
            }
        }
        None
    }
}

/// Runs the input checks and the model call together: a block ends the call at once
/// (its future is dropped); otherwise both finish.
async fn race<C, M>(checks: C, model: M) -> (Result<(), Error>, Option<InputChecks>)
where
    C: Future<Output = InputChecks>,
    M: Future<Output = Result<(), Error>>,
{
    let (mut checks, mut model) = (pin!(checks), pin!(model));
    let (mut input, mut result) = (None, None);
    std::future::poll_fn(|cx| {
        if input.is_none()
            && let Poll::Ready(done) = checks.as_mut().poll(cx)
        {
            input = Some(done);
        }
        if input.as_ref().is_some_and(|(_, stop)| stop.is_some()) {
            return Poll::Ready(());
        }
        if result.is_none()
            && let Poll::Ready(done) = model.as_mut().poll(cx)
        {
            result = Some(done);
        }
        if input.is_some() && result.is_some() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    (result.unwrap_or(Ok(())), input)
}
