//! Reading a reply's parts (the same for a whole response and for the events of a
//! stream), and the thought signatures a model turn carries.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::wire::Response;
use crate::env::Env;
use crate::error::ModelError;
use crate::message::{Message, ToolCall};
use crate::model::Completion;
use crate::providers::{Deltas, reasoning_state, set_reasoning_state};
use crate::usage::Usage;

/// How the ids brute gives the calls of a model that gave them none begin; such ids
/// are not sent back.
pub(super) const MADE_UP_CALL_ID: &str = "gemini_call_";

/// The thought signatures of a model turn (Gemini wants them back with the parts they
/// came on), kept on the message as `{"gemini_thought_signatures": {..}}`.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct Signatures {
    /// The signature of the turn's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) text: Option<String>,
    /// The signatures of its calls, by call id.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    calls: Vec<(String, String)>,
}

#[derive(Serialize, Deserialize)]
struct Carried<S> {
    gemini_thought_signatures: S,
}

impl Signatures {
    /// The signatures `message` carries, if they are Gemini's.
    pub(super) fn of(message: &Message) -> Option<Signatures> {
        let state = reasoning_state(message)?;
        let carried: Carried<Signatures> = serde_json::from_str(state).ok()?;
        Some(carried.gemini_thought_signatures)
    }

    /// The signature of the call `id`, taken out.
    pub(super) fn take_call(&mut self, id: &str) -> Option<String> {
        let at = self.calls.iter().position(|(call, _)| call == id)?;
        Some(self.calls.swap_remove(at).1)
    }

    fn is_empty(&self) -> bool {
        self.text.is_none() && self.calls.is_empty()
    }
}

/// A reply being read from one response or the events of a stream.
#[derive(Debug, Default)]
pub(super) struct Reading {
    text: String,
    reasoning: String,
    calls: Vec<ToolCall>,
    signatures: Signatures,
    finish_reason: Option<String>,
    usage: Option<Usage>,
}

impl Reading {
    /// Reads one response: its text and thoughts go to `deltas` when streaming (emitted
    /// on the env), into the reading otherwise.
    pub(super) fn read(
        &mut self,
        response: Response,
        place: &str,
        mut deltas: Option<(&mut Deltas, &Env)>,
    ) -> Result<(), ModelError> {
        if let Some(error) = &response.error {
            return Err(crate::providers::errors::body_error(place, error));
        }
        if let Some(usage) = response.usage_metadata {
            // Each event carries the counts so far.
            self.usage = Some(usage.into());
        }
        let Some(candidate) = response.candidates.into_iter().next() else {
            if let Some(reason) = response.prompt_feedback.and_then(|f| f.block_reason) {
                return Err(ModelError::Rejected(format!(
                    "{place}: the prompt was blocked (blockReason {reason})"
                )));
            }
            return Ok(());
        };
        if candidate.finish_reason.is_some() {
            self.finish_reason = candidate.finish_reason;
        }
        for part in candidate.content.map(|c| c.parts).unwrap_or_default() {
            if let Some(call) = part.function_call {
                let id = call
                    .id
                    .filter(|id| !id.is_empty())
                    .unwrap_or_else(made_up_id);
                if let Some(signature) = part.thought_signature {
                    self.signatures.calls.push((id.clone(), signature));
                }
                let args = match call.args {
                    Value::Null => Value::Object(Map::new()),
                    args => args,
                };
                self.calls.push(ToolCall::new(id, call.name, args));
                continue;
            }
            if let Some(signature) = part.thought_signature {
                self.signatures.text = Some(signature);
            }
            let Some(text) = part.text.filter(|t| !t.is_empty()) else {
                continue;
            };
            match (&mut deltas, part.thought) {
                (Some((deltas, env)), true) => deltas.reasoning(&text, env),
                (Some((deltas, env)), false) => deltas.content(&text, env),
                (None, true) => self.reasoning.push_str(&text),
                (None, false) => self.text.push_str(&text),
            }
        }
        Ok(())
    }

    /// How many calls the responses so far have made.
    pub(super) fn calls(&self) -> usize {
        self.calls.len()
    }

    /// Whether a finish reason has come.
    pub(super) fn finished(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// The completion; `streamed` is the text and reasoning the deltas gave. A reply
    /// with nothing in it that stopped for another reason than its end or its length
    /// (`SAFETY`, `RECITATION`, `MALFORMED_FUNCTION_CALL`, ...) is an error naming it.
    pub(super) fn finish(
        self,
        place: &str,
        streamed: Option<(String, Option<String>)>,
    ) -> Result<Completion, ModelError> {
        let (text, reasoning) = streamed.unwrap_or((self.text, Some(self.reasoning)));
        let reasoning = reasoning.filter(|r| !r.is_empty());
        let reason = self.finish_reason.as_deref().unwrap_or("");
        if text.is_empty() && self.calls.is_empty() && !matches!(reason, "" | "STOP" | "MAX_TOKENS")
        {
            return Err(ModelError::Rejected(format!(
                "{place}: the model stopped without a reply (finishReason {reason})"
            )));
        }
        let mut message = Message::tool_calls(text, self.calls);
        message.set_reasoning(reasoning);
        if !self.signatures.is_empty() {
            let carried = Carried {
                gemini_thought_signatures: &self.signatures,
            };
            set_reasoning_state(&mut message, serde_json::to_string(&carried).ok());
        }
        Ok(Completion {
            message,
            usage: self.usage,
        })
    }
}

/// An id for a call the model gave none, random (each `RandomState` has keys of its
/// own: a process's first is seeded by the OS, later ones of a thread are advanced
/// from it), so no process-global counter is needed; the terminal still makes every
/// id unique across the session.
fn made_up_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(0x6765_6d69_6e69);
    format!("{MADE_UP_CALL_ID}{:016x}", hasher.finish())
}
