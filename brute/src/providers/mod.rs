//! Model providers: real LLMs behind the [`Model`](crate::Model) trait.
//!
//! - [`OpenAi`] ([`openai`]) speaks the OpenAI Chat Completions API,
//!   which OpenAI, Ollama (`/v1`), vLLM, the llama.cpp server and OpenRouter all serve
//!   (feature `openai`);
//! - [`Anthropic`] ([`anthropic`]) speaks the Anthropic Messages
//!   API (feature `anthropic`);
//! - [`Responses`] ([`responses`]) speaks the OpenAI Responses API (`POST /v1/responses`),
//!   which OpenAI and the Open Responses servers serve (feature `responses`);
//! - [`Gemini`] ([`gemini`]) speaks the Gemini API's `generateContent` (feature `gemini`);
//! - [`Replay`] plays back a JSONL file of recorded provider responses, offline
//!   (always available).
//!
//! Both HTTP providers are one model, [`HttpModel`], over two [`WireFormat`]s: the
//! model owns the address, the key, extra headers, streaming, timeouts, size limits,
//! recording and the call; a format supplies its encoder, decoder and stream decoder
//! (the `Codec` of each module).
//!
//! Both stream when asked (`.stream(true)`): text and reasoning arrive as
//! [`Event::ContentDelta`](crate::Event::ContentDelta) and
//! [`Event::ReasoningDelta`](crate::Event::ReasoningDelta) while the message is
//! assembled, and the assembled message is the one the non-streamed call returns (a
//! server that answers a streamed request with plain JSON is decoded as JSON).
//! Failures are [`ModelError`]s typed by cause, so that a retry
//! layer can tell a rate limit (with the server's `retry-after`) from a bad key.
//!
//! # Timeouts and limits
//!
//! | setting | default | what it bounds |
//! | --- | --- | --- |
//! | `connect_timeout` | [`DEFAULT_CONNECT_TIMEOUT`] (10 s) | TCP and TLS set-up |
//! | `first_byte_timeout` | [`DEFAULT_FIRST_BYTE_TIMEOUT`] (120 s) | the wait for the response headers |
//! | `idle_timeout` | [`DEFAULT_IDLE_TIMEOUT`] (60 s) | the silence between two chunks of a body |
//! | `call_timeout` | [`DEFAULT_CALL_TIMEOUT`] (15 min) | a whole call, request to the reply's end |
//! | `max_response_bytes` | [`DEFAULT_MAX_RESPONSE_BYTES`] (32 MiB) | a reply: a non-streamed body, or what a stream's reply holds |
//! | `max_event_bytes` | [`DEFAULT_MAX_EVENT_BYTES`] (16 MiB) | one event of a stream |
//! | `max_stream_bytes` | [`DEFAULT_MAX_STREAM_BYTES`] (256 MiB) | the bytes read of a whole stream |
//!
//! A silent server is given up on after the idle timeout; one that keeps talking (a
//! keep-alive comment, a character now and then, an endless stream of valid deltas)
//! after the call timeout or the stream size limit, whichever comes first. A timeout
//! is [`ModelError::Timeout`], a limit [`ModelError::TooLarge`]. A streamed call holds
//! what its reply keeps (text, reasoning, tool calls), not what it has read, so its
//! memory is bounded by `max_response_bytes` plus one event, however long it runs. Bytes of a stream
//! that are not UTF-8 are replaced by `U+FFFD` with a warning in the log
//! (`tracing`), not refused.
//!
//! # Secrets
//!
//! API keys are held in an [`ApiKey`], whose `Debug` prints `[redacted]`. An HTTP
//! model's secrets are its key, whether given with `.api_key(..)` or read from the
//! environment, and the value of every header that carries a credential
//! ([`HttpModel::header`] says which names do; [`HttpModel::secret_header`] for any
//! other). They are replaced by `[redacted]` *before* any text is cut: an error body
//! before it is parsed and quoted (error messages quote at most 500 bytes, and never
//! cut a key-shaped word in two), and the model's own output (a body, or a stream as
//! it arrives, a secret split across chunks included) before it is decoded, so before
//! it is stored, emitted or traced ([`HttpModel::redact_output`], on by default).
//! Every error an HTTP model returns, and so every `Retry` event and log line made
//! from it, passes the same redaction again on its way out.
//!
//! # Images, documents, structured output and prompt caching
//!
//! Both providers send the images and documents of a message
//! ([`Message::parts`](crate::Message::parts)), an
//! [`OutputSchema`](crate::structured::OutputSchema) left in the env (OpenAI as a strict
//! `response_format`, Anthropic as a forced tool whose call becomes the reply's text),
//! and report the prompt-cache tokens read and written in [`Usage`](crate::Usage).
//! Anthropic gets cache breakpoints by default (see
//! [`anthropic`](anthropic#prompt-caching)); OpenAI caches by itself. A call's inputs
//! travel to a [`WireFormat`] as one [`Request`].
//!
//! # Tool results with images and documents
//!
//! A tool can return parts beside its text ([`ToolOutput`](crate::tools::ToolOutput));
//! they travel on the tool result message, and each provider sends them in the form
//! its API takes:
//!
//! | provider | where a tool result's parts go |
//! | --- | --- |
//! | [`Anthropic`](anthropic) | inside the `tool_result` block, as `image` and `document` blocks before its text |
//! | [`Responses`](responses) | inside the `function_call_output`'s output, as `input_image` and `input_file` after its text |
//! | [`Gemini`](gemini) | inside the `functionResponse`, as `parts` of `inlineData` (parts given by URL follow it as `fileData`) |
//! | [`OpenAi`](openai) (Chat Completions) | tool messages take text only: the text goes in the `tool` message, and the parts of a run of results follow it in one `user` message, each result's introduced by `Attached to the result of tool call ID:` |
//!
//! The request encoders and response decoders are public ([`openai::Codec`],
//! [`anthropic::Codec`]) so that other transports, the replay model and the benchmarks
//! use exactly the code the providers use.

