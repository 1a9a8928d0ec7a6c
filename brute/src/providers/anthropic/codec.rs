//! [`Codec`]: the request parameters, the encoder and the decoder of the Messages API.

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::stream::{Assembled, StreamDecoder};
use super::wire::{Block, Request, Response, Turn, blocks};
use crate::error::ModelError;
use crate::message::{Role, ToolCall};
use crate::model::Completion;
use crate::providers::{Outgoing, ToolDecl, WireFormat, write_body};
use crate::tool::ToolSpec;
use crate::usage::Usage;

/// `max_tokens` when none is set: the API requires the field.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The API version sent in `anthropic-version`.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

codec! {
    /// The model name and request parameters of a Messages call, with the
    /// encoder and decoders of its wire format.
    pub struct Codec for "anthropic" {
        key_header: ("x-api-key", ""),
        headers: &[("anthropic-version", ANTHROPIC_VERSION)],
        endpoint: endpoint,
        params: Params,
        tools: encode_tools,
        response: Response as "a message",
        stream: StreamDecoder,
    }
}

/// The request fields beside the model, the system prompt, the messages and the tools.
#[derive(Clone, Debug, Serialize)]
pub(super) struct Params {
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_k: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    stop_sequences: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    #[serde(flatten)]
    extra: Map<String, Value>,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            max_tokens: DEFAULT_MAX_TOKENS,
            temperature: None,
            top_p: None,
            top_k: None,
            stop_sequences: Vec::new(),
            thinking: None,
            extra: Map::new(),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
struct Thinking {
    r#type: &'static str,
    budget_tokens: u32,
}

request_params!(Codec {
    /// The most tokens to generate (`max_tokens`, default [`DEFAULT_MAX_TOKENS`]).
    fn max_tokens(max_tokens: u32) |p| p.max_tokens = max_tokens;
    /// Sampling temperature (`temperature`).
    fn temperature(temperature: f32) |p| p.temperature = Some(temperature);
    /// Nucleus sampling (`top_p`).
    fn top_p(top_p: f32) |p| p.top_p = Some(top_p);
    /// Top-k sampling (`top_k`).
    fn top_k(top_k: u32) |p| p.top_k = Some(top_k);
    /// Stop sequences (`stop_sequences`).
    fn stop(stop: impl IntoIterator<Item = impl Into<String>>)
        |p| p.stop_sequences = stop.into_iter().map(Into::into).collect();
    /// Extended thinking with a token budget below `max_tokens`
    /// (`thinking: {type: "enabled", budget_tokens}`).
    fn thinking(budget_tokens: u32)
        |p| p.thinking = Some(Thinking { r#type: "enabled", budget_tokens });
    /// Any other request field, sent as given (`tool_choice`, `metadata`, ...).
    fn param(key: impl Into<String>, value: Value) |p| p.extra.insert(key.into(), value);
});

impl Codec {
    /// The request body once the tools are encoded.
    fn body(&self, out: Outgoing<'_>) -> Result<Vec<u8>, ModelError> {
        let mut system = String::new();
        let mut turns: Vec<Turn<'_>> = Vec::with_capacity(out.messages.len());
        for message in out.messages {
            let role = match message.role {
                Role::System => {
                    if !system.is_empty() {
                        system.push_str("\n\n");
                    }
                    system.push_str(&message.content);
                    continue;
                }
                Role::User | Role::Tool => "user",
                Role::Assistant => "assistant",
            };
            let blocks = blocks(message);
            if blocks.is_empty() {
                continue;
            }
            match turns.last_mut() {
                // The API wants alternating turns: tool results and the user text
                // after them form one user turn.
                Some(last) if last.role == role => last.content.extend(blocks),
                _ => turns.push(Turn {
                    role,
                    content: blocks,
                }),
            }
        }
        let request = Request {
            model: &self.model,
            system: Some(system.as_str()).filter(|s| !s.is_empty()),
            messages: &turns,
            tools: out.tools,
            stream: out.stream,
            params: &self.params,
        };
        write_body(Self::NAME, out.messages, &request)
    }

    /// The reply in a response that holds no error object.
    fn completion(response: Response, place: &str) -> Result<Completion, ModelError> {
        let content = response.content.ok_or_else(|| {
            ModelError::Malformed(format!("{place}: the response has no content"))
        })?;
        let mut assembled = Assembled::default();
        for block in content {
            match block {
                Block::Text { text } => assembled.content.push_str(&text),
                Block::Thinking {
                    thinking,
                    signature,
                } => {
                    assembled.reasoning.push_str(&thinking);
                    assembled.signature.push_str(&signature);
                }
                Block::ToolUse { id, name, input } => {
                    assembled.calls.push(ToolCall::new(id, name, input))
                }
                Block::Other => {}
            }
        }
        Ok(Completion {
            message: assembled.into_message(),
            usage: response.usage.map(Usage::from),
        })
    }
}

fn encode_tools(tools: &[ToolSpec]) -> Result<Box<RawValue>, serde_json::Error> {
    let tools: Vec<ToolDecl<'_>> = tools
        .iter()
        .map(|spec| ToolDecl {
            spec,
            schema_key: "input_schema",
        })
        .collect();
    serde_json::value::to_raw_value(&tools)
}

/// `{base_url}/v1/messages`; a base URL that already ends in `/v1` is accepted.
fn endpoint(base_url: &str) -> String {
    let base = base_url.trim().trim_end_matches('/');
    let base = base.strip_suffix("/v1").unwrap_or(base);
    format!("{base}/v1/messages")
}
