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
    /// The items begun and not yet finished.
    open: Vec<Open>,
    /// The finished items, by output index.
    done: Vec<(u64, Value)>,
    /// `response.completed` (or `response.incomplete`), once it came.
    end: Option<Response>,
    /// The bytes the items hold (as the JSON of their events), counted as they come.
    kept: usize,
}

/// An item begun and not yet finished.
#[derive(Debug)]
struct Open {
    index: u64,
    item: Value,
    /// Its arguments, once a delta gave some: the item's own, then each delta's,
    /// appended in place (not copied whole on every delta).
    arguments: Option<String>,
    /// What its event counted in [`State::kept`].
    size: usize,
}

impl State {
    /// Forgets the open item at `index`, if any; returns it.
    fn close(&mut self, index: u64) -> Option<Open> {
        let position = self.open.iter().position(|open| open.index == index)?;
        let open = self.open.remove(position);
        let size = open.size + open.arguments.as_ref().map_or(0, String::len);
        self.kept = self.kept.saturating_sub(size);
        Some(open)
    }
}

impl Open {
    /// The item, with the arguments its deltas gave.
    fn into_item(self) -> Value {
        let mut item = self.item;
        if let Some(arguments) = self.arguments {
            item["arguments"] = Value::String(arguments);
        }
        item
    }
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
                self.close(output_index);
                self.kept += data.len();
                self.open.push(Open {
                    index: output_index,
                    item,
                    arguments: None,
                    size: data.len(),
                });
            }
            StreamEvent::ArgumentsDelta {
                output_index,
                delta,
            } => {
                if let Some(open) = self.open.iter_mut().find(|o| o.index == output_index) {
                    let item = &open.item;
                    open.arguments
                        .get_or_insert_with(|| {
                            let so_far = item.get("arguments").and_then(Value::as_str);
                            so_far.unwrap_or("").to_owned()
                        })
                        .push_str(&delta);
                    self.kept += delta.len();
                }
            }
            StreamEvent::ItemDone { output_index, item } => {
                self.close(output_index);
                self.kept += data.len();
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

    fn kept(&self) -> usize {
        self.text.kept() + self.kept
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
            self.open
                .into_iter()
                .filter(|open| {
                    open.item.get("type").and_then(Value::as_str) == Some("function_call")
                })
                .map(|open| (open.index, open.into_item())),
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
