//! `MaxIterations`: the guard inside a loop.

use crate::env::Env;
use crate::error::Error;
use crate::handler::Handler;
use crate::message::Message;
use crate::stop::{ExitReason, PassLimit};
use crate::trace::{in_span, traced};

/// What `MaxIterations` does when the limit is reached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum LimitMode {
    /// End the turn with the partial result and `should_exit` set to
    /// [`ExitReason::Limit`].
    #[default]
    End,
    /// End the turn with [`Error::Stopped`].
    Error,
    /// Tell the model, with a user message, how many passes remain once that number
    /// drops to `remaining`; then end as [`LimitMode::End`].
    Warn {
        /// Start warning when this many passes remain.
        remaining: u32,
    },
}

/// Limits how many passes a loop makes in one turn.
///
/// Sits inside a loop layer (checked at compile time). After the `max`-th pass it tells
/// the loop, through [`Env::pass_limit`], that no further pass may start: when the loop
/// wants another one, the turn ends instead (every tool call of that pass answered, so
/// no call dangles), and `env.iteration` is the number of passes made.
///
/// # Options
///
/// | option | type | default | what it is |
/// |---|---|---|---|
/// | `max` | `u32` | `100` | the most passes (model calls) a turn may make |
/// | `mode` | [`LimitMode`] | [`LimitMode::End`] | what happens at the limit: end the turn, fail it, or warn the model first |
///
/// Placement: inside a loop (`Loop::ToolResult`, `Loop::While`), checked at compile
/// time.
///
/// ```
/// use brute::{ExitReason, Message, StopReason, brute_agent, middleware::{LimitMode, Loop, MaxIterations}};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let agent = brute_agent! {
///     use Loop::While { condition: |_env| true };
///     use MaxIterations { max: 4 };
///     run |_env| async { Ok(Message::assistant("again")) };
/// };
/// let outcome = agent.start("go").await?;
/// assert_eq!(outcome.stop, StopReason::Exited(ExitReason::Limit { by: "MaxIterations", limit: 4 }));
/// # Ok::<(), brute::Error>(()) }).unwrap();
/// ```
#[derive(crate::Middleware, Debug, Clone)]
#[middleware(crate = crate, inside = crate::kind::Loops)]
pub struct MaxIterations<A> {
    app: A,
    /// The most passes a turn may make.
    #[middleware(default = 100)]
    max: u32,
    /// What happens at the limit.
    mode: LimitMode,
}

impl<A: Handler<Env>> Handler<Env> for MaxIterations<A> {
    const WATCHED: bool = false;

    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        let span = tracing::info_span!(
            "brute.max_iterations",
            brute.layer = "MaxIterations",
            brute.iteration = env.iteration,
            brute.max_iterations = self.max,
        );
        if in_span(&span, || self.at_limit(env))? {
            return Ok(());
        }
        traced!(self.app.call(env), span)?;
        if env.iteration >= self.max {
            // That was the last pass allowed: the loop ends the turn rather than start
            // another one, so the pass count matches the model calls.
            env.set_pass_limit(PassLimit {
                by: "MaxIterations",
                limit: self.max,
                as_error: self.mode == LimitMode::Error,
            });
        }
        Ok(())
    }
}

impl<A> MaxIterations<A> {
    /// The guard's decision before a pass: `Ok(true)` ends the turn here.
    fn reason(&self) -> ExitReason {
        ExitReason::Limit {
            by: "MaxIterations",
            limit: self.max,
        }
    }

    /// The guard's decision before a pass: `Ok(true)` ends the turn here. Under a
    /// loop that honours [`Env::pass_limit`] this pass never starts; under another
    /// loop the pass is refused and not counted.
    #[inline]
    fn at_limit(&self, env: &mut Env) -> Result<bool, Error> {
        if env.iteration > self.max {
            env.iteration = self.max;
            let reason = self.reason();
            if self.mode == LimitMode::Error {
                return Err(Error::Stopped(reason));
            }
            env.exit(reason);
            return Ok(true);
        }
        if let LimitMode::Warn { remaining } = self.mode {
            let left = self.max - env.iteration + 1;
            if left <= remaining {
                env.messages.push(Message::user(format!(
                    "[brute] {left} model call{} left in this turn: finish the task or summarise where you are.",
                    if left == 1 { "" } else { "s" }
                )));
            }
        }
        Ok(false)
    }
}
