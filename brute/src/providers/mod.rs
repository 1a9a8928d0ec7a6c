//! Model providers: real LLMs behind the [`Model`](crate::Model) trait.
//!
//! - `OpenAi` ([`openai`]) speaks the OpenAI Chat Completions API, which OpenAI,
//!   Ollama (`/v1`), vLLM, the llama.cpp server and OpenRouter all serve
//!   (feature `openai`);
//! - `Anthropic` ([`anthropic`]) speaks the Anthropic Messages API
//!   (feature `anthropic`);
//! - [`Replay`] plays back a JSONL file of recorded provider responses, offline
//!   (always available).
//!
//! Both HTTP providers stream when asked (`.stream(true)`): text and reasoning arrive as
//! [`Event::ContentDelta`](crate::Event::ContentDelta) and
//! [`Event::ReasoningDelta`](crate::Event::ReasoningDelta) while the message is
//! assembled, and the assembled message is the one the non-streamed call returns.
//! Failures are [`ModelError`](crate::ModelError)s typed by cause, so that a retry
//! layer can tell a rate limit (with the server's `retry-after`) from a bad key.
//!
//! API keys are held in an [`ApiKey`], whose `Debug` prints `[redacted]`; the key is
//! also scrubbed from every error message a server sends back.
//!
//! The request encoders and response decoders are public ([`openai::Codec`],
//! [`anthropic::Codec`]) so that other transports, the replay model and the benchmarks
//! use exactly the code the providers use.

use std::fmt;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use serde_json::value::RawValue;

use crate::tool::ToolSpec;

pub mod anthropic;
mod errors;
pub mod openai;
mod replay;
mod sse;
#[cfg(feature = "http")]
mod transport;

pub use replay::{Replay, ReplayError};

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
    /// Wraps a key.
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

/// A tool list (holding its schemas, so that their addresses stay unique) and its JSON.
type CachedTools = (Vec<ToolSpec>, Arc<RawValue>);

impl ToolsCache {
    /// The JSON array for `tools`, from the cache when the list is the last one seen.
    pub(crate) fn get(
        &self,
        tools: &[ToolSpec],
        encode: impl FnOnce(&[ToolSpec]) -> Result<Box<RawValue>, serde_json::Error>,
    ) -> Result<Arc<RawValue>, serde_json::Error> {
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((specs, json)) = last.as_ref()
            && same_tools(specs, tools)
        {
            return Ok(json.clone());
        }
        let json: Arc<RawValue> = Arc::from(encode(tools)?);
        *last = Some((tools.to_vec(), json.clone()));
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
