//! [`HttpModel`]: one HTTP-backed model for every [`WireFormat`].

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

use super::redact::{Redactor, is_secret_header};
use super::sse::DEFAULT_MAX_EVENT_BYTES;
use super::{ApiKey, Request, StreamDecode, WireFormat};
use crate::env::Env;
use crate::error::{Error, ModelError};
use crate::model::{Completion, Model};

mod recorder;
mod transport;

use recorder::Recorder;
use transport::{Transport, is_json};

/// How long TCP and TLS set-up may take by default: 10 s. A reachable API answers in
/// well under a second; ten leaves room for a slow network, not for a dead host.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long to wait for the response headers by default: 120 s. A streamed call gets
/// them at once; a non-streamed one gets them when the whole reply is written, which
/// for a long answer of a large model takes a minute or two. Long non-streamed
/// reasoning calls may want more, or streaming.
pub const DEFAULT_FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(120);

/// How long a body may stay silent between two chunks by default: 60 s. Streams send
/// a chunk per token (and Anthropic a `ping` every few seconds), so a minute of silence
/// is a server that has stopped.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// The largest reply by default, a non-streamed body or what a stream's reply holds
/// (its text, reasoning and calls): 32 MiB, more than ten times the longest reply a
/// model writes (128k tokens are about 1 MiB of text).
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 32 * 1024 * 1024;

/// The most bytes read of one event stream by default: 256 MiB, ten times the longest
/// reply a model streams (a 128k-token reply is about 1 MiB of text, some 25 MiB as
/// Chat Completions chunks of a token each). An endless stream is refused there; its
/// memory is bounded sooner, by [`DEFAULT_MAX_RESPONSE_BYTES`] of reply kept.
pub const DEFAULT_MAX_STREAM_BYTES: usize = 256 * 1024 * 1024;

/// How long one model call may take in all by default: 15 minutes, from sending the
/// request to the end of the reply. A stream that keeps talking (a keep-alive, or a
/// character now and then) never meets the idle timeout; this bounds it. A long
/// streamed reply of a large model (32k tokens at 40 per second) takes about as long
/// as a quarter of it.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// The timeouts and size limits of an [`HttpModel`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    pub(crate) connect: Duration,
    pub(crate) first_byte: Duration,
    pub(crate) idle: Duration,
    pub(crate) call: Duration,
    pub(crate) max_response_bytes: usize,
    pub(crate) max_event_bytes: usize,
    pub(crate) max_stream_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            connect: DEFAULT_CONNECT_TIMEOUT,
            first_byte: DEFAULT_FIRST_BYTE_TIMEOUT,
            idle: DEFAULT_IDLE_TIMEOUT,
            call: DEFAULT_CALL_TIMEOUT,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
            max_stream_bytes: DEFAULT_MAX_STREAM_BYTES,
        }
    }
}

/// A model behind a JSON-over-HTTP API, in the wire format `F`.
///
/// It owns what every provider has: the endpoint, the API key, extra headers, the
/// streaming switch, timeouts, size limits, recording, and the call (sending, status
/// mapping, reading a body or a stream). The format supplies the encoding and decoding.
/// [`OpenAi`](super::openai::OpenAi) and [`Anthropic`](super::anthropic::Anthropic) are
/// this type over their codecs; their constructors read the usual environment
/// variables, and the format's request parameters (`temperature`, ...) are builder
/// methods here.
///
/// See the [module docs](super#timeouts-and-limits) for the timeouts and limits. Its
/// `Debug` output never shows the key, and no error it returns carries it.
///
/// ```
/// use std::time::Duration;
/// use brute::providers::OpenAi;
///
/// let model = OpenAi::compatible("http://localhost:8000/v1", "qwen3")
///     .api_key("sk-very-secret")
///     .header("x-team", "agents")
///     .stream(true)
///     .first_byte_timeout(Duration::from_secs(300)) // a slow local model
///     .idle_timeout(Duration::from_secs(30))
///     .max_event_bytes(1 << 20)
///     .temperature(0.2);
/// assert_eq!(model.url(), "http://localhost:8000/v1/chat/completions");
/// assert!(!format!("{model:?}").contains("sk-very-secret"));
/// ```
#[derive(Clone)]
pub struct HttpModel<F> {
    wire: F,
    url: Arc<str>,
    key: Option<ApiKey>,
    headers: Vec<(Arc<str>, Arc<str>)>,
    /// Values of headers given with `.secret_header(..)`.
    secret_headers: Vec<Arc<str>>,
    stream: bool,
    redact_output: bool,
    transport: Transport,
    recorder: Option<Recorder>,
}

