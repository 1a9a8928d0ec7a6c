//! [`Watch`]: how a turn names the layer that returned without calling the layer
//! below it.
//!
//! `brute_agent!` puts a `Watch` between every `use` line and the stack below it: the
//! inner app of line `i` is `Watch { app: the layers below, line: i }`. Calling it
//! counts one call of line `i` into the layers below (in the env) and returns the
//! layers' own future: no future of its own, so it adds no level to the stack's nested
//! future. At the end of a turn that neither answered nor was ended (`env.exit(..)`),
//! the agent looks for the outermost line that was entered more often than it called
//! inside: that line stopped calling its inner app on some pass (the first pass or a
//! later one), and the error names it alone. Lines whose layer is brute's own
//! (`Handler::WATCHED` false: they skip inside by design) are not named.

use std::future::Future;
use std::ops::{Deref, DerefMut};

use crate::env::Env;
use crate::error::Error;
use crate::handler::Handler;
use crate::message::Role;
use crate::stop::ExitReason;

/// The layers below a `use` line of `brute_agent!`, watched: see the
/// module `agent::watch`. It derefs to them, so a middleware's inner app reached with
/// [`Wraps::get_ref`](crate::stack::Wraps::get_ref) is used as before.
#[derive(Clone, Debug)]
pub struct Watch<A> {
    app: A,
    /// The `use` line (counted from 0, outermost first) whose inner app this is.
    line: usize,
}

impl<A> Watch<A> {
    /// Watches `app`, the inner app of the `use` line `line`.
    pub fn new(app: A, line: usize) -> Self {
        Watch { app, line }
    }

    /// The watched layers.
    pub fn into_inner(self) -> A {
        self.app
    }
}

impl<A> Deref for Watch<A> {
    type Target = A;
    fn deref(&self) -> &A {
        &self.app
    }
}

impl<A> DerefMut for Watch<A> {
    fn deref_mut(&mut self) -> &mut A {
        &mut self.app
    }
}

impl<A: Handler<Env>> Handler<Env> for Watch<A> {
    #[inline]
    fn call(&self, env: &mut Env) -> impl Future<Output = Result<(), Error>> + Send {
        env.layer_calls_mut().count(self.line, A::WATCHED);
        self.app.call(env)
    }
}

/// The error when a turn that neither answered nor was ended had a watched `use` line
/// (of `layers`, outermost first; the first is watched when `first_watched`) that was
/// entered more often than it called inside: the outermost such line, by name.
pub(crate) fn stopped(
    env: &Env,
    layers: &[&'static str],
    first_watched: bool,
) -> Result<(), Error> {
    if answered(env) || matches!(env.should_exit, Some(ExitReason::AwaitingApproval { .. })) {
        return Ok(());
    }
    let calls = env.layer_calls();
    let watched = calls.watched | u32::from(first_watched);
    for (line, name) in layers.iter().enumerate().take(calls.made.len()) {
        let entered = match line {
            0 => 1,
            _ => calls.made[line - 1],
        };
        if watched & (1 << line) != 0 && calls.made[line] < entered && !ended_by(env, name) {
            let what = match (env.reached_terminal(), calls.made[line]) {
                (false, _) | (_, 0) => "so the turn never reached the model",
                _ => "on a later pass, so the turn ended with no answer",
            };
            return Err(Error::layer(
                name,
                format!(
                    "`{name}` returned without calling its inner app, {what}: call `self.app.call(env).await` in its `Handler` impl on every pass, or end the turn with `env.exit(..)`"
                ),
            ));
        }
    }
    Ok(())
}

/// Whether the layer `name` ended the turn itself (`env.exit(..)` naming it).
fn ended_by(env: &Env, name: &str) -> bool {
    match &env.should_exit {
        Some(ExitReason::Requested { by, .. }) => by == name,
        Some(ExitReason::Limit { by, .. } | ExitReason::Blocked { by, .. }) => *by == name,
        _ => false,
    }
}

/// Whether the last message is a finished answer.
#[inline]
pub(crate) fn answered(env: &Env) -> bool {
    matches!(env.messages.last(), Some(m) if m.role == Role::Assistant && m.tool_calls.is_empty())
}
