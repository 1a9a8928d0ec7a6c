//! The Gemini API (`POST {base}/models/{model}:generateContent`, and
//! `:streamGenerateContent?alt=sse` when streaming), with the key in `x-goog-api-key`.
//!
//! System messages go to `systemInstruction`; the conversation is `contents` of
//! `user` and `model` turns made of `parts`: text, `inlineData` (an image's or a
//! document's bytes) or `fileData` (its URL), `functionCall` and `functionResponse`
//! (with the name of the function it answers, found from its call). A tool result's
//! images and documents given by their bytes go inside its `functionResponse` as
//! `parts` of `inlineData` (a document's title as `displayName`), the form of Gemini's
//! multimodal function responses; those given by URL, which a function response cannot
//! hold, follow it in the same turn as `fileData` parts. The tools are
//! `functionDeclarations` with their JSON schema (`parametersJsonSchema`).
//!
//! ```
//! use brute::providers::gemini::Codec;
//! use brute::Message;
//!
//! let codec = Codec::new("gemini-2.5-flash").temperature(0.5);
//! let body = codec.encode(&[Message::system("Be terse."), Message::user("Hello")], &[], false)?;
//! let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
//! assert_eq!(body["systemInstruction"], serde_json::json!({"parts": [{"text": "Be terse."}]}));
//! assert_eq!(body["contents"], serde_json::json!([{"role": "user", "parts": [{"text": "Hello"}]}]));
//! assert_eq!(body["generationConfig"], serde_json::json!({"temperature": 0.5}));
//!
//! let reply = br#"{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi!"}]},
//!   "finishReason":"STOP","index":0}],
//!   "usageMetadata":{"promptTokenCount":8,"candidatesTokenCount":2,"totalTokenCount":10}}"#;
//! let completion = Codec::decode(reply, "gemini")?;
//! assert_eq!(completion.message.content, "Hi!");
//! assert_eq!(completion.usage.unwrap().input_tokens, 8);
//! # Ok::<(), brute::ModelError>(())
//! ```
//!
//! # Calls, thoughts and signatures
//!
//! A call the model gives no `id` gets one from brute (beginning with
//! `gemini_call_`, never sent back). The `thoughtSignature`s of a model turn
//! (which Gemini 3 requires back with the parts they came on) are kept on the message
//! and returned with its text and calls on every later call. With
//! `.include_thoughts(true)`, the thought summaries become
//! [`Message::reasoning`](crate::Message::reasoning) (streamed as
//! [`Event::ReasoningDelta`](crate::Event::ReasoningDelta)).
//!
//! # Structured output
//!
//! An [`OutputSchema`](crate::structured::OutputSchema) in the env is
//! `generationConfig: {responseMimeType: "application/json", responseJsonSchema}`; with
//! tools advertised, it is a function the model must call
//! (`toolConfig: {functionCallingConfig: {mode: "ANY"}}`), whose call becomes the
//! reply's text, as not every model combines function calling with a JSON answer.
//!
//! # Usage
//!
//! `usageMetadata`: the prompt's tokens (the cached ones, `cachedContentTokenCount`,
//! among them) are input; the reply's and the thoughts' are output.

mod codec;
mod reading;
mod stream;
mod wire;

pub use codec::Codec;

/// Google's Gemini API address, used when `GEMINI_BASE_URL` is not set.
pub const GEMINI_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// The provider's model type, named `providers::Gemini` outside.
#[cfg(feature = "gemini")]
pub(in crate::providers) mod model {
    use super::*;

    /// A Gemini model over the Gemini API. The [`HttpModel`](crate::providers::HttpModel)
    /// over [`Codec`]: its builder methods (`stream`, timeouts, limits, `record_to`) are
    /// there, with the request parameters of [`Codec`] (`temperature`, `thinking_budget`,
    /// ...).
    ///
    /// Its `Debug` output never shows the key, and no error it returns carries it.
    ///
    /// ```no_run
    /// use brute::{brute_agent, providers::Gemini};
    ///
    /// # async fn run() -> Result<(), brute::Error> {
    /// // GEMINI_API_KEY (or GOOGLE_API_KEY), and GEMINI_BASE_URL if set, come from the environment.
    /// let model = Gemini::new("gemini-2.5-flash").stream(true);
    /// let agent = brute_agent! { run model; };
    /// println!("{:?}", agent.start("Say hi").await?.text());
    /// # Ok(()) }
    /// ```
    pub type Gemini = crate::providers::HttpModel<Codec>;
}

#[cfg(feature = "gemini")]
pub(crate) use model::Gemini;

#[cfg(feature = "gemini")]
impl Gemini {
    /// `model` at the API root in `GEMINI_BASE_URL` (Google's own address when unset),
    /// with the key in `GEMINI_API_KEY`, else in `GOOGLE_API_KEY` (requests go without
    /// a key when neither is set).
    pub fn new(model: impl Into<std::sync::Arc<str>>) -> Self {
        let key = super::ApiKey::from_env(GEMINI_KEY_VAR)
            .or_else(|| super::ApiKey::from_env(GOOGLE_KEY_VAR));
        Self::from_env(
            Codec::new(model),
            "GEMINI_BASE_URL",
            GEMINI_BASE_URL,
            GEMINI_KEY_VAR,
        )
        .key(key)
    }
}

/// The variable holding a Gemini API key.
#[cfg(feature = "gemini")]
pub(super) const GEMINI_KEY_VAR: &str = "GEMINI_API_KEY";
/// The variable read for the key when `GEMINI_API_KEY` is unset (Google's SDKs read it too).
#[cfg(feature = "gemini")]
pub(super) const GOOGLE_KEY_VAR: &str = "GOOGLE_API_KEY";
