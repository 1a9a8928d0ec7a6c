//! The mark that a turn holds its session: the request waits for it before it answers
//! with a stream, so that a busy session gets a 409 and not a stream that fails.
//!
//! The agent's event handlers (installed once, by [`attach`]) set the flag of the
//! [`Sink`] that the request put in the turn env's extensions at every event inside
//! the turn but a loop's `Iteration`: `SessionLog` sits outside every loop, so any
//! such event means the session's lease is held. The request polls the turn itself
//! and reads the flag whenever the turn waits. A turn driven on a task of its own
//! (A2A's stoppable turns) also gets a wake-up ([`Sink::waking`]) so that its request
//! can wait for the mark. The items themselves come from [`brute::stream`].

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use brute::{Agent, Env, EventKind, Handler};
use tokio::sync::Notify;

/// The mark of one turn, in the env's extensions: set once the turn holds its session.
#[derive(Clone, Debug)]
pub(crate) struct Sink(pub(crate) Arc<AtomicBool>, Option<Arc<Notify>>);

impl Sink {
    /// A mark that the request reads whenever the turn it polls waits.
    pub(crate) fn new(held: Arc<AtomicBool>) -> Self {
        Sink(held, None)
    }

    /// A mark that also wakes `notify` (once) when it is set, for a turn that runs on
    /// a task of its own.
    pub(crate) fn waking(held: Arc<AtomicBool>, notify: Arc<Notify>) -> Self {
        Sink(held, Some(notify))
    }

    fn set(&self) {
        if !self.0.swap(true, Ordering::Relaxed)
            && let Some(notify) = &self.1
        {
            notify.notify_one();
        }
    }
}

/// Installs the handler that marks a turn as started on `agent`. Turns without a
/// [`Sink`] pay one lookup per event.
pub(crate) fn attach<S: Handler<Env>>(agent: &mut Agent<S>) {
    for kind in EventKind::ALL {
        // A loop's `Iteration` comes before its first pass checks its input (a tool
        // pipeline refuses client tools named like its own there): such a refusal is
        // then the request's error, not a stream that fails.
        if matches!(
            kind,
            EventKind::TurnStart | EventKind::TurnEnd | EventKind::Iteration
        ) {
            continue;
        }
        agent.on(kind, |env, _event| {
            if let Some(sink) = env.extensions.get::<Sink>() {
                sink.set();
            }
        });
    }
}
