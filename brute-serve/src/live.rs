//! The mark that a turn holds its session: the request waits for it before it answers
//! with a stream, so that a busy session gets a 409 and not a stream that fails.
//!
//! The agent's event handlers (installed once, by [`attach`]) send [`Signal::Started`]
//! on the [`Sink`] that the request put in the turn env's extensions at every event
//! inside the turn: `SessionLog` sits outside every loop, so any such event means the
//! session's lease is held. The items themselves come from [`brute::stream`].

use brute::stream::TurnItem;
use brute::{Agent, Env, EventKind, Handler};
use tokio::sync::mpsc;

use crate::error::ApiError;

/// What the turn task sends.
#[derive(Debug)]
pub(crate) enum Signal {
    /// An event inside the turn: the session is ours.
    Started,
    /// An item for the client (the turn held its session before it made one).
    Item(TurnItem),
    /// The turn failed (its last signal): the request answers with this error when
    /// the stream has not started, the stream ends with it otherwise.
    Failed(ApiError),
}

/// The channel of one turn, in the env's extensions.
#[derive(Clone, Debug)]
pub(crate) struct Sink(pub(crate) mpsc::UnboundedSender<Signal>);

/// Installs the handler that marks a turn as started on `agent`. Turns without a
/// [`Sink`] pay one lookup per event.
pub(crate) fn attach<S: Handler<Env>>(agent: &mut Agent<S>) {
    for kind in EventKind::ALL {
        if matches!(kind, EventKind::TurnStart | EventKind::TurnEnd) {
            continue;
        }
        agent.on(kind, |env, _event| {
            if let Some(sink) = env.extensions.get::<Sink>() {
                // A closed channel is a client gone: the turn goes on and is stored.
                let _ = sink.0.send(Signal::Started);
            }
        });
    }
}
