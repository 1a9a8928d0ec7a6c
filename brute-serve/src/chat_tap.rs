//! What a chat completion learns from inside its turn, through the agent's event
//! handlers (installed once, by [`attach`]): the turn's token usage (for
//! `stream_options.include_usage`), whether the turn kept a session at all (a
//! `SessionLog` persisted it; otherwise there is nothing to delete and the store is
//! not touched), and whether a call of the agent's own waits for a person's approval
//! (then the completion's session is kept for the decision).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use brute::tools::ClientTools;
use brute::{Agent, Env, Event, EventKind, Handler, Usage};

/// The tap of one chat completion, in its env's extensions; the request keeps a clone.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tap(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    usage: Mutex<Usage>,
    asked: AtomicBool,
    persisted: AtomicBool,
}

impl Tap {
    /// The usage of the whole turn, once it has ended (zero before).
    pub(crate) fn usage(&self) -> Usage {
        *self.0.usage.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the turn ran with a persistence layer (a `SessionLog`): it made a
    /// session in the store.
    pub(crate) fn persisted(&self) -> bool {
        self.0.persisted.load(Ordering::Acquire)
    }

    /// Whether a call of the agent's own (not a client tool) waits for approval.
    pub(crate) fn asked(&self) -> bool {
        self.0.asked.load(Ordering::Acquire)
    }
}

#[cfg(test)]
impl Tap {
    /// A tap as a turn that kept a session (`persisted`) and paused on an approval
    /// (`asked`) leaves it.
    pub(crate) fn marked(persisted: bool, asked: bool) -> Tap {
        let tap = Tap::default();
        tap.0.persisted.store(persisted, Ordering::Release);
        tap.0.asked.store(asked, Ordering::Release);
        tap
    }
}

/// Installs the handlers that fill a [`Tap`] on `agent`. Turns without one pay one
/// lookup per `ModelRequest`, `TurnEnd` and `ApprovalRequired` event.
pub(crate) fn attach<S: Handler<Env>>(agent: &mut Agent<S>) {
    // Every turn of a chat completion calls its model, inside any `SessionLog`.
    agent.on(EventKind::ModelRequest, |env, _event| {
        if env.persists()
            && let Some(tap) = env.extensions.get::<Tap>()
        {
            tap.0.persisted.store(true, Ordering::Release);
        }
    });
    agent.on(EventKind::TurnEnd, |env, _event| {
        if let Some(tap) = env.extensions.get::<Tap>() {
            *tap.0.usage.lock().unwrap_or_else(PoisonError::into_inner) = env.usage();
        }
    });
    agent.on(EventKind::ApprovalRequired, |env, event| {
        let (Some(tap), Event::ApprovalRequired { call }) = (env.extensions.get::<Tap>(), event)
        else {
            return;
        };
        let client = env
            .extensions
            .get::<ClientTools>()
            .is_some_and(|c| c.contains(&call.name));
        if !client {
            tap.0.asked.store(true, Ordering::Release);
        }
    });
}
