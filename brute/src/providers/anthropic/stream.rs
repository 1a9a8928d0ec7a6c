//! Assembling a streamed Messages response.

use serde_json::Value;

use super::wire::{BlockDelta, StreamEvent, WireUsage};
use crate::env::Env;
use crate::error::ModelError;
use crate::message::{Message, ToolCall};
use crate::model::Completion;
use crate::providers::errors::{body_error, quote};
use crate::providers::stream::Assemble;
use crate::providers::{Deltas, decode_arguments};

/// The parts of a reply, gathered from its blocks.
#[derive(Default)]
pub(super) struct Assembled {
    pub(super) content: String,
    pub(super) reasoning: String,
    pub(super) signature: String,
    pub(super) calls: Vec<ToolCall>,
}

impl Assembled {
    pub(super) fn into_message(self) -> Message {
        let mut message = Message::tool_calls(self.content, self.calls);
        message.set_reasoning(Some(self.reasoning).filter(|r| !r.is_empty()));
        message.set_reasoning_signature(Some(self.signature).filter(|s| !s.is_empty()));
        message
    }
}

stream_decoder! {
    /// Assembles a streamed Messages response (`message_start`, `content_block_*`,
    /// `message_delta`, `message_stop`) into the message a non-streamed call returns,
    /// emitting content and reasoning deltas on the way. `input_json_delta`
    /// fragments are joined per block and parsed at its end.
    pub struct StreamDecoder(State);
}

/// What the Messages events so far have said: the text, the blocks and the usage.
#[derive(Debug, Default)]
struct State {
    text: Deltas,
    signature: String,
    blocks: Vec<(u64, StreamBlock)>,
    usage: WireUsage,
    has_usage: bool,
    stopped: bool,
    /// The bytes the blocks and the signature hold, counted as they come.
    kept: usize,
}

#[derive(Debug)]
enum StreamBlock {
    ToolUse {
        id: String,
        name: String,
        json: String,
        input: Value,
    },
    Other,
}

impl Assemble for State {
    fn event(&mut self, place: &str, data: &str, env: &Env) -> Result<(), ModelError> {
        let event: StreamEvent = serde_json::from_str(data).map_err(|e| {
            ModelError::Malformed(format!(
                "{place}: a stream event is not valid ({e}): {}",
                quote(data)
            ))
        })?;
        match event {
            StreamEvent::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.merge_usage(usage);
                }
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => {
                self.kept += std::mem::size_of::<(u64, StreamBlock)>();
                let block = match content_block.get("type").and_then(Value::as_str) {
                    Some("tool_use") => {
                        // The block's id, name and input are in its event.
                        self.kept += data.len();
                        StreamBlock::ToolUse {
                            id: string_field(&content_block, "id"),
                            name: string_field(&content_block, "name"),
                            json: String::new(),
                            input: content_block.get("input").cloned().unwrap_or(Value::Null),
                        }
                    }
                    Some("text") => {
                        let text = string_field(&content_block, "text");
                        self.text.content(&text, env);
                        StreamBlock::Other
                    }
                    Some("thinking") => {
                        let thinking = string_field(&content_block, "thinking");
                        self.text.reasoning(&thinking, env);
                        let signature = string_field(&content_block, "signature");
                        self.kept += signature.len();
                        self.signature.push_str(&signature);
                        StreamBlock::Other
                    }
                    _ => StreamBlock::Other,
                };
                self.blocks.push((index, block));
            }
            StreamEvent::ContentBlockDelta { index, delta } => match delta {
                BlockDelta::TextDelta { text } => self.text.content(&text, env),
                BlockDelta::ThinkingDelta { thinking } => self.text.reasoning(&thinking, env),
                BlockDelta::SignatureDelta { signature } => {
                    self.kept += signature.len();
                    self.signature.push_str(&signature)
                }
                BlockDelta::InputJsonDelta { partial_json } => {
                    match self.blocks.iter_mut().rev().find(|(i, _)| *i == index) {
                        Some((_, StreamBlock::ToolUse { json, .. })) => {
                            self.kept += partial_json.len();
                            json.push_str(&partial_json)
                        }
                        _ => {
                            return Err(ModelError::Malformed(format!(
                                "{place}: input_json_delta for block {index}, which is not a tool_use block"
                            )));
                        }
                    }
                }
                BlockDelta::Unknown => {}
            },
            StreamEvent::ContentBlockStop | StreamEvent::Ping | StreamEvent::Unknown => {}
            StreamEvent::MessageDelta { usage } => {
                if let Some(usage) = usage {
                    self.merge_usage(usage);
                }
            }
            StreamEvent::MessageStop => self.stopped = true,
            StreamEvent::Error { error } => return Err(body_error(place, &error)),
        }
        Ok(())
    }

    /// Ends the stream. A stream without its `message_stop` is a dropped connection.
    fn deltas(&mut self) -> &mut Deltas {
        &mut self.text
    }

    fn kept(&self) -> usize {
        self.text.kept() + self.kept
    }

    fn complete(self, place: &str) -> Result<Completion, ModelError> {
        if !self.stopped {
            return Err(ModelError::Connection(format!(
                "{place}: the stream ended before message_stop"
            )));
        }
        let mut calls = Vec::new();
        for (_, block) in self.blocks {
            if let StreamBlock::ToolUse {
                id,
                name,
                json,
                input,
            } = block
            {
                let arguments = if json.trim().is_empty() && input.is_object() {
                    input
                } else {
                    decode_arguments(&json)
                };
                calls.push(ToolCall::new(id, name, arguments));
            }
        }
        let (content, reasoning) = self.text.into_parts();
        let assembled = Assembled {
            content,
            reasoning: reasoning.unwrap_or_default(),
            signature: self.signature,
            calls,
        };
        Ok(Completion {
            message: assembled.into_message(),
            usage: self.has_usage.then(|| self.usage.into()),
        })
    }
}

impl State {
    /// `message_delta` usage is cumulative; fields it lacks keep their earlier values.
    fn merge_usage(&mut self, usage: WireUsage) {
        self.has_usage = true;
        let merge = |old: &mut Option<u64>, new: Option<u64>| {
            if new.is_some() {
                *old = new;
            }
        };
        merge(&mut self.usage.input_tokens, usage.input_tokens);
        merge(&mut self.usage.output_tokens, usage.output_tokens);
        merge(
            &mut self.usage.cache_read_input_tokens,
            usage.cache_read_input_tokens,
        );
        merge(
            &mut self.usage.cache_creation_input_tokens,
            usage.cache_creation_input_tokens,
        );
    }
}

fn string_field(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}
