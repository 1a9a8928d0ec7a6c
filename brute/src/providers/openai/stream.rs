//! Assembling a streamed Chat Completion.

use serde_json::Value;

use super::wire::{CallDelta, Chunk};
use crate::env::Env;
use crate::error::ModelError;
use crate::message::{Message, ToolCall};
use crate::model::Completion;
use crate::providers::errors::{body_error, quote};
use crate::providers::stream::Assemble;
use crate::providers::{Deltas, decode_arguments};
use crate::usage::Usage;

stream_decoder! {
    /// Assembles a streamed Chat Completion (`data: {chunk}` events ending with
    /// `data: [DONE]`) into the message a non-streamed call returns, emitting
    /// content and reasoning deltas on the way. Tool-call argument fragments are
    /// joined by the call's `index`.
    pub struct StreamDecoder(State);
}

/// What the events so far have said.
#[derive(Debug, Default)]
struct State {
    text: Deltas,
    calls: Vec<PartialCall>,
    usage: Option<Usage>,
    finished: bool,
    done: bool,
    /// The bytes the calls hold, counted as their pieces come.
    calls_kept: usize,
}

#[derive(Debug, Default)]
struct PartialCall {
    index: u64,
    id: String,
    name: String,
    arguments: String,
}

impl Assemble for State {
    fn event(&mut self, place: &str, data: &str, env: &Env) -> Result<(), ModelError> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
            ModelError::Malformed(format!(
                "{place}: a stream chunk is not JSON ({e}): {}",
                quote(data)
            ))
        })?;
        if let Some(error) = &chunk.error {
            return Err(body_error(place, error));
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage.into());
        }
        for choice in chunk.choices {
            let delta = choice.delta;
            if let Some(text) = delta.content.or(delta.refusal) {
                self.text.content(&text, env);
            }
            if let Some(text) = delta.reasoning_content.or(delta.reasoning) {
                self.text.reasoning(&text, env);
            }
            for call in delta.tool_calls {
                self.call_delta(call);
            }
            if choice.finish_reason.is_some() {
                self.finished = true;
            }
        }
        Ok(())
    }

    /// Ends the stream. A stream that stopped before its end (`[DONE]` or a finish
    /// reason) is a dropped connection.
    fn deltas(&mut self) -> &mut Deltas {
        &mut self.text
    }

    fn kept(&self) -> usize {
        self.text.kept() + self.calls_kept
    }

    fn complete(self, place: &str) -> Result<Completion, ModelError> {
        if !self.done && !self.finished {
            return Err(ModelError::Connection(format!(
                "{place}: the stream ended before the response was complete"
            )));
        }
        let (content, reasoning) = self.text.into_parts();
        let mut message = Message::assistant(content);
        message.set_reasoning(reasoning);
        message.tool_calls = self
            .calls
            .into_iter()
            .map(|call| ToolCall::new(call.id, call.name, decode_arguments(&call.arguments)))
            .collect();
        Ok(Completion {
            message,
            usage: self.usage,
        })
    }
}

impl State {
    fn call_delta(&mut self, delta: CallDelta) {
        let position = match delta.index {
            // Fragments of the last call first: most streams send calls one after another.
            Some(index) => match self.calls.last() {
                Some(last) if last.index == index => Some(self.calls.len() - 1),
                _ => self.calls.iter().position(|c| c.index == index),
            },
            // Servers that omit `index` send each call whole, or repeat its id.
            None => match &delta.id {
                Some(id) => self.calls.iter().position(|c| &c.id == id),
                None => self.calls.len().checked_sub(1),
            },
        };
        let call = match position {
            Some(position) => &mut self.calls[position],
            None => {
                let index = delta.index.unwrap_or(self.calls.len() as u64);
                self.calls.push(PartialCall {
                    index,
                    ..PartialCall::default()
                });
                self.calls_kept += std::mem::size_of::<PartialCall>();
                let last = self.calls.len() - 1;
                &mut self.calls[last]
            }
        };
        let before = call.id.len() + call.name.len() + call.arguments.len();
        if let Some(id) = delta.id.filter(|id| !id.is_empty()) {
            call.id = id;
        }
        if let Some(name) = delta.function.name.filter(|n| !n.is_empty()) {
            if call.name.is_empty() {
                call.name = name;
            } else if call.name != name {
                call.name.push_str(&name);
            }
        }
        match delta.function.arguments {
            Some(Value::String(fragment)) => call.arguments.push_str(&fragment),
            Some(Value::Null) | None => {}
            Some(whole) => call.arguments = whole.to_string(),
        }
        let after = call.id.len() + call.name.len() + call.arguments.len();
        self.calls_kept = (self.calls_kept + after).saturating_sub(before);
    }
}
