//! The OpenAI-compatible Chat Completions API (`POST {base}/chat/completions`), served
//! by OpenAI, Ollama (`/v1`), vLLM, the llama.cpp server and OpenRouter.
//!
//! [`Codec`] turns an env into a request body and a response (JSON or an event stream)
//! into a [`Completion`](crate::Completion); [`OpenAi`] (feature `openai`) sends it
//! over HTTP.
//!
//! ```
//! use brute::providers::openai::Codec;
//! use brute::{Message, model::ToolSpec};
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
//!
//! # Images, documents, structured output, caching
//!
//! - A user message's [`parts`](crate::Message::parts) are content parts before its
//!   text: images as `image_url` (a URL, or the bytes as a `data:` URL), documents as
//!   `file` with their bytes as a `data:` URL. Tool messages take text only, so the
//!   parts of tool results follow the run of results in one user message. A document
//!   by URL, or parts on a system or assistant message, are refused before sending.
//! - An [`OutputSchema`](crate::structured::OutputSchema) in the env is sent as
//!   `response_format: {type: "json_schema", json_schema: {name, schema, strict}}`.
//! - OpenAI caches prompt prefixes by itself; the tokens it read from its cache are
//!   [`Usage::cached_tokens`](crate::Usage::cached_tokens) (and OpenRouter's
//!   `cache_write_tokens` are [`Usage::cache_write_tokens`](crate::Usage::cache_write_tokens)).
//!
//! ```
//! use brute::{Message, message::Part, providers::openai::Codec};
//!
//! let question = Message::user("What is this?").with_part(Part::image("image/png", b"\x89PNG")?);
//! let body = Codec::new("gpt-4o").encode(&[question], &[], false)?;
//! let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
//! assert_eq!(body["messages"][0]["content"], serde_json::json!([
//!     {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
//!     {"type": "text", "text": "What is this?"}
//! ]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod codec;
mod stream;
mod wire;

pub use codec::Codec;

/// OpenAI's API address, used when `OPENAI_BASE_URL` is not set.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

http_model! {
    /// A model served over the OpenAI-compatible Chat Completions API: OpenAI itself,
    /// Ollama, vLLM, the llama.cpp server, OpenRouter. The
    /// [`HttpModel`](crate::providers::HttpModel) over [`Codec`]: its builder methods
    /// (`stream`, timeouts, limits, `record_to`) are there, with the request parameters
    /// of [`Codec`] (`temperature`, `seed`, ...).
    ///
    /// ```no_run
    /// use brute::{brute_agent, providers::OpenAi};
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
    pub type OpenAi = HttpModel<Codec>
        from env("OPENAI_BASE_URL", OPENAI_BASE_URL, "OPENAI_API_KEY") if feature "openai";
}

#[cfg(feature = "openai")]
impl OpenAi {
    /// `model` on a local Ollama through its OpenAI-compatible API: at `OLLAMA_HOST`
    /// when set (`host`, `host:port` or a URL), otherwise `http://localhost:11434`.
    pub fn ollama(model: impl Into<std::sync::Arc<str>>) -> Self {
        let host = std::env::var("OLLAMA_HOST").ok();
        Self::compatible(ollama_base(host.as_deref()), model)
    }

    /// `model` on the server whose API root is `base_url` (the part before
    /// `/chat/completions`, e.g. `http://localhost:8000/v1`), without a key.
    pub fn compatible(base_url: impl AsRef<str>, model: impl Into<std::sync::Arc<str>>) -> Self {
        Self::from_wire(Codec::new(model), base_url)
    }
}

/// The API root of the Ollama at `host` (`OLLAMA_HOST`'s forms: `host`, `host:port`,
/// or a URL), `http://localhost:11434/v1` when unset. A bare host without a port gets
/// 11434; a URL without one keeps its scheme's default, as in Ollama's own client.
#[cfg(feature = "openai")]
pub(crate) fn ollama_base(host: Option<&str>) -> String {
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

#[cfg(all(test, feature = "openai"))]
mod tests {
    use super::ollama_base;

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
