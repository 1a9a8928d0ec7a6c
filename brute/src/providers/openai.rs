//! The OpenAI-compatible Chat Completions API (`POST {base}/chat/completions`), served
//! by OpenAI, Ollama (`/v1`), vLLM, the llama.cpp server and OpenRouter.
//!
//! [`Codec`] turns an env into a request body and a response (JSON or an event stream)
//! into a [`Completion`]; `OpenAi` (feature `openai`) sends it over HTTP.
//!
//! ```
//! use brute::providers::openai::Codec;
//! use brute::{Message, ToolSpec};
//!
//! let codec = Codec::new("gpt-4o").temperature(0.2);
//! let body = codec.encode(&[Message::user("Hello!")], &[], false)?;
//! let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
//! assert_eq!(body["messages"][0], serde_json::json!({"role": "user", "content": "Hello!"}));
//!
//! let reply = br#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o",
//!   "choices":[{"index":0,"message":{"role":"assistant","content":"Hi there!"},"finish_reason":"stop"}],
//!   "usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}"#;
//! let completion = Codec::decode(reply, "openai")?;
//! assert_eq!(completion.message.content, "Hi there!");
//! assert_eq!(completion.usage.unwrap().output_tokens, 3);
//! # Ok::<(), brute::ModelError>(())
//! ```

use std::borrow::Cow;
use std::sync::Arc;

use serde::ser::SerializeSeq;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::errors::body_error;
use super::sse::SseParser;
use super::{ToolsCache, decode_arguments};
use crate::env::Env;
use crate::error::ModelError;
use crate::event::Event;
use crate::message::{Message, Role, ToolCall};
use crate::model::Completion;
use crate::tool::ToolSpec;
use crate::usage::Usage;

/// The model name and request parameters of a Chat Completions call, with the encoder
/// and decoders of its wire format.
///
/// Cloning is cheap; clones share the cache of serialised tool schemas.
#[derive(Clone, Debug)]
pub struct Codec {
    model: Arc<str>,
    params: Arc<Params>,
    tools: ToolsCache,
}

#[derive(Clone, Debug, Default, Serialize)]
struct Params {
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<i64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    stop: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<String>,
    #[serde(skip)]
    parallel_tool_calls: Option<bool>,
    #[serde(flatten)]
    extra: Map<String, Value>,
}

impl Codec {
    /// A codec for `model` with the server's default parameters.
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

    /// Sampling temperature (`temperature`).
    pub fn temperature(self, temperature: f32) -> Self {
        self.with(|p| p.temperature = Some(temperature))
    }

    /// Nucleus sampling (`top_p`).
    pub fn top_p(self, top_p: f32) -> Self {
        self.with(|p| p.top_p = Some(top_p))
    }

    /// The most tokens to generate (`max_tokens`, which every compatible server reads;
    /// OpenAI's reasoning models want [`max_completion_tokens`](Self::max_completion_tokens)).
    pub fn max_tokens(self, max_tokens: u32) -> Self {
        self.with(|p| p.max_tokens = Some(max_tokens))
    }

    /// The most tokens to generate, reasoning included (`max_completion_tokens`, OpenAI).
    pub fn max_completion_tokens(self, max_tokens: u32) -> Self {
        self.with(|p| p.max_completion_tokens = Some(max_tokens))
    }

    /// A sampling seed (`seed`).
    pub fn seed(self, seed: i64) -> Self {
        self.with(|p| p.seed = Some(seed))
    }

    /// Stop sequences (`stop`).
    pub fn stop(self, stop: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.with(|p| p.stop = stop.into_iter().map(Into::into).collect())
    }

    /// Reasoning effort for reasoning models (`reasoning_effort`: `low`, `medium`, `high`).
    pub fn reasoning_effort(self, effort: impl Into<String>) -> Self {
        self.with(|p| p.reasoning_effort = Some(effort.into()))
    }

    /// Whether the model may call several tools in one reply (`parallel_tool_calls`,
    /// sent only when tools are advertised).
    pub fn parallel_tool_calls(self, parallel: bool) -> Self {
        self.with(|p| p.parallel_tool_calls = Some(parallel))
    }

    /// Any other request field, sent as given (`response_format`, `user`, ...).
    pub fn param(self, key: impl Into<String>, value: Value) -> Self {
        self.with(|p| {
            p.extra.insert(key.into(), value);
        })
    }

