//! [`Codec`]: the request parameters, the encoder and the decoder of the Messages API.

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::stream::{Assembled, StreamDecoder};
use super::wire::{Block, Body, EPHEMERAL, Response, System, ToolChoice, Turn, blocks};
use crate::error::ModelError;
use crate::message::{Role, ToolCall};
use crate::model::Completion;
use crate::providers::{Extra, Request, ToolDecl, WireFormat, check_parts, write_body};
use crate::tool::ToolSpec;
use crate::usage::Usage;

/// `max_tokens` when none is set: the API requires the field.
const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The API version sent in `anthropic-version`.
const ANTHROPIC_VERSION: &str = "2023-06-01";

codec! {
    /// The model name and request parameters of a Messages call, with the
    /// encoder and decoders of its wire format.
    pub struct Codec for "anthropic" {
        key_header: ("x-api-key", ""),
        headers: &[("anthropic-version", ANTHROPIC_VERSION)],
        endpoint: endpoint,
        params: Params,
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
    #[serde(skip)]
    cache: bool,
    #[serde(skip)]
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
            cache: true,
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
    /// The most tokens to generate (`max_tokens`, default 8192: the API requires it).
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
    /// Prompt caching (on by default): cache breakpoints
    /// (`cache_control: {type: "ephemeral"}`) on the system prompt, the last tool and
    /// the last block of the conversation, so that each call reads the prefix the last
    /// one wrote. See the [module docs](super#prompt-caching).
    fn prompt_caching(on: bool) |p| p.cache = on;
    /// Any other request field, sent as given (`tool_choice`, `metadata`, ...). An
    /// [`OutputSchema`](crate::structured::OutputSchema) in the env replaces a
    /// `tool_choice` set here for its call.
    fn param(key: impl Into<String>, value: Value) |p| p.extra.insert(key.into(), value);
});

impl Codec {
    /// The request body.
    fn body(&self, request: &Request<'_>) -> Result<Vec<u8>, ModelError> {
        check_parts(Self::NAME, request.messages, true)?;
        let cache = self.params.cache;
        let mut system = String::new();
        let mut turns: Vec<Turn<'_>> = Vec::with_capacity(request.messages.len());
        for message in request.messages {
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
                    cache: false,
                }),
            }
        }
        // The conversation's last block is stable for the next call, which appends to
        // it: the breakpoint there lets that call read everything before it.
        if cache && let Some(last) = turns.last_mut() {
            last.cache = true;
        }
        let (tools, tool_choice) = match request.output {
            None => (self.tools(request.tools)?, None),
            Some(output) => {
                let mut all = request.tools.to_vec();
                all.push(output.tool());
                // A forced tool cannot be combined with extended thinking: then the
                // model chooses, and a text answer is read as the answer.
                let choice = match (&self.params.thinking, request.tools.is_empty()) {
                    (Some(_), _) => None,
                    (None, true) => Some(ToolChoice::Tool {
                        name: output.name(),
                    }),
                    (None, false) => Some(ToolChoice::Any),
                };
                (self.tools(&all)?, choice)
            }
        };
        let extra = Extra::unless_set(&self.params.extra, "tool_choice", tool_choice.is_some());
        let body = Body {
            model: &self.model,
            system: Some(system.as_str())
                .filter(|s| !s.is_empty())
                .map(|text| System { text, cache }),
            messages: &turns,
            tools: tools.as_deref(),
            tool_choice,
            stream: request.stream,
            params: &self.params,
            extra,
        };
        write_body(Self::NAME, request.messages, &body)
    }

    /// The tool list as JSON, with a cache breakpoint on the last tool when caching.
    fn tools(&self, tools: &[ToolSpec]) -> Result<Option<std::sync::Arc<RawValue>>, ModelError> {
        let cache = self.params.cache;
        self.tools
            .encoded(Self::NAME, tools, u8::from(cache), |tools| {
                encode_tools(tools, cache)
            })
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

fn encode_tools(tools: &[ToolSpec], cache: bool) -> Result<Box<RawValue>, serde_json::Error> {
    serde_json::value::to_raw_value(&ToolList { tools, cache })
}

/// The tool declarations, the last with a cache breakpoint when `cache`.
struct ToolList<'a> {
    tools: &'a [ToolSpec],
    cache: bool,
}

impl Serialize for ToolList<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        #[derive(Serialize)]
        struct Cached<'a> {
            #[serde(flatten)]
            tool: ToolDecl<'a>,
            cache_control: super::wire::CacheControl,
        }
        let mut seq = serializer.serialize_seq(Some(self.tools.len()))?;
        for (index, spec) in self.tools.iter().enumerate() {
            let tool = ToolDecl {
                spec,
                schema_key: "input_schema",
            };
            if self.cache && index + 1 == self.tools.len() {
                seq.serialize_element(&Cached {
                    tool,
                    cache_control: EPHEMERAL,
                })?;
            } else {
                seq.serialize_element(&tool)?;
            }
        }
        seq.end()
    }
}

/// `{base_url}/v1/messages`; a base URL that already ends in `/v1` is accepted.
fn endpoint(base_url: &str) -> String {
    let base = base_url.trim().trim_end_matches('/');
    let base = base.strip_suffix("/v1").unwrap_or(base);
    format!("{base}/v1/messages")
}
