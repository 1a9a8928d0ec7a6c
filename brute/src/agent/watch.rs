//! [`Watch`]: how a turn names the layer that returned without calling the layer
//! below it.
//!
//! `brute_agent!` puts a `Watch` between every `use` line and the stack below it: the
//! inner app of each layer is `Watch { app: the layers below, name of the first of
//! them }`. A call into a watch counts one call from a layer into the one below it
//! (in the env); the watch then runs its app and, when that returned `Ok` without the
//! count moving, the layer the watch holds never called its own inner app on this
//! pass: unless it ended the turn (`env.exit(..)`) or answered, that is an error
//! naming that layer alone. The outermost layer has no watch above it: the agent
//! asks the same question of it (see `Agent::reached`).
//!
//! The check is per call, so a layer that calls inside on the first pass of a loop and
//! skips it on a later one is named like one that never calls inside. A layer that
//! does the pass's work itself is not an error: one that changes the transcript in
//! place of the layers below (a cached answer, the results of calls a person
//! approved) or ends the turn.

use std::ops::{Deref, DerefMut};

use crate::env::{Env, Mark};
use crate::error::Error;
use crate::handler::Handler;
use crate::message::Role;

/// The layers below a `use` line of `brute_agent!`, watched: see the
/// module `agent::watch`. It derefs to them, so a middleware's inner app reached with
/// [`Wraps::get_ref`](crate::stack::Wraps::get_ref) is used as before.
#[derive(Clone, Debug)]
pub struct Watch<A> {
    app: A,
    /// The `use` name of the first layer of `app`; `None` when `app` is the terminal.
    name: Option<&'static str>,
}

impl<A> Watch<A> {
    /// Watches `app`, whose first layer is the `use` line `name` (`None` for the
    /// terminal).
    pub fn new(app: A, name: Option<&'static str>) -> Self {
        Watch { app, name }
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
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        env.count_inner_call();
        // brute's own layers skip inside by design only (`Handler::WATCHED`): no check.
        let Some(name) = self.name.filter(|_| A::WATCHED) else {
            return self.app.call(env).await;
        };
        let before = Before::of(env);
        self.app.call(env).await?;
        stopped(env, before, name)
    }
}

/// What a layer's call is compared with when it returns.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Before {
    inner_calls: u64,
    messages: usize,
    mark: Mark,
}

impl Before {
    /// The env as a layer is called.
    #[inline]
    pub(crate) fn of(env: &Env) -> Self {
        Before {
            inner_calls: env.inner_calls(),
            messages: env.messages.len(),
            mark: env.messages.mark(),
        }
    }
}

/// The error when the layer `name`, called when the env was `before`, returned
/// without calling the layer below it, and neither ended the turn, nor answered, nor
/// changed the transcript in their place.
pub(crate) fn stopped(env: &Env, before: Before, name: &'static str) -> Result<(), Error> {
    if env.inner_calls() != before.inner_calls
        || env.should_exit.is_some()
        || env.messages.len() != before.messages
        || env.messages.mark() != before.mark
        || answered(env)
    {
        return Ok(());
    }
    Err(Error::layer(
        name,
        format!(
            "`{name}` returned without calling its inner app, so this pass never reached the model: call `self.app.call(env).await` in its `Handler` impl on every pass, or end the turn with `env.exit(..)`"
        ),
    ))
}

/// Whether the last message is a finished answer.
#[inline]
pub(crate) fn answered(env: &Env) -> bool {
    matches!(env.messages.last(), Some(m) if m.role == Role::Assistant && m.tool_calls.is_empty())
}