    /// The JSON request body for `messages` and `tools`; `stream` asks for an event
    /// stream with usage in its last chunk.
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
                ModelError::Rejected(format!("openai: a tool schema does not serialise: {e}"))
            })?)
        };
        let request = Request {
            model: &self.model,
            messages: WireMessages(messages),
            parallel_tool_calls: tools.as_ref().and(self.params.parallel_tool_calls),
            tools: tools.as_deref(),
            stream,
            stream_options: stream.then_some(StreamOptions {
                include_usage: true,
            }),
            params: &self.params,
        };
        let mut body =
            Vec::with_capacity(512 + messages.iter().map(|m| m.content.len() + 64).sum::<usize>());
        serde_json::to_writer(&mut body, &request).map_err(|e| {
            ModelError::Rejected(format!("openai: the request does not serialise: {e}"))
        })?;
        Ok(body)
    }

    /// Decodes a non-streamed response body. `place` names the source in errors.
    pub fn decode(body: &[u8], place: &str) -> Result<Completion, ModelError> {
        let response: Response = serde_json::from_slice(body).map_err(|e| {
            ModelError::Malformed(format!(
                "{place}: the response is not a chat completion: {e}"
            ))
        })?;
        if let Some(error) = &response.error {
            return Err(body_error(place, error, None));
        }
        let choice = response.choices.into_iter().next().ok_or_else(|| {
            ModelError::Malformed(format!("{place}: the response has no choices"))
        })?;
        let wire = choice.message;
        let mut message = Message::assistant(wire.content.or(wire.refusal).unwrap_or_default());
        message.reasoning = wire
            .reasoning_content
            .or(wire.reasoning)
            .filter(|r| !r.is_empty());
        message.tool_calls = wire
            .tool_calls
            .into_iter()
            .map(|call| {
                let arguments = match call.function.arguments {
                    Value::String(raw) => decode_arguments(&raw),
                    Value::Null => Value::Object(Map::new()),
                    other => other,
                };
                ToolCall::new(call.id, call.function.name, arguments)
            })
            .collect();
        Ok(Completion {
            message,
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
        r#type: &'static str,
        function: Function<'a>,
    }
    #[derive(Serialize)]
    struct Function<'a> {
        name: &'a str,
        description: &'a str,
        parameters: &'a Value,
    }
    let tools: Vec<Tool<'_>> = tools
        .iter()
        .map(|t| Tool {
            r#type: "function",
            function: Function {
                name: &t.name,
                description: &t.description,
                parameters: &t.parameters,
            },
        })
        .collect();
    serde_json::value::to_raw_value(&tools)
}

#[derive(Serialize)]
struct Request<'a> {
    model: &'a str,
    messages: WireMessages<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    #[serde(flatten)]
    params: &'a Params,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// The conversation in the API's message shapes, serialised without copying it.
struct WireMessages<'a>(&'a [Message]);

impl Serialize for WireMessages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for message in self.0 {
            seq.serialize_element(&WireMessage::from(message))?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    /// `null` for an assistant message that only calls tools.
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

#[derive(Serialize)]
struct WireCall<'a> {
    id: &'a str,
    r#type: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    arguments: Cow<'a, str>,
}

impl<'a> From<&'a Message> for WireMessage<'a> {
    fn from(message: &'a Message) -> Self {
        let role = match message.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        };
        let tool_calls: Vec<WireCall<'a>> = message
            .tool_calls
            .iter()
            .map(|call| WireCall {
                id: &call.id,
                r#type: "function",
                function: WireFunction {
                    name: &call.name,
                    arguments: match &call.arguments {
                        // Arguments that were not JSON go back as the model wrote them.
                        Value::String(raw) => Cow::Borrowed(raw),
                        other => Cow::Owned(other.to_string()),
                    },
                },
            })
            .collect();
        let content = if message.content.is_empty() && !tool_calls.is_empty() {
            None
        } else {
            Some(message.content.as_str())
        };
        WireMessage {
            role,
            content,
            tool_calls,
            tool_call_id: message.tool_call_id.as_deref(),
        }
    }
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    choices: Vec<Choice>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    message: ResponseMessage,
}

#[derive(Deserialize)]
struct ResponseMessage {
    content: Option<String>,
    refusal: Option<String>,
    /// DeepSeek, vLLM and llama.cpp.
    reasoning_content: Option<String>,
    /// Ollama and OpenRouter.
    reasoning: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    tool_calls: Vec<ResponseCall>,
}