use std::fmt;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::error::ModelError;
use crate::message::Message;
use crate::tool::ToolSpec;

#[macro_use]
mod macros;

pub mod anthropic;
mod as_layer;
#[cfg(feature = "http")]
mod client;
mod errors;
mod format;
pub mod gemini;
pub mod openai;
mod redact;
mod replay;
pub mod responses;
mod spec;
mod sse;
mod stream;

pub use crate::scripted::ScriptedModel;
#[cfg(feature = "anthropic")]
pub use anthropic::model::Anthropic;
#[cfg(feature = "http")]
pub use client::{
    DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, DEFAULT_FIRST_BYTE_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_MAX_STREAM_BYTES, HttpModel,
};
pub use format::{Request, StreamDecode, WireFormat};
#[cfg(feature = "gemini")]
pub use gemini::model::Gemini;
#[cfg(feature = "openai")]
pub use openai::model::OpenAi;
pub use replay::{Replay, ReplayError};
#[cfg(feature = "responses")]
pub use responses::model::Responses;
pub use spec::{
    API_KEY_VAR, AnyModel, DEFAULT_ANTHROPIC_MODEL, DEFAULT_GEMINI_MODEL, DEFAULT_OPENAI_MODEL,
    MODEL_VAR, ModelSpec, SpecError, from_env, from_spec,
};
pub use sse::DEFAULT_MAX_EVENT_BYTES;

/// An API key. Its `Debug` output is `ApiKey([redacted])`, it has no `Display` and is
/// never serialised, so it cannot leak into logs, traces or session files by accident.
///
/// ```
/// use brute::providers::ApiKey;
/// let key = ApiKey::new("sk-very-secret");
/// assert_eq!(format!("{key:?}"), "ApiKey([redacted])");
/// assert_eq!(key.expose(), "sk-very-secret");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(Arc<str>);

impl ApiKey {
    /// Wraps a key. An agent whose model holds it hides it from tool results
    /// ([`Model::secrets`](crate::Model::secrets)); nothing is registered anywhere.
    pub fn new(key: impl Into<Arc<str>>) -> Self {
        ApiKey(key.into())
    }

    /// Reads the key from the environment variable `var`; `None` when unset or empty.
    pub fn from_env(var: &str) -> Option<Self> {
        std::env::var(var)
            .ok()
            .filter(|k| !k.trim().is_empty())
            .map(|k| ApiKey::new(k.trim()))
    }

