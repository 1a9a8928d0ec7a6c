//! The OpenAI Responses API (`POST {base}/responses`), served by OpenAI and by the
//! servers that implement the open "Open Responses" specification.
//!
//! [`Codec`] turns an env into a request body and a response (JSON or an event stream)
//! into a [`Completion`](crate::Completion); [`Responses`] (feature `responses`) sends
//! it over HTTP.
//!
//! The conversation goes as input items: system and user messages as `message` items,
//! the model's turns as its reasoning items, its text and its `function_call` items
//! (each with its `call_id`), tool results as `function_call_output` items.
//!
//! ```
//! use brute::providers::responses::Codec;
//! use brute::Message;
//!
//! let body = Codec::new("gpt-5").encode(&[Message::user("Hello!")], &[], false)?;
//! let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
//! assert_eq!(body["input"][0], serde_json::json!({"type": "message", "role": "user", "content": "Hello!"}));
//! assert_eq!(body["store"], false);
//! assert_eq!(body["include"], serde_json::json!(["reasoning.encrypted_content"]));
//!
//! let reply = br#"{"id":"resp_1","object":"response","status":"completed","model":"gpt-5",
//!   "output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant",
//!     "content":[{"type":"output_text","text":"Hi there!","annotations":[]}]}],
//!   "usage":{"input_tokens":9,"input_tokens_details":{"cached_tokens":0},"output_tokens":3,"total_tokens":12}}"#;
//! let completion = Codec::decode(reply, "responses")?;
//! assert_eq!(completion.message.content, "Hi there!");
//! assert_eq!(completion.usage.unwrap().output_tokens, 3);
//! # Ok::<(), brute::ModelError>(())
//! ```
//!
//! # Reasoning
//!
//! A reasoning model's `reasoning` items are kept on the assistant message that
//! followed them and sent back before it on every later call, as the API wants during
//! tool use. Nothing is stored on the server by default (`store: false`), so each
//! request asks for the reasoning's `encrypted_content`
//! (`include: ["reasoning.encrypted_content"]`), which goes back with the item; with
//! `.store(true)` the server keeps the items and the ids suffice. A summary of the
//! reasoning (`.reasoning_summary("auto")`) becomes
//! [`Message::reasoning`](crate::Message::reasoning).
//!
//! # Images, documents, structured output, caching
//!
//! - A user message's [`parts`](crate::Message::parts) are content parts before its
//!   text: images as `input_image` (a URL or a `data:` URL), documents as `input_file`
//!   (`file_url`, or `file_data` with a file name). A tool result's parts follow its
//!   text in the `function_call_output`'s output.
//! - An [`OutputSchema`](crate::structured::OutputSchema) in the env is sent as
//!   `text: {format: {type: "json_schema", name, schema, strict}}`.
//! - The server caches prompt prefixes by itself; the tokens read from its cache are
//!   [`Usage::cached_tokens`](crate::Usage::cached_tokens).

mod codec;
mod items;
mod stream;
mod wire;

pub use codec::Codec;

// OpenAI's API address, as for Chat Completions.
#[cfg(feature = "responses")]
use super::openai::OPENAI_BASE_URL;

http_model! {
    /// A model served over the OpenAI Responses API: OpenAI itself, or any Open
    /// Responses server. The [`HttpModel`](crate::providers::HttpModel) over [`Codec`]:
    /// its builder methods (`stream`, timeouts, limits, `record_to`) are there, with the
    /// request parameters of [`Codec`] (`reasoning_effort`, `store`, ...).
    ///
    /// ```no_run
    /// use brute::{brute_agent, providers::Responses};
    ///
    /// # async fn run() -> Result<(), brute::Error> {
    /// // OPENAI_API_KEY (and OPENAI_BASE_URL, if set) come from the environment.
    /// let model = Responses::new("gpt-5").reasoning_effort("low").stream(true);
    /// let agent = brute_agent! { run model; };
    /// println!("{:?}", agent.start("Say hi").await?.text());
    /// # Ok(()) }
    /// ```
    pub type Responses = HttpModel<Codec>
        from env("OPENAI_BASE_URL", OPENAI_BASE_URL, "OPENAI_API_KEY") if feature "responses";
}

#[cfg(feature = "responses")]
impl Responses {
    /// `model` on the Open Responses server whose API root is `base_url` (the part
    /// before `/responses`, e.g. `http://localhost:8000/v1`), without a key.
    pub fn compatible(base_url: impl AsRef<str>, model: impl Into<std::sync::Arc<str>>) -> Self {
        Self::from_wire(Codec::new(model), base_url)
    }
}
