//! The Chat Completions API's JSON shapes: the request (serialised from the
//! conversation without copying it), the response, and the chunks of a stream.

use std::borrow::Cow;

use serde::ser::SerializeSeq;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::message::{Message, Part, Role, Source};
use crate::providers::Extra;
use crate::structured::OutputSchema;
use crate::usage::Usage;

#[derive(Serialize)]
pub(super) struct Body<'a, P> {
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) response_format: Option<ResponseFormat<'a>>,
    /// The codec's request parameters, flattened in: the wire shapes do not name the
    /// codec's types.
    #[serde(flatten)]
    pub(super) params: &'a P,
    #[serde(flatten)]
    pub(super) extra: Extra<'a>,
}

/// `{"type": "json_schema", "json_schema": {"name", "schema", "strict"}}`.
#[derive(Serialize)]
pub(super) struct ResponseFormat<'a> {
    r#type: &'static str,
    json_schema: JsonSchema<'a>,
}

#[derive(Serialize)]
struct JsonSchema<'a> {
    name: &'a str,
    schema: &'a Value,
    strict: bool,
}

impl<'a> ResponseFormat<'a> {
    pub(super) fn new(output: &'a OutputSchema) -> Self {
        ResponseFormat {
            r#type: "json_schema",
            json_schema: JsonSchema {
                name: output.name(),
                schema: output.schema(),
                strict: output.is_strict(),
            },
        }
    }
}

#[derive(Serialize)]
pub(super) struct StreamOptions {
    pub(super) include_usage: bool,
}

/// The conversation in the API's message shapes, serialised without copying it.
///
/// Tool messages take text only: the images and documents of tool results follow the
/// run of tool messages they belong to in one user message (the API wants every tool
/// result right after the call, with nothing between them).
pub(super) struct WireMessages<'a>(pub(super) &'a [Message]);

impl Serialize for WireMessages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        // Tool results with parts, waiting for the end of their run.
        let mut pending: Vec<&Message> = Vec::new();
        for message in self.0 {
            if message.role != Role::Tool && !pending.is_empty() {
                seq.serialize_element(&ToolParts(&pending))?;
                pending.clear();
            }
            seq.serialize_element(&WireMessage::from(message))?;
            if message.role == Role::Tool && !message.parts().is_empty() {
                pending.push(message);
            }
        }
        if !pending.is_empty() {
            seq.serialize_element(&ToolParts(&pending))?;
        }
        seq.end()
    }
}

/// A user message carrying the parts of the tool results in a run, each introduced by
/// a line naming its call.
struct ToolParts<'a>(&'a [&'a Message]);

impl Serialize for ToolParts<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        struct Items<'a>(&'a [&'a Message]);
        impl Serialize for Items<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut seq = serializer.serialize_seq(None)?;
                for message in self.0 {
                    let id = message.tool_call_id.as_deref().unwrap_or("");
                    let label = format!("Attached to the result of tool call {id}:");
                    seq.serialize_element(&TextPart { text: &label })?;
                    for part in message.parts() {
                        seq.serialize_element(&WirePart(part))?;
                    }
                }
                seq.end()
            }
        }
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("role", "user")?;
        map.serialize_entry("content", &Items(self.0))?;
        map.end()
    }
}

/// A message's content: its text, or its parts then its text.
pub(super) enum Content<'a> {
    Text(&'a str),
    Parts(&'a Message),
}

impl Serialize for Content<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Content::Text(text) => serializer.serialize_str(text),
            Content::Parts(message) => {
                let mut seq = serializer.serialize_seq(None)?;
                for part in message.parts() {
                    seq.serialize_element(&WirePart(part))?;
                }
                if !message.content.is_empty() {
                    seq.serialize_element(&TextPart {
                        text: &message.content,
                    })?;
                }
                seq.end()
            }
        }
    }
}

#[derive(Serialize)]
#[serde(tag = "type", rename = "text")]
struct TextPart<'a> {
    text: &'a str,
}

/// One image (`image_url`, a URL or a `data:` URL) or document (`file` with its
/// `data:` URL) content part. Documents by URL are refused before encoding.
struct WirePart<'a>(&'a Part);

impl Serialize for WirePart<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(2))?;
        match self.0 {
            Part::Image(source) => {
                map.serialize_entry("type", "image_url")?;
                map.serialize_entry("image_url", &Url(source))?;
            }
            Part::Document { source, title } => {
                map.serialize_entry("type", "file")?;
                map.serialize_entry(
                    "file",
                    &File {
                        filename: title.as_deref().unwrap_or("document.pdf"),
                        file_data: DataUrl(source),
                    },
                )?;
            }
        }
        map.end()
    }
}

/// `{"url": ..}`: the URL, or the bytes as a `data:` URL.
struct Url<'a>(&'a Source);

impl Serialize for Url<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry("url", &DataUrl(self.0))?;
        map.end()
    }
}

#[derive(Serialize)]
struct File<'a> {
    filename: &'a str,
    file_data: DataUrl<'a>,
}

/// A source as a URL string: its URL, or a `data:` URL written straight into the body.
struct DataUrl<'a>(&'a Source);

impl Serialize for DataUrl<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Source::Url(url) => serializer.serialize_str(url),
            Source::Data(data) => serializer.collect_str(&data.display_url()),
        }
    }
}

#[derive(Serialize)]
pub(super) struct WireMessage<'a> {
    pub(super) role: &'static str,
    /// `null` for an assistant message that only calls tools.
    pub(super) content: Option<Content<'a>>,
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
        let content = if !message.parts().is_empty() && message.role == Role::User {
            Some(Content::Parts(message))
        } else if message.content.is_empty() && !tool_calls.is_empty() {
            None
        } else {
            Some(Content::Text(&message.content))
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
    /// OpenRouter, for providers that charge for cache writes.
    #[serde(default, deserialize_with = "null_as_default")]
    pub(super) cache_write_tokens: u64,
}

impl From<WireUsage> for Usage {
    /// OpenAI caches prompts by itself and reports only what it read from the cache
    /// (`cached_tokens`); OpenRouter also reports what it wrote (`cache_write_tokens`).
    fn from(usage: WireUsage) -> Self {
        let details = usage.prompt_tokens_details.unwrap_or_default();
        Usage {
            input_tokens: usage.prompt_tokens,
            output_tokens: usage.completion_tokens,
            cached_tokens: details.cached_tokens,
            cache_write_tokens: details.cache_write_tokens,
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