    /// The key itself, for building the request header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

/// The advertised tools serialised once per distinct tool list: the env's tool specs
/// share their schemas (`Arc`), so an unchanged list is recognised by pointer and its
/// JSON reused on every call.
#[derive(Clone, Default)]
pub(crate) struct ToolsCache {
    last: Arc<Mutex<Option<CachedTools>>>,
}

/// A tool list (holding its schemas, so that their addresses stay unique), the variant
/// of its encoding, and its JSON.
type CachedTools = (Vec<ToolSpec>, u8, Arc<RawValue>);

impl ToolsCache {
    /// The JSON array for `tools` (`None` when there are none), from the cache when the
    /// list and the `variant` of the encoding (a format's option that changes it, such as
    /// a cache breakpoint) are the last ones seen; `provider` names the format in errors.
    pub(crate) fn encoded(
        &self,
        provider: &str,
        tools: &[ToolSpec],
        variant: u8,
        encode: impl FnOnce(&[ToolSpec]) -> Result<Box<RawValue>, serde_json::Error>,
    ) -> Result<Option<Arc<RawValue>>, ModelError> {
        if tools.is_empty() {
            return Ok(None);
        }
        self.get(tools, variant, encode).map(Some).map_err(|e| {
            ModelError::Rejected(format!("{provider}: a tool schema does not serialise: {e}"))
        })
    }

    /// The JSON array for `tools`, from the cache when the list is the last one seen.
    fn get(
        &self,
        tools: &[ToolSpec],
        variant: u8,
        encode: impl FnOnce(&[ToolSpec]) -> Result<Box<RawValue>, serde_json::Error>,
    ) -> Result<Arc<RawValue>, serde_json::Error> {
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((specs, seen, json)) = last.as_ref()
            && *seen == variant
            && same_tools(specs, tools)
        {
            return Ok(json.clone());
        }
        let json: Arc<RawValue> = Arc::from(encode(tools)?);
        *last = Some((tools.to_vec(), variant, json.clone()));
        Ok(json)
    }
}

fn same_tools(a: &[ToolSpec], b: &[ToolSpec]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(a, b)| {
            Arc::ptr_eq(&a.parameters, &b.parameters)
                && a.name == b.name
                && a.description == b.description
        })
}

impl fmt::Debug for ToolsCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ToolsCache")
    }
}

/// Tool-call arguments as a provider wrote them (a JSON text) to the [`Value`] a
/// [`ToolCall`](crate::ToolCall) holds: empty means `{}`, text that is not JSON is kept
/// as a string so that the tool layer can report it to the model.
pub(crate) fn decode_arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
}

/// A tool as both APIs declare it: `name`, `description` and the JSON schema of its
/// arguments under `schema_key` (`parameters`, `input_schema`).
pub(crate) struct ToolDecl<'a> {
    pub(crate) spec: &'a ToolSpec,
    pub(crate) schema_key: &'static str,
}

impl Serialize for ToolDecl<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("name", &self.spec.name)?;
        map.serialize_entry("description", &self.spec.description)?;
        map.serialize_entry(self.schema_key, &*self.spec.parameters)?;
        map.end()
    }
}

/// The request fields set with a codec's `param(..)`, less the one the request sets
/// itself (`skip`): serialised flattened into the request, so that no key is written
/// twice.
pub(crate) struct Extra<'a> {
    map: &'a serde_json::Map<String, Value>,
    skip: Option<&'static str>,
}

impl<'a> Extra<'a> {
    /// The fields of `map`, without `field` when the request sets it (`set`).
    pub(crate) fn unless_set(
        map: &'a serde_json::Map<String, Value>,
        field: &'static str,
        set: bool,
    ) -> Self {
        Extra {
            map,
            skip: set.then_some(field),
        }
    }
}