impl<F: WireFormat> HttpModel<F> {
    /// A model speaking `wire` to the API root `base_url` (see
    /// [`WireFormat::endpoint`]), without a key, not streaming.
    pub fn from_wire(wire: F, base_url: impl AsRef<str>) -> Self {
        HttpModel {
            wire,
            url: F::endpoint(base_url.as_ref()).into(),
            key: None,
            headers: Vec::new(),
            secret_headers: Vec::new(),
            stream: false,
            redact_output: true,
            transport: Transport::default(),
            recorder: None,
        }
    }

    /// A model speaking `wire` to the API root in the environment variable `base_var`
    /// (`default_base` when unset or empty), with the key in `key_var` (none when
    /// unset): what the providers' `new` does.
    #[cfg(any(
        feature = "openai",
        feature = "anthropic",
        feature = "responses",
        feature = "gemini"
    ))]
    pub(crate) fn from_env(wire: F, base_var: &str, default_base: &str, key_var: &str) -> Self {
        let base = std::env::var(base_var)
            .ok()
            .filter(|u| !u.trim().is_empty());
        Self::from_wire(wire, base.as_deref().unwrap_or(default_base))
            .key(ApiKey::from_env(key_var))
    }

    /// Sends requests to the API root `base_url` instead.
    pub fn base_url(mut self, base_url: impl AsRef<str>) -> Self {
        self.url = F::endpoint(base_url.as_ref()).into();
        self
    }

    /// Authenticates with `key` (replacing one read from the environment).
    pub fn api_key(self, key: impl Into<Arc<str>>) -> Self {
        self.key(Some(ApiKey::new(key)))
    }

    /// Authenticates with `key`, or sends no key.
    pub fn key(mut self, key: Option<ApiKey>) -> Self {
        self.key = key;
        self
    }

    /// Sends the header `name: value` with every request (`HTTP-Referer` for
    /// OpenRouter, a proxy's own key, ...). A name or value that is not a valid header
    /// fails each call with [`ModelError::Rejected`].
    ///
    /// A header whose name says it carries a credential (`authorization`,
    /// `proxy-authorization`, `cookie`, `api-key`, or a name holding `key`, `token`,
    /// `secret`, `auth`, `password`, `signature` or `credential`: Azure's `api-key`,
    /// `x-goog-api-key`) is a secret like the API key: its value is redacted from every
    /// error, event and log line. Use [`secret_header`](Self::secret_header) for one
    /// whose name does not say so.
    pub fn header(mut self, name: impl Into<Arc<str>>, value: impl Into<Arc<str>>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sends the header `name: value` with every request, its value a secret whatever
    /// its name: redacted like the API key.
    pub fn secret_header(mut self, name: impl Into<Arc<str>>, value: impl Into<Arc<str>>) -> Self {
        let value = value.into();
        self.secret_headers.push(value.clone());
        self.headers.push((name.into(), value));
        self
    }

    /// Whether the model's own output (its text, reasoning and tool calls, the deltas
    /// emitted while it streams, and what `record_to` writes) has the secrets taken
    /// out before it is decoded, and so before it is stored, emitted or traced
    /// (default `true`; without a key or a secret header there is nothing to take out).
    /// A model that echoes its key then writes `[redacted]`. Errors are redacted
    /// either way.
    pub fn redact_output(mut self, redact: bool) -> Self {
        self.redact_output = redact;
        self
    }

    /// The secrets of this model: its key and the values of its secret headers.
    fn redactor(&self) -> Redactor {
        let mut redactor = Redactor::new(self.key.as_ref());
        for (name, value) in &self.headers {
            if is_secret_header(name) {
                redactor = redactor.with(value);
            }
        }
        for value in &self.secret_headers {
            redactor = redactor.with(value);
        }
        redactor
    }

    /// Streams responses (server-sent events), emitting content and reasoning deltas.
    pub fn stream(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// Sets the connect, first-byte and idle timeouts to `timeout` together.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.transport.set_limits(|l| {
            (l.connect, l.first_byte, l.idle) = (timeout, timeout, timeout);
        });
        self
    }

    /// How long TCP and TLS set-up may take (default [`DEFAULT_CONNECT_TIMEOUT`]).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.transport.set_limits(|l| l.connect = timeout);
        self
    }

    /// How long to wait for the response headers (default
    /// [`DEFAULT_FIRST_BYTE_TIMEOUT`]).
    pub fn first_byte_timeout(mut self, timeout: Duration) -> Self {
        self.transport.set_limits(|l| l.first_byte = timeout);
        self
    }

    /// How long a body may stay silent between two chunks (default
    /// [`DEFAULT_IDLE_TIMEOUT`]).
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.transport.set_limits(|l| l.idle = timeout);
        self
    }

    /// How long one call may take in all, from sending the request to the end of the
    /// reply (default [`DEFAULT_CALL_TIMEOUT`]); past it the call fails with
    /// [`ModelError::Timeout`], however steadily the server was still sending.
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.transport.set_limits(|l| l.call = timeout);
        self
    }

    /// The most bytes read of one event stream (default [`DEFAULT_MAX_STREAM_BYTES`]);
    /// a longer one is refused with [`ModelError::TooLarge`] as soon as it passes the
    /// limit, without reading on. This bounds time and bandwidth; a stream's memory is
    /// bounded by [`max_response_bytes`](Self::max_response_bytes).
    pub fn max_stream_bytes(mut self, limit: usize) -> Self {
        self.transport.set_limits(|l| l.max_stream_bytes = limit);
        self
    }

    /// The largest reply, in bytes (default [`DEFAULT_MAX_RESPONSE_BYTES`]): a
    /// non-streamed body, or what a streamed reply holds (its text, reasoning and tool
    /// calls, not the events' envelopes). A larger one is refused with
    /// [`ModelError::TooLarge`] without being read whole, so a streamed call's memory
    /// is about this plus one event, however long the stream runs.
    pub fn max_response_bytes(mut self, limit: usize) -> Self {
        self.transport.set_limits(|l| l.max_response_bytes = limit);
        self
    }

    /// The largest event of a stream, in bytes (default
    /// [`DEFAULT_MAX_EVENT_BYTES`](crate::providers::DEFAULT_MAX_EVENT_BYTES)); a larger
    /// one is refused with [`ModelError::TooLarge`] as soon as it passes the limit.
    pub fn max_event_bytes(mut self, limit: usize) -> Self {
        self.transport.set_limits(|l| l.max_event_bytes = limit);
        self
    }

    /// Appends every raw response to the JSONL file at `path`, for
    /// [`Replay`](crate::providers::Replay).
    pub fn record_to(mut self, path: impl AsRef<Path>) -> Self {
        self.recorder = Some(Recorder::new(path));
        self
    }

    /// Changes the wire format's settings (the codec's builder methods).
    pub fn with_wire(mut self, f: impl FnOnce(F) -> F) -> Self {
        self.wire = f(self.wire);
        self
    }

    /// The request encoder and response decoders this model uses.
    pub fn wire(&self) -> &F {
        &self.wire
    }

    /// The endpoint requests go to.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn headers(&self, place: &str) -> Result<HeaderMap, ModelError> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let extra = F::HEADERS.iter().map(|&(n, v)| (n, v));
        let custom = self.headers.iter().map(|(n, v)| (&**n, &**v));
        for (name, value) in extra.chain(custom) {
            let name = HeaderName::try_from(name);
            let value = HeaderValue::try_from(value);
            let (Ok(name), Ok(value)) = (name, value) else {
                return Err(ModelError::Rejected(format!(
                    "{place}: a header set with `.header(..)` is not a valid HTTP header"
                )));
            };
            headers.insert(name, value);
        }
        if let Some(key) = &self.key {
            let (name, prefix) = F::KEY_HEADER;
            let mut value =
                HeaderValue::try_from(format!("{prefix}{}", key.expose())).map_err(|_| {
                    ModelError::Authentication(format!(
                        "{place}: the API key contains characters not allowed in a header"
                    ))
                })?;
            value.set_sensitive(true);
            headers.insert(HeaderName::from_static(name), value);
        }
        for (name, value) in headers.iter_mut() {
            if is_secret_header(name.as_str())
                || self
                    .secret_headers
                    .iter()
                    .any(|s| value.as_bytes() == s.as_bytes())
            {
                value.set_sensitive(true);
            }
        }
        Ok(headers)
    }

    /// One call within the call timeout.
    async fn call(&self, env: &Env, redactor: &Redactor) -> Result<Completion, ModelError> {
        let limit = self.transport.limits().call;
        tokio::time::timeout(limit, self.exchange(env, redactor))
            .await
            .map_err(|_| ModelError::Timeout(limit))?
    }

    /// Encode, send, then decode the body or the stream.
    async fn exchange(&self, env: &Env, redactor: &Redactor) -> Result<Completion, ModelError> {
        let url = self.wire.call_url(&self.url, self.stream);
        let place = format!(
            "{}: POST {} (model {})",
            F::NAME,
            redactor.text(&url),
            self.wire.model()
        );
        let request = Request::from_env(env).stream(self.stream);
        let body = self.wire.encode(&request)?;
        let headers = self.headers(&place)?;
        let response = self
            .transport
            .post(&place, &url, headers, body, redactor)
            .await?;
        // What the model wrote has the secrets taken out before it is decoded.
        let output = if self.redact_output {
            redactor.clone()
        } else {
            Redactor::default()
        };
        // Output decoded as it came may be quoted, cut, in a decoding error before the
        // call's redaction sees it: a secret's start left at the cut goes too.
        let cut = |error: ModelError| {
            if self.redact_output {
                error
            } else {
                redactor.quoted_error(error)
            }
        };
        if self.stream && !is_json(&response) {
            let limits = self.transport.limits();
            let mut decoder = F::stream_decoder(place.clone(), limits.max_event_bytes);
            decoder.redact(output.secrets());
            // The reply a stream assembles is held to the size of a whole body: what
            // a call keeps, not what it reads, is its memory.
            let max_kept = limits.max_response_bytes;
            let too_large = |decoder: &F::Stream| {
                (decoder.kept() > max_kept).then(|| ModelError::TooLarge {
                    limit: max_kept,
                    message: format!("{place}: the streamed reply passed the response size limit"),
                })
            };
            let mut raw = Vec::new();
            let mut clean = output.stream();
            let mut buffer = Vec::new();
            self.transport
                .chunks(&place, response, |chunk| {
                    let chunk = clean.feed(chunk, &mut buffer);
                    if self.recorder.is_some() {
                        raw.extend_from_slice(chunk);
                    }
                    decoder.feed(chunk, env).map_err(cut)?;
                    too_large(&decoder).map_or(Ok(()), Err)
                })
                .await?;
            let rest = clean.finish();
            if self.recorder.is_some() {
                raw.extend_from_slice(&rest);
            }
            decoder.feed(&rest, env).map_err(cut)?;
            if let Some(error) = too_large(&decoder) {
                return Err(error);
            }
            let mut completion = decoder.finish(env).map_err(cut)?;
            output.message(&mut completion.message);
            settle(&request, &mut completion);
            if let Some(recorder) = &self.recorder {
                recorder.sse(F::NAME, &raw)?;
            }
            Ok(completion)
        } else {
            // A server may answer a streamed request with plain JSON: decode it as such.
            let body = self.transport.body(&place, response).await?;
            let body = output.bytes(&body);
            let mut completion = F::decode(&body, &place).map_err(cut)?;
            output.message(&mut completion.message);
            settle(&request, &mut completion);
            if let Some(recorder) = &self.recorder {
                recorder.body(F::NAME, &body)?;
            }
            Ok(completion)
        }
    }
}

