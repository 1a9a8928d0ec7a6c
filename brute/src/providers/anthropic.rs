//! The Anthropic Messages API (`POST {base}/v1/messages`).
//!
//! System messages go to the top-level `system` field; tool calls are `tool_use` blocks
//! and tool results `tool_result` blocks in the next user turn; thinking blocks come
//! back with their signature ([`Message::reasoning_signature`]) so that they can be
//! sent again on later calls, as the API requires during tool use.
//!
//! ```
//! use brute::providers::anthropic::Codec;
//! use brute::Message;
//!
//! let codec = Codec::new("claude-sonnet-4-5").max_tokens(1024);
//! let body = codec.encode(&[Message::system("Be terse."), Message::user("Hello")], &[], false)?;
//! let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
//! assert_eq!(body["system"], "Be terse.");
//! assert_eq!(body["messages"], serde_json::json!([{"role": "user", "content": "Hello"}]));
//!
//! let reply = br#"{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",
//!   "content":[{"type":"text","text":"Hi!"}],"stop_reason":"end_turn","stop_sequence":null,
//!   "usage":{"input_tokens":12,"output_tokens":4}}"#;
//! let completion = Codec::decode(reply, "anthropic")?;
//! assert_eq!(completion.message.content, "Hi!");
//! # Ok::<(), brute::ModelError>(())
//! ```

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::errors::{body_error, quote};
use super::sse::SseParser;
use super::{ToolsCache, decode_arguments};
use crate::env::Env;
use crate::error::ModelError;
use crate::event::Event;
use crate::message::{Message, Role, ToolCall};
use crate::model::Completion;
use crate::tool::ToolSpec;
use crate::usage::Usage;

/// `max_tokens` when none is set: the API requires the field.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The model name and request parameters of a Messages call, with the encoder and
/// decoders of its wire format.
///
/// Cloning is cheap; clones share the cache of serialised tool schemas.
#[derive(Clone, Debug)]
pub struct Codec {
    model: Arc<str>,
    params: Arc<Params>,
    tools: ToolsCache,
}

#[derive(Clone, Debug, Serialize)]
struct Params {
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

impl Codec {
    /// A codec for `model` with `max_tokens` = [`DEFAULT_MAX_TOKENS`].
    pub fn new(model: impl Into<Arc<str>>) -> Self {
        Codec {
            model: model.into(),
            params: Arc::default(),
            tools: ToolsCache::default(),
        }
    }

    /// The model name sent in requests.
    pub fn model(&self) -> &str {
        &self.model
    }

    fn with(mut self, f: impl FnOnce(&mut Params)) -> Self {
        f(Arc::make_mut(&mut self.params));
        self
    }

    /// The most tokens to generate (`max_tokens`).
    pub fn max_tokens(self, max_tokens: u32) -> Self {
        self.with(|p| p.max_tokens = max_tokens)
    }

    /// Sampling temperature (`temperature`).
    pub fn temperature(self, temperature: f32) -> Self {
        self.with(|p| p.temperature = Some(temperature))
    }

    /// Nucleus sampling (`top_p`).
    pub fn top_p(self, top_p: f32) -> Self {
        self.with(|p| p.top_p = Some(top_p))
    }

    /// Top-k sampling (`top_k`).
    pub fn top_k(self, top_k: u32) -> Self {
        self.with(|p| p.top_k = Some(top_k))
    }

    /// Stop sequences (`stop_sequences`).
    pub fn stop(self, stop: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.with(|p| p.stop_sequences = stop.into_iter().map(Into::into).collect())
    }

    /// Extended thinking with a budget (`thinking: {type: "enabled", budget_tokens}`).
    pub fn thinking(self, budget_tokens: u32) -> Self {
        self.with(|p| {
            p.thinking = Some(Thinking {
                r#type: "enabled",
                budget_tokens,
            })
        })
    }

    /// Any other request field, sent as given (`tool_choice`, `metadata`, ...).
    pub fn param(self, key: impl Into<String>, value: Value) -> Self {
        self.with(|p| {
            p.extra.insert(key.into(), value);
        })
    }

