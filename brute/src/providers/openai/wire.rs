//! The Chat Completions API's JSON shapes: the request (serialised from the
//! conversation without copying it), the response, and the chunks of a stream.

use std::borrow::Cow;

use serde::ser::SerializeSeq;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use super::codec::Params;
use crate::message::{Message, Role};
use crate::usage::Usage;

#[derive(Serialize)]
pub(super) struct Request<'a> {
    pub(super) model: &'a str,
    pub(super) messages: WireMessages<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tools: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(super) stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) stream_options: Option<StreamOptions>,
    #[serde(flatten)]
    pub(super) params: &'a Params,
}

#[derive(Serialize)]
pub(super) struct StreamOptions {
    pub(super) include_usage: bool,
}

/// The conversation in the API's message shapes, serialised without copying it.
pub(super) struct WireMessages<'a>(pub(super) &'a [Message]);

impl Serialize for WireMessages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for message in self.0 {
            seq.serialize_element(&WireMessage::from(message))?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
pub(super) struct WireMessage<'a> {
    pub(super) role: &'static str,
    /// `null` for an assistant message that only calls tools.
    pub(super) content: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) tool_calls: Vec<WireCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tool_call_id: Option<&'a str>,
}

#[derive(Serialize)]
pub(super) struct WireCall<'a> {
    pub(super) id: &'a str,
    pub(super) r#type: &'static str,
    pub(super) function: WireFunction<'a>,
}

#[derive(Serialize)]
pub(super) struct WireFunction<'a> {
    pub(super) name: &'a str,
    pub(super) arguments: Cow<'a, str>,
}

impl<'a> From<&'a Message> for WireMessage<'a> {
    fn from(message: &'a Message) -> Self {
        let role = match message.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        };
        let tool_calls: Vec<WireCall<'a>> = message
            .tool_calls
            .iter()
            .map(|call| WireCall {
                id: &call.id,
                r#type: "function",
                function: WireFunction {
                    name: &call.name,
                    arguments: match &call.arguments {
                        // Arguments that were not JSON go back as the model wrote them.
                        Value::String(raw) => Cow::Borrowed(raw),
                        other => Cow::Owned(other.to_string()),
                    },
                },
            })
            .collect();
        let content = if message.content.is_empty() && !tool_calls.is_empty() {
            None
        } else {
            Some(message.content.as_str())
        };
        WireMessage {
            role,
            content,
            tool_calls,
            tool_call_id: message.tool_call_id.as_deref(),
        }
    }
}

#[derive(Deserialize)]
pub(super) struct Response {
    #[serde(default)]
    pub(super) choices: Vec<Choice>,
    pub(super) usage: Option<WireUsage>,
    pub(super) error: Option<Value>,
}

#[derive(Deserialize)]
pub(super) struct Choice {
    pub(super) message: ResponseMessage,
}

#[derive(Deserialize)]
pub(super) struct ResponseMessage {
    pub(super) content: Option<String>,
    pub(super) refusal: Option<String>,
    /// DeepSeek, vLLM and llama.cpp.
    pub(super) reasoning_content: Option<String>,
    /// Ollama and OpenRouter.
    pub(super) reasoning: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub(super) tool_calls: Vec<ResponseCall>,
}

#[derive(Deserialize)]
pub(super) struct ResponseCall {
    #[serde(default)]
    pub(super) id: String,
    pub(super) function: ResponseFunction,
}

#[derive(Deserialize)]
pub(super) struct ResponseFunction {
    pub(super) name: String,
    #[serde(default)]
    pub(super) arguments: Value,
}

pub(super) fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

#[derive(Deserialize, Default)]
pub(super) struct WireUsage {
    #[serde(default)]
    pub(super) prompt_tokens: u64,
    #[serde(default)]
    pub(super) completion_tokens: u64,
    pub(super) prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize, Default)]
pub(super) struct PromptDetails {
    #[serde(default, deserialize_with = "null_as_default")]
    pub(super) cached_tokens: u64,
}

impl From<WireUsage> for Usage {
    fn from(usage: WireUsage) -> Self {
        Usage {
            input_tokens: usage.prompt_tokens,
            output_tokens: usage.completion_tokens,
            cached_tokens: usage.prompt_tokens_details.map_or(0, |d| d.cached_tokens),
        }
    }
}

#[derive(Deserialize)]
pub(super) struct Chunk {
    #[serde(default, deserialize_with = "null_as_default")]
    pub(super) choices: Vec<ChunkChoice>,
    pub(super) usage: Option<WireUsage>,
    pub(super) error: Option<Value>,
}

#[derive(Deserialize)]
pub(super) struct ChunkChoice {
    #[serde(default)]
    pub(super) delta: Delta,
    pub(super) finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
pub(super) struct Delta {
    pub(super) content: Option<String>,
    pub(super) refusal: Option<String>,
    pub(super) reasoning_content: Option<String>,
    pub(super) reasoning: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub(super) tool_calls: Vec<CallDelta>,
}

#[derive(Deserialize)]
pub(super) struct CallDelta {
    pub(super) index: Option<u64>,
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) function: FunctionDelta,
}

#[derive(Deserialize, Default)]
pub(super) struct FunctionDelta {
    pub(super) name: Option<String>,
    pub(super) arguments: Option<Value>,
}
