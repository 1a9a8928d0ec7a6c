//! Assembling a streamed response.

use serde_json::Value;

use super::items::Items;
use super::wire::{Response, StreamEvent};
use crate::env::Env;
use crate::error::ModelError;
use crate::model::Completion;
use crate::providers::Deltas;
use crate::providers::errors::body_error;
use crate::providers::stream::{Assemble, parse_event};
use crate::usage::Usage;

stream_decoder! {
    /// Assembles a streamed response (`response.created`, `response.output_item.added`,
    /// `response.output_text.delta`, `response.function_call_arguments.delta`,
    /// `response.output_item.done`, ..., `response.completed`) into the message a
    /// non-streamed call returns, emitting text and reasoning-summary deltas on the
    /// way. The finished items (`response.output_item.done`) are the reply's calls and
    /// reasoning items; a function call cut short keeps the arguments its deltas gave.
    pub struct StreamDecoder(State);
}

/// What the events so far have said.
#[derive(Debug, Default)]
struct State {
    text: Deltas,
    /// The items begun and not yet finished, by output index, their arguments so far.
    open: Vec<(u64, Value)>,
    /// The finished items, by output index.
    done: Vec<(u64, Value)>,
    /// `response.completed` (or `response.incomplete`), once it came.
    end: Option<Response>,
}

impl Assemble for State {
    fn event(&mut self, place: &str, data: &str, env: &Env) -> Result<(), ModelError> {
        let event: StreamEvent = parse_event(place, data, "a stream event")?;
        match event {
            StreamEvent::TextDelta { delta } => self.text.content(&delta, env),
            StreamEvent::ReasoningDelta { delta } => self.text.reasoning(&delta, env),
            StreamEvent::SummaryPart => {
                // Summary parts are paragraphs: a blank line between them, as in the
                // non-streamed reply.
                if self.text.has_reasoning() {
                    self.text.reasoning("\n\n", env);
                }
            }
            StreamEvent::ItemAdded { output_index, item } => {
                self.open.retain(|(i, _)| *i != output_index);
                self.open.push((output_index, item));
            }
            StreamEvent::ArgumentsDelta {
                output_index,
                delta,
            } => {
                if let Some((_, item)) = self.open.iter_mut().find(|(i, _)| *i == output_index) {
                    let so_far = item.get("arguments").and_then(Value::as_str).unwrap_or("");
                    item["arguments"] = Value::String(format!("{so_far}{delta}"));
                }
            }
            StreamEvent::ItemDone { output_index, item } => {
                self.open.retain(|(i, _)| *i != output_index);
                self.done.push((output_index, item));
            }
            StreamEvent::Completed { response } => self.end = Some(response),
            StreamEvent::Failed { response } => {
                let error = response
                    .error
                    .unwrap_or_else(|| Value::String("the response failed".into()));
                return Err(body_error(place, &typed(error)));
            }
            StreamEvent::Error {
                error,
                code,
                message,
            } => {
                let error = error.unwrap_or_else(
                    || serde_json::json!({"code": code, "message": message.unwrap_or_default()}),
                );
                return Err(body_error(place, &typed(error)));
            }
            StreamEvent::Other => {}
        }
        Ok(())
    }

    fn deltas(&mut self) -> &mut Deltas {
        &mut self.text
    }

    /// A stream that stopped before `response.completed` is a dropped connection.
    fn complete(self, place: &str) -> Result<Completion, ModelError> {
        let Some(end) = self.end else {
            return Err(ModelError::Connection(format!(
                "{place}: the stream ended before the response was complete"
            )));
        };
        let mut items: Vec<(u64, Value)> = self.done;
        // A function call whose item did not finish keeps what its deltas said.
        items.extend(
            self.open.into_iter().filter(|(_, item)| {
                item.get("type").and_then(Value::as_str) == Some("function_call")
            }),
        );
        items.sort_by_key(|(index, _)| *index);
        let mut read = Items::default();
        for (_, item) in items {
            read.add(item);
        }
        // A server that sent no item events has them all in the final response.
        if read.count == 0 {
            for item in end.output.unwrap_or_default() {
                read.add(item);
            }
        }
        Ok(Completion {
            message: read.into_message(Some(self.text.into_parts())),
            usage: end.usage.map(Usage::from),
        })
    }
}

/// The error of a failed response or an `error` event, which name their kind by `code`
/// (`server_error`, `rate_limit_exceeded`), with the `type` the shared error mapping reads.
fn typed(mut error: Value) -> Value {
    if error.get("type").is_none()
        && let Some(code) = error.get("code").and_then(Value::as_str)
    {
        let kind = match code {
            "rate_limit_exceeded" => "rate_limit_error",
            other => other,
        }
        .to_owned();
        error["type"] = Value::String(kind);
    }
    error
}
