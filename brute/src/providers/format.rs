//! What a wire format supplies to the HTTP model: its endpoint and headers, its request
//! encoder, its response decoder and its stream decoder. Everything else (the address,
//! the key, timeouts, limits, recording, the call itself) belongs to
//! [`HttpModel`](super::HttpModel) and is the same for every format.

use std::fmt;

use crate::env::Env;
use crate::error::ModelError;
use crate::message::Message;
use crate::model::Completion;
use crate::structured::OutputSchema;
use crate::tool::ToolSpec;

/// What one model call sends: the conversation, the advertised tools, whether to
/// stream, and the shape the answer must have, if any.
///
/// ```
/// use brute::{Message, providers::{Request, openai::Codec}, structured::OutputSchema};
/// use serde_json::json;
///
/// let messages = [Message::user("Name a city.")];
/// let output = OutputSchema::new("city", json!({"type": "object", "properties": {"name": {"type": "string"}}}));
/// let body = Codec::new("gpt-4o").encode_request(&Request::new(&messages, &[]).output(Some(&output)))?;
/// let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
/// assert_eq!(body["response_format"]["json_schema"]["name"], "city");
/// # Ok::<(), brute::ModelError>(())
/// ```
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct Request<'a> {
    /// The conversation.
    pub messages: &'a [Message],
    /// The advertised tools.
    pub tools: &'a [ToolSpec],
    /// Whether to ask for an event stream.
    pub stream: bool,
    /// The shape the answer must have (see [`OutputSchema`]).
    pub output: Option<&'a OutputSchema>,
}

impl<'a> Request<'a> {
    /// A request for `messages` and `tools`, not streamed, without an output schema.
    pub fn new(messages: &'a [Message], tools: &'a [ToolSpec]) -> Self {
        Request {
            messages,
            tools,
            stream: false,
            output: None,
        }
    }

    /// The request a model makes for `env`: its messages, its tools and the
    /// [`OutputSchema`] in its extensions, if any.
    pub fn from_env(env: &'a Env) -> Self {
        Request {
            messages: &env.messages,
            tools: &env.tools,
            stream: false,
            output: env.extensions.get::<OutputSchema>(),
        }
    }

    /// Asks for an event stream, or not.
    pub fn stream(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// Asks for an answer of the shape `output`, or for any answer.
    pub fn output(mut self, output: Option<&'a OutputSchema>) -> Self {
        self.output = output;
        self
    }
}

/// One provider API's encoding: [`openai::Codec`](super::openai::Codec) (Chat
/// Completions) and [`anthropic::Codec`](super::anthropic::Codec) (Messages). A value
/// holds the model name and request parameters.
///
/// Implement it to reach another JSON-over-HTTP API with everything
/// [`HttpModel`](super::HttpModel) does (timeouts, limits, redaction, recording).
pub trait WireFormat: Clone + fmt::Debug + Send + Sync + 'static {
    /// The decoder of this format's event streams.
    type Stream: StreamDecode;

    /// The provider's name in error places, recordings and replays (`"openai"`).
    const NAME: &'static str;

    /// The header that carries the API key and what precedes the key in its value
    /// (`("authorization", "Bearer ")`).
    const KEY_HEADER: (&'static str, &'static str);

    /// Headers every request carries besides `content-type` and the key
    /// (`anthropic-version`).
    const HEADERS: &'static [(&'static str, &'static str)] = &[];

    /// The model name sent in requests.
    fn model(&self) -> &str;

    /// The endpoint for an API root (`https://api.openai.com/v1` →
    /// `https://api.openai.com/v1/chat/completions`).
    fn endpoint(base_url: &str) -> String;

    /// The address of one call, from the [`endpoint`](WireFormat::endpoint): the
    /// endpoint itself, unless the API puts the model or the choice of a stream in the
    /// address (Gemini's `models/{model}:streamGenerateContent?alt=sse`).
    fn call_url<'a>(&self, endpoint: &'a str, stream: bool) -> std::borrow::Cow<'a, str> {
        let _ = stream;
        std::borrow::Cow::Borrowed(endpoint)
    }

    /// The JSON request body for `request`.
    fn encode(&self, request: &Request<'_>) -> Result<Vec<u8>, ModelError>;

    /// Decodes a non-streamed response body. `place` names the source in errors.
    fn decode(body: &[u8], place: &str) -> Result<Completion, ModelError>;

    /// A decoder for a streamed response from `place` that refuses events larger than
    /// `max_event_bytes`.
    fn stream_decoder(place: String, max_event_bytes: usize) -> Self::Stream;
}

/// Assembles a streamed response, fed with byte chunks as they arrive, into the
/// [`Completion`] the non-streamed call returns, emitting content and reasoning deltas
/// on the env on the way.
pub trait StreamDecode: Send {
    /// Feeds the next bytes of the stream (cut anywhere).
    fn feed(&mut self, bytes: &[u8], env: &Env) -> Result<(), ModelError>;

    /// Ends the stream and returns the assembled completion; a stream that stopped
    /// before its end is a [`ModelError::Connection`].
    fn finish(self, env: &Env) -> Result<Completion, ModelError>;

    /// Replaces `secrets` by `[redacted]` in the deltas emitted from now on, a secret
    /// split across deltas included (what an HTTP model's `redact_output` asks for).
    /// The default does nothing: a decoder that emits no deltas has nothing to hide.
    fn redact(&mut self, secrets: &[std::sync::Arc<str>]) {
        let _ = secrets;
    }

    /// About how many bytes of the reply the decoder holds so far: its text, reasoning
    /// and tool calls, not the bytes it has read. An [`HttpModel`](super::HttpModel)
    /// refuses a stream whose reply passes its `max_response_bytes`, so a stream's
    /// memory is bounded by what its reply keeps rather than by how long it runs. The
    /// default, `0`, opts a decoder out of that bound (the stream size limit still
    /// holds).
    fn kept(&self) -> usize {
        0
    }
}
