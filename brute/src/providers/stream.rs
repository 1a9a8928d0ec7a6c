//! A stream decoder: the event-stream parser feeding a wire format's assembly state.
//! Each format's `StreamDecoder` is this over its own state.

use super::sse::SseParser;
use crate::env::Env;
use crate::error::ModelError;
use crate::model::Completion;

/// A wire format's reading of a stream, one event's `data` at a time.
pub(crate) trait Assemble: Default {
    /// Takes in one event; `place` names the stream in errors.
    fn event(&mut self, place: &str, data: &str, env: &Env) -> Result<(), ModelError>;

    /// The completion, once the stream has ended; an incomplete stream is a
    /// [`ModelError::Connection`].
    fn complete(self, place: &str) -> Result<Completion, ModelError>;

    /// The text and reasoning assembled so far.
    fn deltas(&mut self) -> &mut super::Deltas;

    /// About how many bytes of the reply the state holds (see
    /// [`StreamDecode::kept`](super::StreamDecode::kept)); kept up to date as events
    /// come, not counted again on each call.
    fn kept(&self) -> usize;
}

/// One event's `data` read as `T`; `what` names what it should have been (`a stream
/// event`) in the error, which quotes the start of the data.
pub(crate) fn parse_event<'a, T: serde::Deserialize<'a>>(
    place: &str,
    data: &'a str,
    what: &str,
) -> Result<T, ModelError> {
    serde_json::from_str(data).map_err(|e| {
        ModelError::Malformed(format!(
            "{place}: {what} is not valid ({e}): {}",
            super::errors::quote(data)
        ))
    })
}

/// The parser and the state of one streamed reply.
#[derive(Debug)]
pub(crate) struct Decoding<S> {
    sse: SseParser,
    state: S,
}

impl<S: Assemble> Decoding<S> {
    /// A decoder for the stream at `place`, refusing events over `max_event_bytes`.
    pub(crate) fn new(place: String, max_event_bytes: usize) -> Self {
        Decoding {
            sse: SseParser::new(place, max_event_bytes),
            state: S::default(),
        }
    }

    /// Feeds the next bytes of the stream; deltas are emitted on `env`.
    pub(crate) fn feed(&mut self, bytes: &[u8], env: &Env) -> Result<(), ModelError> {
        let state = &mut self.state;
        self.sse
            .feed(bytes, |place, data| state.event(place, data, env))
    }

    /// About how many bytes of the reply are held so far.
    pub(crate) fn kept(&self) -> usize {
        self.state.kept()
    }

    /// Takes `secrets` out of the deltas from now on.
    pub(crate) fn redact(&mut self, secrets: &[std::sync::Arc<str>]) {
        self.state.deltas().hide(secrets);
    }

    /// Ends the stream and returns the assembled completion.
    pub(crate) fn finish(mut self, env: &Env) -> Result<Completion, ModelError> {
        let state = &mut self.state;
        self.sse
            .finish(|place, data| state.event(place, data, env))?;
        self.state.complete(self.sse.place())
    }
}