#[derive(Deserialize)]
struct ResponseCall {
    #[serde(default)]
    id: String,
    function: ResponseFunction,
}

#[derive(Deserialize)]
struct ResponseFunction {
    name: String,
    #[serde(default)]
    arguments: Value,
}

fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize, Default)]
struct PromptDetails {
    #[serde(default, deserialize_with = "null_as_default")]
    cached_tokens: u64,
}

impl From<WireUsage> for Usage {
    fn from(usage: WireUsage) -> Self {
        Usage {
            input_tokens: usage.prompt_tokens,
            output_tokens: usage.completion_tokens,
            cached_tokens: usage.prompt_tokens_details.map_or(0, |d| d.cached_tokens),
        }
    }
}

/// Assembles a streamed Chat Completion (`data: {chunk}` events ending with
/// `data: [DONE]`) into the message a non-streamed call returns, emitting
/// [`Event::ContentDelta`] and [`Event::ReasoningDelta`] on the way. Tool-call argument
/// fragments are joined by the call's `index`.
#[derive(Debug, Default)]
pub struct StreamDecoder {
    place: String,
    sse: SseParser,
    content: String,
    reasoning: String,
    calls: Vec<PartialCall>,
    usage: Option<Usage>,
    finished: bool,
    done: bool,
}

#[derive(Debug, Default)]
struct PartialCall {
    index: u64,
    id: String,
    name: String,
    arguments: String,
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default, deserialize_with = "null_as_default")]
    choices: Vec<ChunkChoice>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Delta,
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct Delta {
    content: Option<String>,
    refusal: Option<String>,
    reasoning_content: Option<String>,
    reasoning: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    tool_calls: Vec<CallDelta>,
}

#[derive(Deserialize)]
struct CallDelta {
    index: Option<u64>,
    id: Option<String>,
    #[serde(default)]
    function: FunctionDelta,
}

