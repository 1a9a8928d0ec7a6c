//! `ToolRetry`: a per-call stage that runs a call again when its tool reports a
//! retryable failure, with exponential backoff and jitter.

use std::collections::HashMap;
use std::time::Duration;

use super::stages::{ToolCallEnv, ToolValidation};
use crate::error::Error;
use crate::handler::Handler;
use crate::middleware::backoff::{Draws, backoff};
use crate::tools::error::ToolError;
use crate::tools::set::ToolSet;

/// Runs a tool call again when the tool reports a failure it marked retryable
/// ([`ToolError::retryable`]), waiting between attempts with exponential backoff and
/// jitter. Other failures (unknown tool, bad arguments, denial, a plain
/// [`ToolError::Failed`]) are never retried.
///
/// A stage of the per-call [`pipeline!`](crate::pipeline!) of
/// [`DefaultToolPipeline`](super::DefaultToolPipeline), inside [`Validate`](super::Validate)
/// (checked at compile time): each further attempt checks the call again and runs it
/// afresh. Put it inside [`Snapshot`](super::Snapshot) too, as below, so that the
/// file's lock is held and its snapshot taken once across the attempts.
///
/// The wait after failed attempt `n` is `base_delay * 2^(n-1)`, at most `max_delay`;
/// with `jitter` it is drawn between half of that and all of it (from `seed` when one
/// is given, so that tests see the same waits on every run). When the next wait would
/// take the call's waits past `max_total_delay`, or the attempts are used up, the
/// last failure is the call's result, saying how many attempts were made. The call's
/// `timeout` covers all of its attempts and the waits between them.
///
/// Each retry is a `WARN` event in the call's `execute_tool` span, and the span's
/// `brute.tool.attempts` field says how many attempts the call took (written when it
/// took more than one). The tool pipeline emits no [`Event`](crate::Event) per
/// attempt: the call has one `ToolCallStart` and one `ToolResult`.
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use std::time::Duration;
/// use brute::{Message, ToolCall, brute_agent, middleware::Loop, providers::ScriptedModel, tool};
/// use brute::tools::{DefaultToolPipeline, Execute, Snapshot, ToolError, ToolRetry, Validate};
///
/// static CALLS: AtomicU32 = AtomicU32::new(0);
///
/// /// Reads the weather; the service is busy the first time.
/// #[tool]
/// async fn weather() -> Result<String, ToolError> {
///     if CALLS.fetch_add(1, Ordering::Relaxed) == 0 {
///         return Err(ToolError::retryable("the weather service is busy"));
///     }
///     Ok("sunny".into())
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let model = ScriptedModel::per_turn([
///     Message::tool_calls("", vec![ToolCall::new("c1", "weather", serde_json::json!({}))]),
///     Message::assistant("It is sunny."),
/// ]);
/// let agent = brute_agent! {
///     use Loop::ToolResult;
///     use DefaultToolPipeline {
///         tools: (Weather,),
///         pipeline: brute::pipeline! {
///             use Validate;
///             use Snapshot;
///             use ToolRetry { attempts: 3, base_delay: Duration::from_millis(1), per_tool: [("shell", 1)] };
///             run Execute;
///         },
///     };
///     run model;
/// };
/// let outcome = agent.start("Weather?").await?;
/// assert_eq!(outcome.env.messages[2].content, "sunny");
/// assert_eq!(CALLS.load(Ordering::Relaxed), 2);
/// # Ok::<(), brute::Error>(()) }).unwrap();
/// ```
///
/// # Options
///
/// | option | type | default | what it is |
/// |---|---|---|---|
/// | `attempts` | `u32` | `3` | attempts of every tool's call in all, the first included; `1` never retries |
/// | `per_tool` | `impl Into<`[`ToolAttempts`]`>` | none | attempts of single tools, overriding `attempts`: `[("fetch", 5), ("shell", 1)]` |
/// | `base_delay` | `Duration` | 500 ms | the wait after the first failure, doubled after each further one |
/// | `max_delay` | `Duration` | 30 s | the longest wait between two attempts |
/// | `max_total_delay` | `Duration` | 60 s | the most a call waits in all; a wait that would pass it is not made |
/// | `jitter` | `bool` | `true` | draw each wait between half of it and all of it |
/// | `seed` | `Option<u64>` | `None`: random | draw the jitter from this seed, the same waits on every run (for tests) |
///
/// Placement: a per-call stage, inside `Validate`, once per pipeline; checked at
/// compile time.
#[derive(crate::Middleware, Debug, Clone)]
#[middleware(crate = crate, inside = ToolValidation, unique)]
pub struct ToolRetry<A> {
    app: A,
    /// Attempts of every tool's call in all, the first included; `1` never retries.
    #[middleware(default = 3)]
    attempts: u32,
    /// Attempts of single tools, overriding `attempts`: `[("fetch", 5), ("shell", 1)]`.
    #[middleware(into)]
    per_tool: ToolAttempts,
    /// The wait after the first failure; it doubles after each further failure.
    #[middleware(default = Duration::from_millis(500))]
    base_delay: Duration,
    /// The longest wait between two attempts.
    #[middleware(default = Duration::from_secs(30))]
    max_delay: Duration,
    /// The most one call waits between its attempts in all.
    #[middleware(default = Duration::from_secs(60))]
    max_total_delay: Duration,
    /// Draw each wait between half of it and all of it, so that calls that failed
    /// together do not retry together.
    #[middleware(default = true)]
    jitter: bool,
    /// Draw the jitter from this seed (the same waits on every run) instead of at
    /// random: for tests.
    seed: Option<u64>,
    #[middleware(state)]
    draws: Draws,
}

/// Attempts of single tools for [`ToolRetry`], by tool name.
///
/// ```
/// use brute::tools::ToolAttempts;
///
/// let attempts = ToolAttempts::from([("fetch", 5), ("shell", 1)]);
/// assert_eq!(attempts.get("fetch"), Some(5));
/// assert_eq!(attempts.get("read"), None);
/// ```
#[derive(Clone, Debug, Default)]
pub struct ToolAttempts(HashMap<String, u32>);

impl ToolAttempts {
    /// The attempts of the tool `name`, if it has its own.
    pub fn get(&self, name: &str) -> Option<u32> {
        self.0.get(name).copied()
    }
}

impl<const N: usize> From<[(&str, u32); N]> for ToolAttempts {
    fn from(pairs: [(&str, u32); N]) -> Self {
        ToolAttempts(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }
}

impl From<HashMap<String, u32>> for ToolAttempts {
    fn from(map: HashMap<String, u32>) -> Self {
        ToolAttempts(map)
    }
}

impl<A> ToolRetry<A> {
    /// The attempts a call of `name` may make.
    fn attempts_of(&self, name: &str) -> u32 {
        self.per_tool.get(name).unwrap_or(self.attempts)
    }

    /// The wait after failed attempt `attempt` (1 for the first).
    fn wait(&self, attempt: u32) -> Duration {
        let draw = self.jitter.then(|| self.draws.next(self.seed));
        backoff(self.base_delay, self.max_delay, attempt, draw)
    }
}

impl<'a, A, T> Handler<ToolCallEnv<'a, T>> for ToolRetry<A>
where
    A: Handler<ToolCallEnv<'a, T>>,
    T: ToolSet,
{
    async fn call(&self, env: &mut ToolCallEnv<'a, T>) -> Result<(), Error> {
        let attempts = self.attempts_of(&env.call.name);
        if attempts <= 1 {
            return self.app.call(env).await;
        }
        let mut attempt = 1;
        let mut waited = Duration::ZERO;
        loop {
            self.app.call(env).await?;
            let error = match &env.result {
                Some(Err(error)) if error.is_retryable() => error,
                _ => break,
            };
            let delay = self.wait(attempt);
            if attempt >= attempts || waited.saturating_add(delay) > self.max_total_delay {
                if attempt > 1 {
                    let gave_up = format!("{error} (tried {attempt} times)");
                    env.result = Some(Err(ToolError::Failed(gave_up)));
                }
                break;
            }
            tracing::warn!(
                brute.tool.attempt = attempt,
                brute.tool.delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                error.message = %error,
                "tool call failed, retrying"
            );
            tokio::time::sleep(delay).await;
            waited += delay;
            attempt += 1;
            // The attempt before consumed the checked call: check it again.
            env.result = None;
            env.prepared = None;
            env.path = None;
            if !env.validate() {
                break;
            }
        }
        if attempt > 1 {
            tracing::Span::current().record("brute.tool.attempts", attempt);
        }
        Ok(())
    }
}
