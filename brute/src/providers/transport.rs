//! Sending a provider request and reading its response, with timeouts and errors
//! mapped to [`ModelError`]. Shared by the providers.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::value::RawValue;

use super::errors::{redact, retry_after, status_error};
use crate::error::ModelError;

/// The default timeout: for the response headers, for a whole non-streamed body, and
/// for the silence between two chunks of a stream.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// An HTTP client with a timeout.
#[derive(Clone, Debug)]
pub(crate) struct Transport {
    client: Result<reqwest::Client, Arc<str>>,
    pub(crate) timeout: Duration,
    pub(crate) recorder: Option<Recorder>,
}

impl Transport {
    pub(crate) fn new() -> Self {
        let client = crate::http::client_builder()
            // A redirect would send custom key headers (`x-api-key`) to another host.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Arc::from(format!("could not build the HTTP client: {e}")));
        Transport {
            client,
            timeout: DEFAULT_TIMEOUT,
            recorder: None,
        }
    }

    /// Posts `body` to `url` and returns the response if its status is a success.
    pub(crate) async fn post(
        &self,
        place: &str,
        url: &str,
        headers: HeaderMap,
        body: Vec<u8>,
        secret: Option<&str>,
    ) -> Result<reqwest::Response, ModelError> {
        let client = self
            .client
            .as_ref()
            .map_err(|e| ModelError::Connection(format!("{place}: {e}")))?;
        let request = client.post(url).headers(headers).body(body).send();
        let response = tokio::time::timeout(self.timeout, request)
            .await
            .map_err(|_| ModelError::Timeout(self.timeout))?
            .map_err(|e| self.request_error(place, &e, secret))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let wait = retry_after(response.headers());
        let body = match tokio::time::timeout(self.timeout, response.bytes()).await {
            Ok(Ok(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
            _ => String::new(),
        };
        Err(status_error(place, status.as_u16(), wait, &body, secret))
    }

    /// The whole body of a non-streamed response.
    pub(crate) async fn body(
        &self,
        place: &str,
        response: reqwest::Response,
        secret: Option<&str>,
    ) -> Result<bytes::Bytes, ModelError> {
        tokio::time::timeout(self.timeout, response.bytes())
            .await
            .map_err(|_| ModelError::Timeout(self.timeout))?
            .map_err(|e| self.request_error(place, &e, secret))
    }

    /// Feeds the chunks of a streamed body to `on_chunk` as they arrive; fails when the
    /// server is silent for longer than the timeout.
    pub(crate) async fn chunks(
        &self,
        place: &str,
        mut response: reqwest::Response,
        secret: Option<&str>,
        mut on_chunk: impl FnMut(&[u8]) -> Result<(), ModelError>,
    ) -> Result<(), ModelError> {
        loop {
            let chunk = tokio::time::timeout(self.timeout, response.chunk())
                .await
                .map_err(|_| ModelError::Timeout(self.timeout))?
                .map_err(|e| self.request_error(place, &e, secret))?;
            match chunk {
                Some(chunk) => on_chunk(&chunk)?,
                None => return Ok(()),
            }
        }
    }

    fn request_error(
        &self,
        place: &str,
        error: &reqwest::Error,
        secret: Option<&str>,
    ) -> ModelError {
        let text = redact(&error_chain(error), secret);
        if error.is_timeout() {
            ModelError::Timeout(self.timeout)
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

/// Appends the raw responses of a provider to a JSONL file that [`Replay`](super::Replay)
/// plays back: `{"provider":..,"body":{..}}` for a JSON response,
/// `{"provider":..,"sse":".."}` for a stream.
#[derive(Clone, Debug)]
pub(crate) struct Recorder {
    path: Arc<PathBuf>,
    lock: Arc<Mutex<()>>,
}

impl Recorder {
    pub(crate) fn new(path: impl AsRef<Path>) -> Self {
        Recorder {
            path: Arc::new(path.as_ref().to_path_buf()),
            lock: Arc::default(),
        }
    }

    /// Records a JSON response body.
    pub(crate) fn body(&self, provider: &str, body: &[u8]) -> Result<(), ModelError> {
        let body: &RawValue = serde_json::from_slice(body)
            .map_err(|e| ModelError::Malformed(format!("recording: the body is not JSON: {e}")))?;
        let line = serde_json::json!({ "provider": provider, "body": body });
        self.append(&line)
    }

    /// Records the text of an event stream.
    pub(crate) fn sse(&self, provider: &str, text: &[u8]) -> Result<(), ModelError> {
        let line =
            serde_json::json!({ "provider": provider, "sse": String::from_utf8_lossy(text) });
        self.append(&line)
    }

    fn append(&self, line: &serde_json::Value) -> Result<(), ModelError> {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut text = line.to_string();
        text.push('\n');
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&*self.path)
            .and_then(|mut file| file.write_all(text.as_bytes()))
            .map_err(|e| ModelError::Rejected(format!("recording to {}: {e}", self.path.display())))
    }
}