#[derive(Deserialize, Default)]
struct FunctionDelta {
    name: Option<String>,
    arguments: Option<Value>,
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
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
            ModelError::Malformed(format!(
                "{}: a stream chunk is not JSON ({e}): {}",
                self.place,
                super::errors::quote(data)
            ))
        })?;
        if let Some(error) = &chunk.error {
            return Err(body_error(&self.place, error, None));
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage.into());
        }
        for choice in chunk.choices {
            let delta = choice.delta;
            if let Some(text) = delta.content.or(delta.refusal).filter(|t| !t.is_empty()) {
                self.content.push_str(&text);
                env.emit(Event::ContentDelta(&text));
            }
            if let Some(text) = delta
                .reasoning_content
                .or(delta.reasoning)
                .filter(|t| !t.is_empty())
            {
                self.reasoning.push_str(&text);
                env.emit(Event::ReasoningDelta(&text));
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

    fn call_delta(&mut self, delta: CallDelta) {
        let position = match delta.index {
            Some(index) => self.calls.iter().position(|c| c.index == index),
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
                let last = self.calls.len() - 1;
                &mut self.calls[last]
            }
        };
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
    }

    /// Ends the stream and returns the assembled completion. A stream that stopped
    /// before its end (`[DONE]` or a finish reason) is a dropped connection.
    pub fn finish(mut self, env: &Env) -> Result<Completion, ModelError> {
        let mut sse = std::mem::take(&mut self.sse);
        sse.finish(|_, data| self.event(data, env))?;
        if !self.done && !self.finished {
            return Err(ModelError::Connection(format!(
                "{}: the stream ended before the response was complete",
                self.place
            )));
        }
        let mut message = Message::assistant(self.content);
        message.reasoning = Some(self.reasoning).filter(|r| !r.is_empty());
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

#[cfg(feature = "openai")]
pub use client::{OPENAI_BASE_URL, OpenAi};

#[cfg(all(test, feature = "openai"))]
mod tests {
    use super::client::ollama_base;

    #[test]
    fn ollama_host_forms() {
        assert_eq!(ollama_base(None), "http://localhost:11434/v1");
        assert_eq!(ollama_base(Some("")), "http://localhost:11434/v1");
        assert_eq!(ollama_base(Some("0.0.0.0")), "http://0.0.0.0:11434/v1");
        assert_eq!(ollama_base(Some("gpu-box:8080")), "http://gpu-box:8080/v1");
        assert_eq!(
            ollama_base(Some("https://ollama.example.com/")),
            "https://ollama.example.com/v1"
        );
        assert_eq!(
            ollama_base(Some("https://ollama.example.com:443/proxy")),
            "https://ollama.example.com:443/proxy/v1"
        );
        assert_eq!(ollama_base(Some("[::1]")), "http://[::1]:11434/v1");
        assert_eq!(ollama_base(Some("[::1]:9999")), "http://[::1]:9999/v1");
    }
}

#[cfg(feature = "openai")]
mod client {
    use std::fmt;
    use std::path::Path;
    use std::sync::Arc;
    use std::time::Duration;

    use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
    use serde_json::Value;

    use super::Codec;
    use crate::env::Env;
    use crate::error::{Error, ModelError};
    use crate::model::{Completion, Model};
    use crate::providers::ApiKey;
    use crate::providers::transport::{Recorder, Transport};

    /// OpenAI's API address, used when `OPENAI_BASE_URL` is not set.
    pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

    /// A model served over the OpenAI-compatible Chat Completions API: OpenAI itself,
    /// Ollama, vLLM, the llama.cpp server, OpenRouter.
    ///
    /// ```no_run
    /// use brute::{brute_agent, OpenAi};
    ///
    /// # async fn run() -> Result<(), brute::Error> {
    /// // OPENAI_API_KEY (and OPENAI_BASE_URL, if set) come from the environment.
    /// let model = OpenAi::new("gpt-4o-mini").temperature(0.2).stream(true);
    /// let agent = brute_agent! { run model; };
    /// println!("{:?}", agent.start("Say hi").await?.text());
    ///
    /// // A local Ollama (OLLAMA_HOST or http://localhost:11434), no key.
    /// let local = OpenAi::ollama("qwen3:4b");
    /// # let _ = local; Ok(()) }
    /// ```
    ///
    /// Its `Debug` output never shows the key.
    #[derive(Clone)]
    pub struct OpenAi {
        codec: Codec,
        url: Arc<str>,
        key: Option<ApiKey>,
        stream: bool,
        name: Arc<str>,
        transport: Transport,
    }

    impl OpenAi {
        /// `model` on OpenAI, or on the server at `OPENAI_BASE_URL`, with the key in
        /// `OPENAI_API_KEY` (requests go without a key when it is unset).
        pub fn new(model: impl Into<Arc<str>>) -> Self {
            let base = std::env::var("OPENAI_BASE_URL")
                .ok()
                .filter(|u| !u.trim().is_empty())
                .unwrap_or_else(|| OPENAI_BASE_URL.to_owned());
            Self::compatible(base, model).with_key(ApiKey::from_env("OPENAI_API_KEY"))
        }

        /// `model` on a local Ollama through its OpenAI-compatible API: at `OLLAMA_HOST`
        /// when set (`host`, `host:port` or a URL), otherwise `http://localhost:11434`.
        pub fn ollama(model: impl Into<Arc<str>>) -> Self {
            let host = std::env::var("OLLAMA_HOST").ok();
            Self::compatible(ollama_base(host.as_deref()), model)
        }

        /// `model` on the server whose API root is `base_url` (the part before
        /// `/chat/completions`, e.g. `http://localhost:8000/v1`), without a key.
        pub fn compatible(base_url: impl AsRef<str>, model: impl Into<Arc<str>>) -> Self {
            let codec = Codec::new(model);
            let url = format!(
                "{}/chat/completions",
                base_url.as_ref().trim_end_matches('/')
            );
            OpenAi {
                name: codec.model.clone(),
                codec,
                url: url.into(),
                key: None,
                stream: false,
                transport: Transport::new(),
            }
        }

        fn with_key(mut self, key: Option<ApiKey>) -> Self {
            self.key = key;
            self
        }

        fn codec(mut self, f: impl FnOnce(Codec) -> Codec) -> Self {
            self.codec = f(self.codec);
            self
        }

        /// Sends requests to the API root `base_url` instead.
        pub fn base_url(mut self, base_url: impl AsRef<str>) -> Self {
            self.url = format!(
                "{}/chat/completions",
                base_url.as_ref().trim_end_matches('/')
            )
            .into();
            self
        }

        /// Authenticates with `key` (`Authorization: Bearer`).
        pub fn api_key(self, key: impl Into<Arc<str>>) -> Self {
            self.with_key(Some(ApiKey::new(key)))
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

        /// Sampling temperature.
        pub fn temperature(self, temperature: f32) -> Self {
            self.codec(|c| c.temperature(temperature))
        }

        /// Nucleus sampling.
        pub fn top_p(self, top_p: f32) -> Self {
            self.codec(|c| c.top_p(top_p))
        }

        /// The most tokens to generate (`max_tokens`, read by every compatible server).
        pub fn max_tokens(self, max_tokens: u32) -> Self {
            self.codec(|c| c.max_tokens(max_tokens))
        }

        /// The most tokens to generate, reasoning included (`max_completion_tokens`,
        /// which OpenAI's reasoning models require instead of `max_tokens`).
        pub fn max_completion_tokens(self, max_tokens: u32) -> Self {
            self.codec(|c| c.max_completion_tokens(max_tokens))
        }

        /// A sampling seed.
        pub fn seed(self, seed: i64) -> Self {
            self.codec(|c| c.seed(seed))
        }

        /// Stop sequences.
        pub fn stop(self, stop: impl IntoIterator<Item = impl Into<String>>) -> Self {
            self.codec(|c| c.stop(stop))
        }

        /// Reasoning effort for reasoning models.
        pub fn reasoning_effort(self, effort: impl Into<String>) -> Self {
            self.codec(|c| c.reasoning_effort(effort))
        }

        /// Whether the model may call several tools in one reply.
        pub fn parallel_tool_calls(self, parallel: bool) -> Self {
            self.codec(|c| c.parallel_tool_calls(parallel))
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
            if let Some(key) = &self.key {
                let mut value =
                    HeaderValue::try_from(format!("Bearer {}", key.expose())).map_err(|_| {
                        ModelError::Authentication(format!(
                            "openai: {}: the API key contains characters not allowed in a header",
                            self.url
                        ))
                    })?;
                value.set_sensitive(true);
                headers.insert(AUTHORIZATION, value);
            }
            Ok(headers)
        }

        async fn call(&self, env: &Env) -> Result<Completion, ModelError> {
            let place = format!("openai: POST {} (model {})", self.url, self.codec.model);
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
                    recorder.sse("openai", &raw)?;
                }
                Ok(completion)
            } else {
                let body = self.transport.body(&place, response, secret).await?;
                let completion = Codec::decode(&body, &place)?;
                if let Some(recorder) = recorder {
                    recorder.body("openai", &body)?;
                }
                Ok(completion)
            }
        }
    }

    /// The API root of the Ollama at `host` (`OLLAMA_HOST`'s forms: `host`, `host:port`,
    /// or a URL), `http://localhost:11434/v1` when unset. A bare host without a port gets
    /// 11434; a URL without one keeps its scheme's default, as in Ollama's own client.
    pub(super) fn ollama_base(host: Option<&str>) -> String {
        let host = host
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .unwrap_or("localhost:11434")
            .trim_end_matches('/');
        // As Ollama reads it: a URL keeps its scheme's default port, a bare host gets 11434.
        let (scheme, rest, explicit) = match host.split_once("://") {
            Some((scheme, rest)) => (scheme, rest, true),
            None => ("http", host, false),
        };
        let (authority, path) = match rest.find('/') {
            Some(at) => rest.split_at(at),
            None => (rest, ""),
        };
        // `[::1]` has colons but no port; `[::1]:8080` and `host:8080` have one.
        let has_port = match authority.rsplit_once(']') {
            Some((_, after)) => after.starts_with(':'),
            None => authority.contains(':'),
        };
        let port = if has_port || explicit { "" } else { ":11434" };
        format!("{scheme}://{authority}{port}{path}/v1")
    }

    #[diagnostic::do_not_recommend]
    impl Model for OpenAi {
        async fn complete(&self, env: &Env) -> Result<Completion, Error> {
            Ok(self.call(env).await?)
        }

        fn name(&self) -> &str {
            &self.name
        }
    }

    impl fmt::Debug for OpenAi {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("OpenAi")
                .field("model", &self.codec.model)
                .field("url", &self.url)
                .field("key", &self.key)
                .field("stream", &self.stream)
                .field("timeout", &self.transport.timeout)
                .finish_non_exhaustive()
        }
    }
}
