//! `Retry`: tries a failed model call again when the failure is transient.

use std::time::Duration;

use super::backoff::{Draws, backoff};
use crate::trace::traced;

use crate::env::Env;
use crate::error::Error;
use crate::event::Event;
use crate::handler::Handler;

/// Retries transient model errors ([`ModelError::is_transient`](crate::ModelError::is_transient):
/// rate limits, server errors, timeouts, dropped connections) with exponential backoff
/// and jitter, honouring the server's retry-after hint.
///
/// Put it just above `run`, inside the loop and below the tool pipeline, so that only
/// the model call is repeated: a tool pipeline inside it would run tools again on a
/// retry, so that is a compile error (`forbids_inner = ToolPipeline`). Each retry emits [`Event::Retry`]. Messages that the
/// layers below it appended during a failed attempt are removed before the next one,
/// so a retried call never duplicates a message (the terminal itself appends only on
/// success).
///
/// The wait after failed attempt `n` is `base_delay * 2^(n-1)`, at most `max_delay`;
/// with `jitter` it is drawn between half of that and all of it. A retry-after hint
/// replaces the computed wait; a hint longer than `max_retry_after` is not waited for:
/// the error is returned at once.
///
/// `attempts` bounds the retries of one model call; `turn_retries` is a budget for the
/// whole turn, so that a turn of many model calls against a failing provider does not
/// multiply its calls by `attempts`. The retries spent are kept in the env and start
/// again with the loop's first pass.
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use std::time::Duration;
/// use brute::{Error, Message, ModelError, brute_agent, middleware::Retry};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let calls = AtomicU32::new(0);
/// let agent = brute_agent! {
///     use Retry { attempts: 3, base_delay: Duration::from_millis(1) };
///     run |_env| {
///         let n = calls.fetch_add(1, Ordering::Relaxed);
///         async move {
///             if n == 0 {
///                 return Err(Error::Model(ModelError::Server { status: 503, message: "busy".into() }));
///             }
///             Ok(Message::assistant("done"))
///         }
///     };
/// };
/// let outcome = agent.start("go").await?;
/// assert_eq!(outcome.text(), Some("done"));
/// assert_eq!(outcome.env.messages.len(), 2);
/// # Ok::<(), brute::Error>(()) }).unwrap();
/// ```
///
/// # Options
///
/// | option | type | default | what it is |
/// |---|---|---|---|
/// | `attempts` | `u32` | `4` | attempts in all, the first included; `1` never retries |
/// | `base_delay` | `Duration` | 1 s | the wait after the first failure, doubled after each further one |
/// | `max_delay` | `Duration` | 60 s | the longest computed wait |
/// | `jitter` | `bool` | `true` | draw each wait between half of it and all of it |
/// | `max_retry_after` | `Duration` | 300 s | the longest retry-after hint waited for; a longer one fails at once |
/// | `seed` | `Option<u64>` | `None`: random | draw the jitter from this seed, the same waits on every run (for tests) |
/// | `turn_retries` | `u32` | `u32::MAX` (none) | the retry budget: retries a turn may make in all, across its model calls; once spent, a failure is returned at once |
///
/// Placement: no tool pipeline inside it (`forbids_inner = ToolPipeline`).
#[derive(crate::Middleware, Debug, Clone)]
#[middleware(crate = crate, forbids_inner = crate::kind::ToolPipeline)]
pub struct Retry<A> {
    app: A,
    /// Attempts in all, the first included; `1` never retries.
    #[middleware(default = 4)]
    attempts: u32,
    /// The wait after the first failure; it doubles after each further failure.
    #[middleware(default = Duration::from_secs(1))]
    base_delay: Duration,
    /// The longest computed wait between two attempts.
    #[middleware(default = Duration::from_secs(60))]
    max_delay: Duration,
    /// Draw each computed wait between half of it and all of it, so that clients that
    /// failed together do not retry together.
    #[middleware(default = true)]
    jitter: bool,
    /// The longest retry-after hint waited for; a longer one fails at once.
    #[middleware(default = Duration::from_secs(300))]
    max_retry_after: Duration,
    /// Draw the jitter from this seed (the same waits on every run) instead of at
    /// random: for tests.
    seed: Option<u64>,
    /// Retries a turn may make in all, across its model calls (default: no budget
    /// beyond `attempts` per call).
    #[middleware(default = u32::MAX)]
    turn_retries: u32,
    #[middleware(state)]
    draws: Draws,
}

/// The retries of the turn so far, kept in the env (reset when the loop's first pass
/// starts, as `env.iteration` is).
#[derive(Clone, Copy, Debug, Default)]
struct RetriesSpent(u32);

impl<A> Retry<A> {
    /// The wait after failed attempt `attempt` (1 for the first) without a hint.
    fn backoff(&self, attempt: u32) -> Duration {
        let draw = self.jitter.then(|| self.draws.next(self.seed));
        backoff(self.base_delay, self.max_delay, attempt, draw)
    }
}

impl<A: Handler<Env>> Handler<Env> for Retry<A> {
    const WATCHED: bool = false;

    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        let span = tracing::info_span!(
            "brute.retry",
            brute.layer = "Retry",
            brute.retry.attempts = tracing::field::Empty,
        );
        let record = span.clone();
        traced!(self.attempts(env, &record), span)
    }
}

impl<A: Handler<Env>> Retry<A> {
    /// The attempts, inside the layer's span (`record`).
    async fn attempts(&self, env: &mut Env, record: &tracing::Span) -> Result<(), Error> {
        let mut attempt = 1;
        let budgeted = self.turn_retries != u32::MAX;
        if budgeted && env.iteration <= 1 {
            env.extensions.insert(RetriesSpent(0));
        }
        loop {
            let before = env.messages.len();
            let spent = if budgeted {
                env.extensions.get::<RetriesSpent>().map_or(0, |s| s.0)
            } else {
                0
            };
            let error = match self.app.call(env).await {
                Err(Error::Model(error))
                    if error.is_transient()
                        && attempt < self.attempts
                        && spent < self.turn_retries =>
                {
                    error
                }
                other => {
                    record.record("brute.retry.attempts", attempt);
                    return other;
                }
            };
            let delay = match error.retry_after() {
                Some(hint) if hint > self.max_retry_after => {
                    record.record("brute.retry.attempts", attempt);
                    return Err(Error::Model(error));
                }
                Some(hint) => hint,
                None => self.backoff(attempt),
            };
            env.messages.truncate(before);
            tracing::warn!(
                brute.retry.attempt = attempt,
                brute.retry.delay_ms = delay.as_millis() as u64,
                error.message = %error,
                "model call failed, retrying"
            );
            env.emit(Event::Retry {
                attempt,
                delay,
                error: &error,
            });
            if budgeted {
                env.extensions.insert(RetriesSpent(spent.saturating_add(1)));
            }
            tokio::time::sleep(delay).await;
            attempt += 1;
        }
    }
}
