//! `Replay`: a model that plays back recorded provider responses, offline.

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

use super::{StreamDecode, WireFormat, anthropic, gemini, openai, responses};
use crate::env::Env;
use crate::error::{Error, ModelError};
use crate::model::{Completion, Model};

/// A model that answers with recorded provider responses, one per call, in order.
///
/// The recording is JSONL, one response per line, in either form:
///
/// - a raw response body, as the API returned it: an OpenAI chat completion
///   (recognised by `choices`) or an Anthropic message (`"type": "message"`);
/// - an envelope, as the providers' `record_to` writes it:
///   `{"provider": "openai" | "anthropic" | "responses" | "gemini", "body": {..}}` for a
///   JSON response or
///   `{"provider": .., "sse": "event: ..\ndata: ..\n\n"}` for an event stream, which is
///   decoded as a live stream would be (content and reasoning deltas are emitted).
///
/// Responses are decoded by the same code as the live providers, so a replayed
/// conversation is exactly the recorded one. Once all are played, calls fail with
/// [`ModelError::Rejected`].
///
/// ```
/// use brute::{brute_agent, providers::Replay};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let recording = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"Hello from the tape"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":4,"total_tokens":9}}
/// {"provider":"anthropic","body":{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[{"type":"text","text":"Second"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}}"#;
/// let model = Replay::from_jsonl("tape.jsonl", recording)?;
/// let agent = brute_agent! { run model; };
/// assert_eq!(agent.start("hi").await?.text(), Some("Hello from the tape"));
/// assert_eq!(agent.start("again").await?.text(), Some("Second"));
/// assert!(agent.start("more").await.is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
/// ```
#[derive(Clone)]
pub struct Replay {
    entries: Arc<[Entry]>,
    next: Arc<AtomicUsize>,
    source: Arc<str>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Provider {
    OpenAi,
    Anthropic,
    Responses,
    Gemini,
}

#[derive(Debug)]
struct Entry {
    provider: Provider,
    line: usize,
    payload: Payload,
}

#[derive(Debug)]
enum Payload {
    Body(String),
    Sse(String),
}

/// Why a recording could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The file could not be read.
    #[error("cannot read the replay file {path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// What failed.
        message: String,
    },
    /// A line is not a recorded response.
    #[error("{source_name}:{line}: {message}")]
    Line {
        /// The file (or the name given to [`Replay::from_jsonl`]).
        source_name: String,
        /// The line, from 1.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
}

impl From<ReplayError> for Error {
    fn from(error: ReplayError) -> Self {
        Error::other(error)
    }
}

impl Replay {
    /// Loads the recording at `path`.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ReplayError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| ReplayError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Self::from_jsonl(&path.display().to_string(), &text)
    }

    /// Loads a recording from its text; `source` names it in errors.
    pub fn from_jsonl(source: &str, text: &str) -> Result<Self, ReplayError> {
        let mut entries = Vec::new();
        for (index, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let error = |message: String| ReplayError::Line {
                source_name: source.to_owned(),
                line: index + 1,
                message,
            };
            let value: Value =
                serde_json::from_str(line).map_err(|e| error(format!("not JSON: {e}")))?;
            entries.push(entry(&value, line, index + 1).map_err(error)?);
        }
        Ok(Replay {
            entries: entries.into(),
            next: Arc::new(AtomicUsize::new(0)),
            source: source.into(),
        })
    }

    /// How many responses the recording holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the recording holds no response.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many responses are left to play.
    pub fn remaining(&self) -> usize {
        self.entries
            .len()
            .saturating_sub(self.next.load(Ordering::Relaxed))
    }

    fn play(&self, env: &Env) -> Result<Completion, ModelError> {
        let index = self.next.fetch_add(1, Ordering::Relaxed);
        let entry = self.entries.get(index).ok_or_else(|| {
            ModelError::Rejected(format!(
                "replay {}: all {} recorded responses were played",
                self.source,
                self.entries.len()
            ))
        })?;
        let place = format!("replay {}:{}", self.source, entry.line);
        match entry.provider {
            Provider::OpenAi => play::<openai::Codec>(&entry.payload, place, env),
            Provider::Anthropic => play::<anthropic::Codec>(&entry.payload, place, env),
            Provider::Responses => play::<responses::Codec>(&entry.payload, place, env),
            Provider::Gemini => play::<gemini::Codec>(&entry.payload, place, env),
        }
    }
}

