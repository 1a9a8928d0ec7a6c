//! `CallLimit`: at most so many model calls and tool calls in one turn.

use crate::env::Env;
use crate::error::Error;
use crate::handler::Handler;
use crate::message::Role;
use crate::stop::{ExitReason, PassLimit};
use crate::trace::{in_span, traced};

/// What [`CallLimit`] does when a limit is reached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallLimitMode {
    /// End the turn with the partial result and `should_exit` set to
    /// [`ExitReason::Limit`].
    #[default]
    End,
    /// End the turn with [`Error::Stopped`].
    Error,
}

/// The calls of the turn so far, kept in the env between passes.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    model: u32,
    tool: u32,
}

/// Limits the model calls and the tool calls of one turn.
///
/// Sits inside a loop layer (checked at compile time) and counts each pass below it
/// as one model call, and the tool calls of the assistant messages the pass appended.
/// Once a count reaches its limit, it tells the loop, through [`Env::pass_limit`], that
/// no further pass may start: the pass that reached it finishes (its tool calls all
/// run and are answered, so no call dangles) and the turn ends there, as
/// [`ExitReason::Limit`] with `by` naming the limit (`"CallLimit.model_calls"` or
/// `"CallLimit.tool_calls"`), or as [`Error::Stopped`] with
/// [`CallLimitMode::Error`]. A model that asks for several tools in one reply may
/// pass `tool_calls` in that pass: the limit stops the turn, it does not refuse calls.
///
/// Counts are kept in the env, as `env.iteration` is: a turn on a fresh env
/// ([`Agent::start`](crate::Agent::start), a session's turn) starts from zero, and
/// they start again whenever the loop's first pass does.
///
/// # Options
///
/// | option | type | default | what it is |
/// |---|---|---|---|
/// | `model_calls` | `u32` | `u32::MAX` (none) | the most model calls (passes) a turn may make |
/// | `tool_calls` | `u32` | `u32::MAX` (none) | the tool calls after which no further model call is made |
/// | `mode` | [`CallLimitMode`] | [`CallLimitMode::End`] | end the turn, or fail it |
///
/// Placement: inside a loop (`Loop::ToolResult`, `Loop::While`), checked at compile
/// time.
///
/// ```
/// use brute::{Error, ExitReason, Message, brute_agent};
/// use brute::middleware::{CallLimit, CallLimitMode, Loop};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let agent = brute_agent! {
///     use Loop::While { condition: |_env| true };
///     use CallLimit { model_calls: 3, tool_calls: 20, mode: CallLimitMode::Error };
///     run |_env| async { Ok(Message::assistant("again")) };
/// };
/// let error = agent.start("go").await.unwrap_err();
/// assert!(matches!(
///     error,
///     Error::Stopped(ExitReason::Limit { by: "CallLimit.model_calls", limit: 3 })
/// ));
/// # Ok::<(), brute::Error>(()) }).unwrap();
/// ```
#[derive(crate::Middleware, Debug, Clone)]
#[middleware(crate = crate, inside = crate::kind::Loops)]
pub struct CallLimit<A> {
    app: A,
    /// The most model calls a turn may make.
    #[middleware(default = u32::MAX)]
    model_calls: u32,
    /// The tool calls after which no further model call is made.
    #[middleware(default = u32::MAX)]
    tool_calls: u32,
    /// What happens at a limit.
    mode: CallLimitMode,
}

impl<A> CallLimit<A> {
    /// The limit the counts reached, if any.
    fn reached(&self, counts: Counts) -> Option<PassLimit> {
        let (by, limit) = if counts.model >= self.model_calls {
            ("CallLimit.model_calls", self.model_calls)
        } else if counts.tool >= self.tool_calls {
            ("CallLimit.tool_calls", self.tool_calls)
        } else {
            return None;
        };
        Some(PassLimit {
            by,
            limit,
            as_error: self.mode == CallLimitMode::Error,
        })
    }
}

impl<A: Handler<Env>> Handler<Env> for CallLimit<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        let span = tracing::info_span!(
            "brute.call_limit",
            brute.layer = "CallLimit",
            brute.iteration = env.iteration,
            brute.call_limit.model_calls = tracing::field::Empty,
            brute.call_limit.tool_calls = tracing::field::Empty,
        );
        // A new turn starts its loop at pass 1.
        let mut counts = match env.extensions.get::<Counts>() {
            Some(counts) if env.iteration > 1 => *counts,
            _ => Counts::default(),
        };
        if let Some(limit) = self.reached(counts) {
            // Under a loop that does not honour `Env::pass_limit`: refuse the pass.
            let reason: ExitReason = limit.reason();
            return in_span(&span, || {
                if limit.as_error {
                    return Err(Error::Stopped(reason));
                }
                env.exit(reason);
                Ok(())
            });
        }
        let before = env.messages.len();
        let result = traced!(self.app.call(env), ref span);
        counts.model = counts.model.saturating_add(1);
        let made = env
            .messages
            .get(before..)
            .unwrap_or_default()
            .iter()
            .filter(|message| message.role == Role::Assistant)
            .map(|message| message.tool_calls.len())
            .sum::<usize>();
        counts.tool = counts
            .tool
            .saturating_add(u32::try_from(made).unwrap_or(u32::MAX));
        env.extensions.insert(counts);
        if !span.is_disabled() {
            span.record("brute.call_limit.model_calls", counts.model);
            span.record("brute.call_limit.tool_calls", counts.tool);
        }
        result?;
        if let Some(limit) = self.reached(counts) {
            env.set_pass_limit(limit);
        }
        Ok(())
    }
}