    /// The JSON request body for `messages` and `tools`.
    pub fn encode(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
        stream: bool,
    ) -> Result<Vec<u8>, ModelError> {
        let tools = if tools.is_empty() {
            None
        } else {
            Some(self.tools.get(tools, encode_tools).map_err(|e| {
                ModelError::Rejected(format!("anthropic: a tool schema does not serialise: {e}"))
            })?)
        };
        let mut system = String::new();
        let mut turns: Vec<Turn<'_>> = Vec::with_capacity(messages.len());
        for message in messages {
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
            tools: tools.as_deref(),
            stream,
            params: &self.params,
        };
        let mut body =
            Vec::with_capacity(512 + messages.iter().map(|m| m.content.len() + 64).sum::<usize>());
        serde_json::to_writer(&mut body, &request).map_err(|e| {
            ModelError::Rejected(format!("anthropic: the request does not serialise: {e}"))
        })?;
        Ok(body)
    }

    /// Decodes a non-streamed response body. `place` names the source in errors.
    pub fn decode(body: &[u8], place: &str) -> Result<Completion, ModelError> {
        let response: Response = serde_json::from_slice(body).map_err(|e| {
            ModelError::Malformed(format!("{place}: the response is not a message: {e}"))
        })?;
        if let Some(error) = &response.error {
            return Err(body_error(place, error, None));
        }
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

    /// A decoder for a streamed response. `place` names the source in errors.
    pub fn stream_decoder(place: impl Into<String>) -> StreamDecoder {
        StreamDecoder {
            place: place.into(),
            ..StreamDecoder::default()
        }
    }
}

fn encode_tools(tools: &[ToolSpec]) -> Result<Box<RawValue>, serde_json::Error> {
    #[derive(Serialize)]
    struct Tool<'a> {
        name: &'a str,
        description: &'a str,
        input_schema: &'a Value,
    }
    let tools: Vec<Tool<'_>> = tools
        .iter()
        .map(|t| Tool {
            name: &t.name,
            description: &t.description,
            input_schema: &t.parameters,
        })
        .collect();
    serde_json::value::to_raw_value(&tools)
}

#[derive(Serialize)]
struct Request<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<&'a str>,
    messages: &'a [Turn<'a>],
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(flatten)]
    params: &'a Params,
}

struct Turn<'a> {
    role: &'static str,
    content: Vec<OutBlock<'a>>,
}

impl Serialize for Turn<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut turn = serializer.serialize_struct("Turn", 2)?;
        turn.serialize_field("role", self.role)?;
        match self.content.as_slice() {
            // A turn that is one text is sent as a string, as in the API's examples.
            [OutBlock::Text { text }] => turn.serialize_field("content", text)?,
            blocks => turn.serialize_field("content", blocks)?,
        }
        turn.end()
    }
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum OutBlock<'a> {
    Text {
        text: &'a str,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: &'a Value,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
    },
}

/// The blocks of one message, in the order the API wants them.
fn blocks(message: &Message) -> Vec<OutBlock<'_>> {
    let mut blocks = Vec::new();
    match message.role {
        Role::Tool => blocks.push(OutBlock::ToolResult {
            tool_use_id: message.tool_call_id.as_deref().unwrap_or(""),
            content: &message.content,
        }),
        Role::Assistant => {
            // Only signed thinking can go back; reasoning from other providers cannot.
            if let (Some(thinking), Some(signature)) =
                (&message.reasoning, &message.reasoning_signature)
            {
                blocks.push(OutBlock::Thinking {
                    thinking,
                    signature,
                });
            }
            if !message.content.is_empty() {
                blocks.push(OutBlock::Text {
                    text: &message.content,
                });
            }
            for call in &message.tool_calls {
                blocks.push(OutBlock::ToolUse {
                    id: &call.id,
                    name: &call.name,
                    // Arguments that are not an object cannot be a tool_use input;
                    // the call is kept (its result follows it) with an empty input.
                    input: if call.arguments.is_object() {
                        &call.arguments
                    } else {
                        &EMPTY_OBJECT
                    },
                });
            }
        }
        Role::User | Role::System => {
            if !message.content.is_empty() {
                blocks.push(OutBlock::Text {
                    text: &message.content,
                });
            }
        }
    }
    blocks
}

static EMPTY_OBJECT: std::sync::LazyLock<Value> =
    std::sync::LazyLock::new(|| Value::Object(Map::new()));