/// Decodes a recorded body or stream as format `F`'s live decoders would.
fn play<F: WireFormat>(
    payload: &Payload,
    place: String,
    env: &Env,
) -> Result<Completion, ModelError> {
    match payload {
        Payload::Body(body) => F::decode(body.as_bytes(), &place),
        Payload::Sse(text) => {
            let mut decoder = F::stream_decoder(place, super::DEFAULT_MAX_EVENT_BYTES);
            decoder.feed(text.as_bytes(), env)?;
            decoder.finish(env)
        }
    }
}

fn entry(value: &Value, line: &str, number: usize) -> Result<Entry, String> {
    if let Some(provider) = value.get("provider") {
        let provider = match provider.as_str() {
            Some("openai") => Provider::OpenAi,
            Some("anthropic") => Provider::Anthropic,
            Some("responses") => Provider::Responses,
            Some("gemini") => Provider::Gemini,
            _ => {
                return Err(format!(
                    "unknown provider {provider}: expected \"openai\", \"anthropic\", \"responses\" or \"gemini\""
                ));
            }
        };
        let payload = if let Some(body) = value.get("body") {
            Payload::Body(body.to_string())
        } else if let Some(sse) = value.get("sse").and_then(Value::as_str) {
            Payload::Sse(sse.to_owned())
        } else {
            return Err("an envelope needs a \"body\" object or an \"sse\" string".into());
        };
        return Ok(Entry {
            provider,
            line: number,
            payload,
        });
    }
    let provider = if value.get("choices").is_some() {
        Provider::OpenAi
    } else if value.get("type").and_then(Value::as_str) == Some("message") {
        Provider::Anthropic
    } else {
        return Err(
            "neither an OpenAI chat completion (`choices`) nor an Anthropic message (`\"type\": \"message\"`) nor an envelope (`provider`)"
                .into(),
        );
    };
    Ok(Entry {
        provider,
        line: number,
        payload: Payload::Body(line.to_owned()),
    })
}

#[diagnostic::do_not_recommend]
impl Model for Replay {
    /// A recorded structured answer reads as the live one did: an Anthropic answer
    /// tool's call becomes the reply's text when the env holds the
    /// [`OutputSchema`](crate::structured::OutputSchema).
    async fn complete(&self, env: &Env) -> Result<Completion, Error> {
        let mut completion = self.play(env)?;
        if let Some(output) = env.extensions.get::<crate::structured::OutputSchema>() {
            output.settle(&mut completion.message);
        }
        Ok(completion)
    }

    fn name(&self) -> &str {
        "replay"
    }
}

impl fmt::Debug for Replay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Replay")
            .field("source", &self.source)
            .field("responses", &self.entries.len())
            .field(
                "played",
                &self.next.load(Ordering::Relaxed).min(self.entries.len()),
            )
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_lines_name_the_file_and_line() {
        let err = Replay::from_jsonl("tape.jsonl", "\n{\"choices\":[]}\n{\"x\":1}\n")
            .expect_err("bad line");
        assert_eq!(
            err.to_string(),
            "tape.jsonl:3: neither an OpenAI chat completion (`choices`) nor an Anthropic message (`\"type\": \"message\"`) nor an envelope (`provider`)"
        );
        let err = Replay::from_jsonl("t", "{oops").expect_err("not JSON");
        assert!(err.to_string().starts_with("t:1: not JSON"), "{err}");
    }

    #[test]
    fn streams_replay_like_live_streams() {
        let sse = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
        let line = serde_json::json!({"provider": "openai", "sse": sse}).to_string();
        let replay = Replay::from_jsonl("t", &line).expect("valid");
        let completion = replay.play(&Env::new()).expect("plays");
        assert_eq!(completion.message.content, "Hello");
        assert_eq!(replay.remaining(), 0);
        assert!(matches!(
            replay.play(&Env::new()),
            Err(ModelError::Rejected(_))
        ));
    }
}
