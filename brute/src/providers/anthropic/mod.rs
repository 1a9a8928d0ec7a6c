//! The Anthropic Messages API (`POST {base}/v1/messages`).
//!
//! System messages go to the top-level `system` field; tool calls are `tool_use` blocks
//! and tool results `tool_result` blocks in the next user turn; thinking blocks come
//! back with their signature ([`Message::reasoning_signature`](crate::Message)) so that
//! they can be sent again on later calls, as the API requires during tool use. Images
//! and documents ([`Message::parts`](crate::Message::parts)) are `image` and `document`
//! blocks before the text, inside the `tool_result` for a tool's.
//!
//! ```
//! use brute::providers::anthropic::Codec;
//! use brute::Message;
//!
//! let codec = Codec::new("claude-sonnet-4-5").max_tokens(1024).prompt_caching(false);
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
//!
//! # Prompt caching
//!
//! On by default. Each request carries three cache breakpoints
//! (`cache_control: {"type": "ephemeral"}`): on the system prompt, on the last tool,
//! and on the last block of the conversation. An agent's conversation only grows
//! between calls, so the whole of one request is the prefix of the next: each call
//! writes the cache up to its last block and the next reads it, paying a tenth of the
//! input price for it. [`Usage::cached_tokens`](crate::Usage::cached_tokens) counts the
//! tokens read and [`Usage::cache_write_tokens`](crate::Usage::cache_write_tokens) those
//! written (writes cost a quarter more than plain input). Prompts under the model's
//! minimum (1024 tokens for most) are not cached, and cost nothing extra.
//! `.prompt_caching(false)` sends no breakpoint.
//!
//! ```
//! use brute::providers::anthropic::Codec;
//! use brute::Message;
//!
//! let body = Codec::new("claude-sonnet-4-5")
//!     .encode(&[Message::system("Be terse."), Message::user("Hello")], &[], false)?;
//! let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
//! let breakpoint = serde_json::json!({"type": "ephemeral"});
//! assert_eq!(body["system"][0]["cache_control"], breakpoint);
//! assert_eq!(body["messages"][0]["content"][0]["cache_control"], breakpoint);
//! # Ok::<(), brute::ModelError>(())
//! ```
//!
//! # Structured output
//!
//! With an [`OutputSchema`](crate::structured::OutputSchema) in the env, the request
//! advertises a tool of the schema's name whose input is the answer, and forces it
//! (`tool_choice: {"type": "tool"}`, or `{"type": "any"}` when other tools are
//! advertised, so the model may call them first; left to the model with extended
//! thinking, which cannot be combined with a forced tool). The call is turned back into
//! the reply's text.

mod codec;
mod stream;
mod wire;

pub use codec::Codec;

/// Anthropic's API address, used when `ANTHROPIC_BASE_URL` is not set.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

http_model! {
    /// A Claude model over the Anthropic Messages API. The
    /// [`HttpModel`](crate::providers::HttpModel) over [`Codec`]: its builder methods
    /// (`stream`, timeouts, limits, `record_to`) are there, with the request parameters
    /// of [`Codec`] (`max_tokens`, `thinking`, ...).
    ///
    /// ```no_run
    /// use brute::{brute_agent, providers::Anthropic};
    ///
    /// # async fn run() -> Result<(), brute::Error> {
    /// // ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL, if set) come from the environment.
    /// let model = Anthropic::new("claude-sonnet-4-5").max_tokens(2048).thinking(1024).stream(true);
    /// let agent = brute_agent! { run model; };
    /// println!("{:?}", agent.start("Say hi").await?.text());
    /// # Ok(()) }
    /// ```
    pub type Anthropic = HttpModel<Codec>
        from env("ANTHROPIC_BASE_URL", ANTHROPIC_BASE_URL, "ANTHROPIC_API_KEY") if feature "anthropic";
}