#[derive(Deserialize)]
struct Response {
    content: Option<Vec<Block>>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        text: String,
    },
    Thinking {
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

impl From<WireUsage> for Usage {
    /// `input_tokens` counts every prompt token, cached or not, as OpenAI's does.
    fn from(usage: WireUsage) -> Self {
        let cached = usage.cache_read_input_tokens.unwrap_or(0);
        Usage {
            input_tokens: usage.input_tokens.unwrap_or(0)
                + cached
                + usage.cache_creation_input_tokens.unwrap_or(0),
            output_tokens: usage.output_tokens.unwrap_or(0),
            cached_tokens: cached,
        }
    }
}

#[derive(Default)]
struct Assembled {
    content: String,
    reasoning: String,
    signature: String,
    calls: Vec<ToolCall>,
}

impl Assembled {
    fn into_message(self) -> Message {
        let mut message = Message::tool_calls(self.content, self.calls);
        message.reasoning = Some(self.reasoning).filter(|r| !r.is_empty());
        message.reasoning_signature = Some(self.signature).filter(|s| !s.is_empty());
        message
    }
}

/// Assembles a streamed Messages response (`message_start`, `content_block_*`,
/// `message_delta`, `message_stop`) into the message a non-streamed call returns,
/// emitting [`Event::ContentDelta`] and [`Event::ReasoningDelta`] on the way.
/// `input_json_delta` fragments are joined per block and parsed at its end.
#[derive(Debug, Default)]
pub struct StreamDecoder {
    place: String,
    sse: SseParser,
    content: String,
    reasoning: String,
    signature: String,
    blocks: Vec<(u64, StreamBlock)>,
    usage: WireUsage,
    has_usage: bool,
    stopped: bool,
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

impl std::fmt::Debug for WireUsage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        Usage::from(*self).fmt(f)
    }
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StreamEvent {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: u64,
        content_block: Value,
    },
    ContentBlockDelta {
        index: u64,
        delta: BlockDelta,
    },
    ContentBlockStop,
    MessageDelta {
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: Value,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct StartMessage {
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockDelta {
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Unknown,
}

impl StreamDecoder {
    /// Feeds the next bytes of the stream; deltas are emitted on `env`.
    pub fn feed(&mut self, bytes: &[u8], env: &Env) -> Result<(), ModelError> {
        let mut sse = std::mem::take(&mut self.sse);
        let result = sse.feed(bytes, |_, data| self.event(data, env));
        self.sse = sse;
        result
    }

    fn event(&mut self, data: &str, env: &Env) -> Result<(), ModelError> {
        let event: StreamEvent = serde_json::from_str(data).map_err(|e| {
            ModelError::Malformed(format!(
                "{}: a stream event is not valid ({e}): {}",
                self.place,
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
                let block = match content_block.get("type").and_then(Value::as_str) {
                    Some("tool_use") => StreamBlock::ToolUse {
                        id: string_field(&content_block, "id"),
                        name: string_field(&content_block, "name"),
                        json: String::new(),
                        input: content_block.get("input").cloned().unwrap_or(Value::Null),
                    },
                    Some("text") => {
                        let text = string_field(&content_block, "text");
                        if !text.is_empty() {
                            self.content.push_str(&text);
                            env.emit(Event::ContentDelta(&text));
                        }
                        StreamBlock::Other
                    }
                    Some("thinking") => {
                        let thinking = string_field(&content_block, "thinking");
                        if !thinking.is_empty() {
                            self.reasoning.push_str(&thinking);
                            env.emit(Event::ReasoningDelta(&thinking));
                        }
                        self.signature
                            .push_str(&string_field(&content_block, "signature"));
                        StreamBlock::Other
                    }
                    _ => StreamBlock::Other,
                };
                self.blocks.push((index, block));
            }
            StreamEvent::ContentBlockDelta { index, delta } => match delta {
                BlockDelta::TextDelta { text } => {
                    self.content.push_str(&text);
                    env.emit(Event::ContentDelta(&text));
                }
                BlockDelta::ThinkingDelta { thinking } => {
                    self.reasoning.push_str(&thinking);
                    env.emit(Event::ReasoningDelta(&thinking));
                }
                BlockDelta::SignatureDelta { signature } => self.signature.push_str(&signature),
                BlockDelta::InputJsonDelta { partial_json } => {
                    match self.blocks.iter_mut().rev().find(|(i, _)| *i == index) {
                        Some((_, StreamBlock::ToolUse { json, .. })) => {
                            json.push_str(&partial_json)
                        }
                        _ => {
                            return Err(ModelError::Malformed(format!(
                                "{}: input_json_delta for block {index}, which is not a tool_use block",
                                self.place
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
            StreamEvent::Error { error } => return Err(body_error(&self.place, &error, None)),
        }
        Ok(())
    }

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

    /// Ends the stream and returns the assembled completion. A stream without its
    /// `message_stop` is a dropped connection.
    pub fn finish(mut self, env: &Env) -> Result<Completion, ModelError> {
        let mut sse = std::mem::take(&mut self.sse);
        sse.finish(|_, data| self.event(data, env))?;
        if !self.stopped {
            return Err(ModelError::Connection(format!(
                "{}: the stream ended before message_stop",
                self.place
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
        let assembled = Assembled {
            content: self.content,
            reasoning: self.reasoning,
            signature: self.signature,
            calls,
        };
        Ok(Completion {
            message: assembled.into_message(),
            usage: self.has_usage.then(|| self.usage.into()),
        })
    }
}

fn string_field(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

#[cfg(feature = "anthropic")]
pub use client::{ANTHROPIC_BASE_URL, ANTHROPIC_VERSION, Anthropic};

#[cfg(feature = "anthropic")]
mod client {
    use std::fmt;
    use std::path::Path;
    use std::sync::Arc;
    use std::time::Duration;

    use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
    use serde_json::Value;

    use super::Codec;
    use crate::env::Env;
    use crate::error::{Error, ModelError};
    use crate::model::{Completion, Model};
    use crate::providers::ApiKey;
    use crate::providers::transport::{Recorder, Transport};

    /// Anthropic's API address, used when `ANTHROPIC_BASE_URL` is not set.
    pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

    /// The API version sent in `anthropic-version`.
    pub const ANTHROPIC_VERSION: &str = "2023-06-01";

    /// A Claude model over the Anthropic Messages API.
    ///
    /// ```no_run
    /// use brute::{brute_agent, Anthropic};
    ///
    /// # async fn run() -> Result<(), brute::Error> {
    /// // ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL, if set) come from the environment.
    /// let model = Anthropic::new("claude-sonnet-4-5").max_tokens(2048).thinking(1024).stream(true);
    /// let agent = brute_agent! { run model; };
    /// println!("{:?}", agent.start("Say hi").await?.text());
    /// # Ok(()) }
    /// ```
    ///
    /// Its `Debug` output never shows the key.
    #[derive(Clone)]
    pub struct Anthropic {
        codec: Codec,
        url: Arc<str>,
        key: Option<ApiKey>,
        stream: bool,
        name: Arc<str>,
        transport: Transport,
    }

    impl Anthropic {
        /// `model` with the key in `ANTHROPIC_API_KEY`, at `ANTHROPIC_BASE_URL` when set.
        pub fn new(model: impl Into<Arc<str>>) -> Self {
            let base = std::env::var("ANTHROPIC_BASE_URL")
                .ok()
                .filter(|u| !u.trim().is_empty())
                .unwrap_or_else(|| ANTHROPIC_BASE_URL.to_owned());
            let codec = Codec::new(model);
            Anthropic {
                name: codec.model.clone(),
                codec,
                url: messages_url(&base).into(),
                key: ApiKey::from_env("ANTHROPIC_API_KEY"),
                stream: false,
                transport: Transport::new(),
            }
        }

        fn codec(mut self, f: impl FnOnce(Codec) -> Codec) -> Self {
            self.codec = f(self.codec);
            self
        }

        /// Sends requests to `base_url` (the part before `/v1/messages`) instead.
        pub fn base_url(mut self, base_url: impl AsRef<str>) -> Self {
            self.url = messages_url(base_url.as_ref()).into();
            self
        }

        /// Authenticates with `key` (`x-api-key`).
        pub fn api_key(mut self, key: impl Into<Arc<str>>) -> Self {
            self.key = Some(ApiKey::new(key));
            self
        }

        /// Streams responses (server-sent events), emitting content and reasoning deltas.
        pub fn stream(mut self, stream: bool) -> Self {
            self.stream = stream;
            self
        }

        /// How long to wait for the response headers, for a whole non-streamed body,
        /// and between two chunks of a stream (default 300 s).
        pub fn timeout(mut self, timeout: Duration) -> Self {
            self.transport.timeout = timeout;
            self
        }

        /// Appends every raw response to the JSONL file at `path`, for [`Replay`](crate::Replay).
        pub fn record_to(mut self, path: impl AsRef<Path>) -> Self {
            self.transport.recorder = Some(Recorder::new(path));
            self
        }

        /// The most tokens to generate (default [`DEFAULT_MAX_TOKENS`](super::DEFAULT_MAX_TOKENS)).
        pub fn max_tokens(self, max_tokens: u32) -> Self {
            self.codec(|c| c.max_tokens(max_tokens))
        }

        /// Sampling temperature.
        pub fn temperature(self, temperature: f32) -> Self {
            self.codec(|c| c.temperature(temperature))
        }

        /// Nucleus sampling.
        pub fn top_p(self, top_p: f32) -> Self {
            self.codec(|c| c.top_p(top_p))
        }

        /// Top-k sampling.
        pub fn top_k(self, top_k: u32) -> Self {
            self.codec(|c| c.top_k(top_k))
        }

        /// Stop sequences.
        pub fn stop(self, stop: impl IntoIterator<Item = impl Into<String>>) -> Self {
            self.codec(|c| c.stop(stop))
        }

        /// Extended thinking with a token budget (below `max_tokens`).
        pub fn thinking(self, budget_tokens: u32) -> Self {
            self.codec(|c| c.thinking(budget_tokens))
        }

        /// Any other request field, sent as given.
        pub fn param(self, key: impl Into<String>, value: Value) -> Self {
            self.codec(|c| c.param(key, value))
        }

        /// The request encoder and response decoders this provider uses.
        pub fn wire(&self) -> &Codec {
            &self.codec
        }

        /// The endpoint requests go to.
        pub fn url(&self) -> &str {
            &self.url
        }

        fn headers(&self) -> Result<HeaderMap, ModelError> {
            let mut headers = HeaderMap::new();
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            headers.insert(
                HeaderName::from_static("anthropic-version"),
                HeaderValue::from_static(ANTHROPIC_VERSION),
            );
            if let Some(key) = &self.key {
                let mut value = HeaderValue::try_from(key.expose()).map_err(|_| {
                    ModelError::Authentication(format!(
                        "anthropic: {}: the API key contains characters not allowed in a header",
                        self.url
                    ))
                })?;
                value.set_sensitive(true);
                headers.insert(HeaderName::from_static("x-api-key"), value);
            }
            Ok(headers)
        }

        async fn call(&self, env: &Env) -> Result<Completion, ModelError> {
            let place = format!("anthropic: POST {} (model {})", self.url, self.codec.model);
            let secret = self.key.as_ref().map(ApiKey::expose);
            let body = self.codec.encode(&env.messages, &env.tools, self.stream)?;
            let response = self
                .transport
                .post(&place, &self.url, self.headers()?, body, secret)
                .await?;
            let recorder = self.transport.recorder.as_ref();
            if self.stream {
                let mut decoder = Codec::stream_decoder(place.clone());
                let mut raw = Vec::new();
                self.transport
                    .chunks(&place, response, secret, |chunk| {
                        if recorder.is_some() {
                            raw.extend_from_slice(chunk);
                        }
                        decoder.feed(chunk, env)
                    })
                    .await?;
                let completion = decoder.finish(env)?;
                if let Some(recorder) = recorder {
                    recorder.sse("anthropic", &raw)?;
                }
                Ok(completion)
            } else {
                let body = self.transport.body(&place, response, secret).await?;
                let completion = Codec::decode(&body, &place)?;
                if let Some(recorder) = recorder {
                    recorder.body("anthropic", &body)?;
                }
                Ok(completion)
            }
        }
    }

    fn messages_url(base: &str) -> String {
        let base = base.trim().trim_end_matches('/');
        let base = base.strip_suffix("/v1").unwrap_or(base);
        format!("{base}/v1/messages")
    }

    #[diagnostic::do_not_recommend]
    impl Model for Anthropic {
        async fn complete(&self, env: &Env) -> Result<Completion, Error> {
            Ok(self.call(env).await?)
        }

        fn name(&self) -> &str {
            &self.name
        }
    }

    impl fmt::Debug for Anthropic {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("Anthropic")
                .field("model", &self.codec.model)
                .field("url", &self.url)
                .field("key", &self.key)
                .field("stream", &self.stream)
                .field("timeout", &self.transport.timeout)
                .finish_non_exhaustive()
        }
    }
}
