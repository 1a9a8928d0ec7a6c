//! Assembling a streamed `generateContent` reply.

use super::reading::Reading;
use super::wire::Response;
use crate::env::Env;
use crate::error::ModelError;
use crate::model::Completion;
use crate::providers::Deltas;
use crate::providers::stream::{Assemble, parse_event};

stream_decoder! {
    /// Assembles a streamed reply (`streamGenerateContent?alt=sse`: each event a
    /// `GenerateContentResponse` holding the next parts) into the message a
    /// non-streamed call returns, emitting text and thought deltas on the way. The
    /// stream has no end marker: it is complete once a candidate has a `finishReason`.
    pub struct StreamDecoder(State);
}

/// What the events so far have said.
#[derive(Debug, Default)]
struct State {
    text: Deltas,
    reading: Reading,
    /// The bytes of the events that made calls: what the calls hold, about.
    kept: usize,
}

impl Assemble for State {
    fn event(&mut self, place: &str, data: &str, env: &Env) -> Result<(), ModelError> {
        let response: Response = parse_event(place, data, "a GenerateContentResponse event")?;
        let calls = self.reading.calls();
        self.reading
            .read(response, place, Some((&mut self.text, env)))?;
        if self.reading.calls() > calls {
            self.kept += data.len();
        }
        Ok(())
    }

    fn deltas(&mut self) -> &mut Deltas {
        &mut self.text
    }

    fn kept(&self) -> usize {
        self.text.kept() + self.kept
    }

    /// A stream that stopped before a finish reason is a dropped connection.
    fn complete(self, place: &str) -> Result<Completion, ModelError> {
        if !self.reading.finished() {
            return Err(ModelError::Connection(format!(
                "{place}: the stream ended before the response was complete"
            )));
        }
        self.reading.finish(place, Some(self.text.into_parts()))
    }
}