impl Serialize for Extra<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in self.map {
            if self.skip != Some(key.as_str()) {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

/// Refuses a request whose messages carry parts where `provider` cannot take them:
/// on system and assistant messages (neither API accepts images or documents there),
/// and, when `document_urls` is false, documents given by URL.
pub(crate) fn check_parts(
    provider: &str,
    messages: &[Message],
    document_urls: bool,
) -> Result<(), ModelError> {
    use crate::message::{Part, Role, Source};
    for (index, message) in messages.iter().enumerate() {
        let Some(part) = message.parts().first() else {
            continue;
        };
        if matches!(message.role, Role::System | Role::Assistant) {
            return Err(ModelError::Rejected(format!(
                "{provider}: message {index} ({}) has an {} part; the API takes images and documents only in user messages and tool results",
                message.role,
                part.kind()
            )));
        }
        if !document_urls
            && message.parts().iter().any(|p| {
                matches!(
                    p,
                    Part::Document {
                        source: Source::Url(_),
                        ..
                    }
                )
            })
        {
            return Err(ModelError::Rejected(format!(
                "{provider}: message {index} ({}) has a document given by URL; this API takes documents by their bytes (`Part::pdf`)",
                message.role
            )));
        }
    }
    Ok(())
}

/// What a provider other than Anthropic keeps on a message to take its reasoning back on a
/// later call (the Responses API's reasoning items, Gemini's thought signatures), read
/// and written only through this pair: the field it lives in is the message's
/// `reasoning_signature`, Anthropic's thinking signature, and each provider writes JSON
/// of its own shape there, so that it recognises its own state and ignores the rest.
pub(crate) fn reasoning_state(message: &Message) -> Option<&str> {
    message.reasoning_signature()
}

/// Sets what [`reasoning_state`] reads.
pub(crate) fn set_reasoning_state(message: &mut Message, state: Option<String>) {
    message.set_reasoning_signature(state);
}

/// Serialises a request for `messages` into a body sized for them.
pub(crate) fn write_body(
    provider: &str,
    messages: &[Message],
    request: &impl Serialize,
) -> Result<Vec<u8>, ModelError> {
    let mut body = Vec::with_capacity(512 + messages.iter().map(message_size).sum::<usize>());
    serde_json::to_writer(&mut body, request).map_err(|e| {
        ModelError::Rejected(format!("{provider}: the request does not serialise: {e}"))
    })?;
    Ok(body)
}

/// About how many bytes `message` takes in a request body.
fn message_size(message: &Message) -> usize {
    let parts: usize = message
        .parts()
        .iter()
        .map(|p| p.data().map_or(128, |d| d.base64().len() + 64))
        .sum();
    message.content.len() + 64 + parts
}

/// Parses a response body as `T`; `what` says what it should have been
/// (`a chat completion`) in the error, which names `place`.
pub(crate) fn read_body<'a, T: serde::Deserialize<'a>>(
    body: &'a [u8],
    place: &str,
    what: &str,
) -> Result<T, ModelError> {
    serde_json::from_slice(body)
        .map_err(|e| ModelError::Malformed(format!("{place}: the response is not {what}: {e}")))
}

/// The text and reasoning of a streamed reply, each delta emitted as it arrives.
#[derive(Debug, Default)]
pub(crate) struct Deltas {
    content: String,
    reasoning: String,
    /// Takes secrets out of the answer and the reasoning, a secret split across deltas
    /// included (what could start one is held back until the next delta says).
    hide: Option<Box<[redact::StreamRedactor; 2]>>,
}

impl Deltas {
    /// Takes `secrets` out of every delta from now on.
    pub(crate) fn hide(&mut self, secrets: &[Arc<str>]) {
        let redactor = secrets
            .iter()
            .fold(redact::Redactor::default(), |r, s| r.with(s));
        if !redactor.is_empty() {
            self.hide = Some(Box::new([redactor.stream(), redactor.stream()]));
        }
    }

    /// Appends and emits a piece of the answer.
    pub(crate) fn content(&mut self, text: &str, env: &crate::env::Env) {
        let text = self.clean(0, text);
        if !text.is_empty() {
            self.content.push_str(&text);
            env.emit(crate::event::Event::ContentDelta(&text));
        }
    }

    /// Appends and emits a piece of the reasoning.
    pub(crate) fn reasoning(&mut self, text: &str, env: &crate::env::Env) {
        let text = self.clean(1, text);
        if !text.is_empty() {
            self.reasoning.push_str(&text);
            env.emit(crate::event::Event::ReasoningDelta(&text));
        }
    }

    /// The bytes of answer and reasoning held.
    pub(crate) fn kept(&self) -> usize {
        self.content.len() + self.reasoning.len()
    }

    /// Whether any reasoning has arrived.
    pub(crate) fn has_reasoning(&self) -> bool {
        !self.reasoning.is_empty()
    }

    /// What of `text` can be let through now, secrets replaced.
    fn clean<'a>(&mut self, which: usize, text: &'a str) -> std::borrow::Cow<'a, str> {
        let Some(hide) = self.hide.as_mut() else {
            return std::borrow::Cow::Borrowed(text);
        };
        let mut out = Vec::new();
        let released = hide[which].feed(text.as_bytes(), &mut out);
        std::borrow::Cow::Owned(String::from_utf8_lossy(released).into_owned())
    }

    /// The answer and the reasoning (`None` when there was none), with what was held
    /// back at the end (not emitted as a delta: no secret followed).
    pub(crate) fn into_parts(mut self) -> (String, Option<String>) {
        if let Some(hide) = self.hide.as_mut() {
            self.content
                .push_str(&String::from_utf8_lossy(&hide[0].finish()));
            self.reasoning
                .push_str(&String::from_utf8_lossy(&hide[1].finish()));
        }
        (self.content, Some(self.reasoning).filter(|r| !r.is_empty()))
    }
}
