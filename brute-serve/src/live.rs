//! The mark that a turn holds its session: the request waits for it before it answers
//! with a stream, so that a busy session gets a 409 and not a stream that fails.
//!
//! The agent's event handlers (installed once, by [`attach`]) set the flag of the
//! [`Sink`] that the request put in the turn env's extensions at every event inside
//! the turn: `SessionLog` sits outside every loop, so any such event means the
//! session's lease is held. The request polls the turn itself and reads the flag
//! whenever the turn waits. The items themselves come from [`brute::stream`].

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use brute::{Agent, Env, EventKind, Handler};

/// The mark of one turn, in the env's extensions: set once the turn holds its session.
#[derive(Clone, Debug)]
pub(crate) struct Sink(pub(crate) Arc<AtomicBool>);

/// Installs the handler that marks a turn as started on `agent`. Turns without a
/// [`Sink`] pay one lookup per event.
pub(crate) fn attach<S: Handler<Env>>(agent: &mut Agent<S>) {
    for kind in EventKind::ALL {
        if matches!(kind, EventKind::TurnStart | EventKind::TurnEnd) {
            continue;
        }
        agent.on(kind, |env, _event| {
            if let Some(sink) = env.extensions.get::<Sink>() {
                sink.0.store(true, Ordering::Relaxed);
            }
        });
    }
}
