//! Sending a provider request and reading its response, with the HTTP model's timeouts
//! and size limits, and failures mapped to [`ModelError`].

use std::sync::{Arc, OnceLock};

use reqwest::header::HeaderMap;

use super::Limits;
use crate::error::ModelError;
use crate::providers::errors::{retry_after, status_error};
use crate::providers::redact::Redactor;

/// How much of an error response's body is read (its message is quoted from it).
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// An HTTP client, built on first use with the connect timeout, shared by clones.
type LazyClient = Arc<OnceLock<Result<reqwest::Client, Arc<str>>>>;

/// Sends requests and reads responses within [`Limits`].
#[derive(Clone, Debug, Default)]
pub(crate) struct Transport {
    client: LazyClient,
    limits: Limits,
}

impl Transport {
    pub(crate) fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Changes the limits; a new connect timeout takes a new client.
    pub(crate) fn set_limits(&mut self, f: impl FnOnce(&mut Limits)) {
        let connect = self.limits.connect;
        f(&mut self.limits);
        if self.limits.connect != connect {
            self.client = LazyClient::default();
        }
    }

    fn client(&self, place: &str) -> Result<&reqwest::Client, ModelError> {
        self.client
            .get_or_init(|| {
                crate::http::client_builder()
                    // A redirect would send custom key headers (`x-api-key`) to another host.
                    .redirect(reqwest::redirect::Policy::none())
                    .connect_timeout(self.limits.connect)
                    .build()
                    .map_err(|e| Arc::from(format!("could not build the HTTP client: {e}")))
            })
            .as_ref()
            .map_err(|e| ModelError::Connection(format!("{place}: {e}")))
    }

    /// Posts `body` to `url` and returns the response once its headers arrived, if its
    /// status is a success. A failure's body has the secrets of `redactor` taken out
    /// before it is parsed or quoted.
    pub(crate) async fn post(
        &self,
        place: &str,
        url: &str,
        headers: HeaderMap,
        body: Vec<u8>,
        redactor: &Redactor,
    ) -> Result<reqwest::Response, ModelError> {
        let request = self.client(place)?.post(url).headers(headers).body(body);
        let response = tokio::time::timeout(self.limits.first_byte, request.send())
            .await
            .map_err(|_| ModelError::Timeout(self.limits.first_byte))?
            .map_err(|e| self.request_error(place, &e))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let wait = retry_after(response.headers());
        // The message is quoted from the body's start; a body that fails half-way
        // still gives its status.
        let mut body = Vec::new();
        let _ = self
            .read(place, response, |chunk| {
                let room = ERROR_BODY_LIMIT - body.len();
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                Ok(body.len() < ERROR_BODY_LIMIT)
            })
            .await;
        let text = String::from_utf8_lossy(&body);
        let text = if body.len() >= ERROR_BODY_LIMIT {
            redactor.truncated(&text)
        } else {
            redactor.text(&text)
        };
        Err(status_error(place, status.as_u16(), wait, &text))
    }

    /// The whole body of a non-streamed response, refused once it passes
    /// `max_response_bytes` (at once when its `content-length` says so).
    pub(crate) async fn body(
        &self,
        place: &str,
        response: reqwest::Response,
    ) -> Result<Vec<u8>, ModelError> {
        let limit = self.limits.max_response_bytes;
        let too_large = || ModelError::TooLarge {
            limit,
            message: format!("{place}: the response body passed the response size limit"),
        };
        let announced = response.content_length().unwrap_or(0);
        if announced > limit as u64 {
            return Err(too_large());
        }
        let mut body = Vec::with_capacity(announced as usize);
        self.read(place, response, |chunk| {
            if body.len() + chunk.len() > limit {
                return Err(too_large());
            }
            body.extend_from_slice(chunk);
            Ok(true)
        })
        .await?;
        Ok(body)
    }

    /// Feeds the chunks of a streamed body to `on_chunk` as they arrive, refused once
    /// the stream passes `max_stream_bytes` (at once when its `content-length` says so).
    pub(crate) async fn chunks(
        &self,
        place: &str,
        response: reqwest::Response,
        mut on_chunk: impl FnMut(&[u8]) -> Result<(), ModelError>,
    ) -> Result<(), ModelError> {
        let limit = self.limits.max_stream_bytes;
        let too_large = || ModelError::TooLarge {
            limit,
            message: format!("{place}: the event stream passed the stream size limit"),
        };
        if response.content_length().unwrap_or(0) > limit as u64 {
            return Err(too_large());
        }
        let mut total = 0usize;
        self.read(place, response, |chunk| {
            total = total.saturating_add(chunk.len());
            if total > limit {
                return Err(too_large());
            }
            on_chunk(chunk).map(|()| true)
        })
        .await
    }

    /// Reads `response` chunk by chunk, giving `on_chunk` each one, until the body ends
    /// or `on_chunk` says `false`. Fails when the server is silent for longer than the
    /// idle timeout.
    async fn read(
        &self,
        place: &str,
        mut response: reqwest::Response,
        mut on_chunk: impl FnMut(&[u8]) -> Result<bool, ModelError>,
    ) -> Result<(), ModelError> {
        loop {
            let chunk = tokio::time::timeout(self.limits.idle, response.chunk())
                .await
                .map_err(|_| ModelError::Timeout(self.limits.idle))?
                .map_err(|e| self.request_error(place, &e))?;
            let Some(chunk) = chunk else {
                return Ok(());
            };
            if !on_chunk(&chunk)? {
                return Ok(());
            }
        }
    }

    fn request_error(&self, place: &str, error: &reqwest::Error) -> ModelError {
        let text = error_chain(error);
        if error.is_connect() && error.is_timeout() {
            ModelError::Timeout(self.limits.connect)
        } else if error.is_timeout() {
            ModelError::Timeout(self.limits.first_byte)
        } else if error.is_builder() {
            // A bad URL or header: trying again cannot help.
            ModelError::Rejected(format!("{place}: the request cannot be built: {text}"))
        } else if error.is_connect() {
            ModelError::Connection(format!("{place}: could not connect: {text}"))
        } else if error.is_body() || error.is_decode() {
            // We parse bodies ourselves, so reqwest's decode errors come from reading
            // the body off the connection (an EOF inside a chunk, a reset).
            ModelError::Connection(format!(
                "{place}: the connection dropped while reading the response: {text}"
            ))
        } else {
            ModelError::Connection(format!("{place}: {text}"))
        }
    }
}

/// An error and its sources, `: `-separated (reqwest's own message is terse).
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Whether a response is JSON rather than an event stream (`application/json` or a
/// `+json` type): what a server that ignores `stream: true` sends.
pub(crate) fn is_json(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .is_some_and(|mime| mime == "application/json" || mime.ends_with("+json"))
}