/// Turns the answer tool's call of a structured request into the reply's text (see
/// [`OutputSchema::settle`](crate::structured::OutputSchema::settle)).
fn settle(request: &Request<'_>, completion: &mut Completion) {
    if let Some(output) = request.output {
        output.settle(&mut completion.message);
    }
}

#[diagnostic::do_not_recommend]
impl<F: WireFormat> Model for HttpModel<F> {
    /// Every error leaves through the redaction point: the key is not in any of them.
    async fn complete(&self, env: &Env) -> Result<Completion, Error> {
        let redactor = self.redactor();
        self.call(env, &redactor).await.map_err(|error| {
            let error = redactor.error(error);
            tracing::debug!(
                gen_ai.system = F::NAME,
                error.message = %error,
                "model call failed"
            );
            Error::Model(error)
        })
    }

    fn name(&self) -> &str {
        self.wire.model()
    }

    fn secrets(&self) -> Vec<&str> {
        self.key.iter().map(ApiKey::expose).collect()
    }
}

impl<F: WireFormat> fmt::Debug for HttpModel<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(n, _)| &**n).collect();
        f.debug_struct("HttpModel")
            .field("format", &F::NAME)
            .field("model", &self.wire.model())
            .field("url", &self.redactor().text(&self.url))
            .field("key", &self.key)
            .field("headers", &header_names)
            .field("stream", &self.stream)
            .field("redact_output", &self.redact_output)
            .field("limits", self.transport.limits())
            .finish_non_exhaustive()
    }
}
