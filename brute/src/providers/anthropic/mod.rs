//! The Anthropic Messages API (`POST {base}/v1/messages`).
//!
//! System messages go to the top-level `system` field; tool calls are `tool_use` blocks
//! and tool results `tool_result` blocks in the next user turn; thinking blocks come
//! back with their signature ([`Message::reasoning_signature`](crate::Message)) so that
//! they can be sent again on later calls, as the API requires during tool use.
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

mod codec;
mod stream;
mod wire;

pub use codec::{ANTHROPIC_VERSION, Codec, DEFAULT_MAX_TOKENS};
pub use stream::StreamDecoder;

/// Anthropic's API address, used when `ANTHROPIC_BASE_URL` is not set.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

http_model! {
    /// A Claude model over the Anthropic Messages API. The
    /// [`HttpModel`](super::HttpModel) over [`Codec`]: its builder methods (`stream`,
    /// timeouts, limits, `record_to`) are there, with the request parameters of [`Codec`]
    /// (`max_tokens`, `thinking`, ...).
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
