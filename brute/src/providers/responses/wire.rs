//! The Responses API's JSON shapes: the request (the conversation as input items,
//! serialised without copying it), the response, and the events of a stream.

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::message::{Message, Part, Role, Source};
use crate::providers::{Extra, reasoning_state};
use crate::structured::OutputSchema;
use crate::usage::Usage;

#[derive(Serialize)]
pub(super) struct Body<'a, P> {
    pub(super) model: &'a str,
    pub(super) input: Input<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tools: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(super) stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) include: Option<[&'static str; 1]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) text: Option<TextConfig<'a>>,
    /// The codec's request parameters (`store`, sampling, `reasoning`), flattened in.
    #[serde(flatten)]
    pub(super) params: &'a P,
    #[serde(flatten)]
    pub(super) extra: Extra<'a>,
}

/// `text: {format: {type: "json_schema", name, schema, strict}}`.
#[derive(Serialize)]
pub(super) struct TextConfig<'a> {
    format: JsonSchemaFormat<'a>,
}

#[derive(Serialize)]
struct JsonSchemaFormat<'a> {
    r#type: &'static str,
    name: &'a str,
    schema: &'a Value,
    strict: bool,
}

impl<'a> TextConfig<'a> {
    pub(super) fn new(output: &'a OutputSchema) -> Self {
        TextConfig {
            format: JsonSchemaFormat {
                r#type: "json_schema",
                name: output.name(),
                schema: output.schema(),
                strict: output.is_strict(),
            },
        }
    }
}

/// The reasoning items an assistant message carries (see [`reasoning_state`]): a JSON
/// array of `reasoning` items as the API returned them, ready to go back.
pub(super) fn carried_items(message: &Message) -> Vec<Value> {
    let Some(state) = reasoning_state(message) else {
        return Vec::new();
    };
    match serde_json::from_str::<Vec<Value>>(state) {
        Ok(items)
            if items
                .iter()
                .all(|i| i.get("type").and_then(Value::as_str) == Some("reasoning")) =>
        {
            items
        }
        // Another provider's state (an Anthropic signature, Gemini's signatures).
        _ => Vec::new(),
    }
}

/// The conversation as input items: messages, the reasoning items and function calls of
/// the model's turns, and `function_call_output` items for tool results.
pub(super) struct Input<'a>(pub(super) &'a [Message]);

impl Serialize for Input<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        for message in self.0 {
            match message.role {
                Role::System => seq.serialize_element(&Said("system", Content::Text(message)))?,
                Role::User if message.parts().is_empty() => {
                    seq.serialize_element(&Said("user", Content::Text(message)))?
                }
                Role::User => seq.serialize_element(&Said("user", Content::Parts(message)))?,
                Role::Assistant => {
                    // The reasoning that led to this turn goes back before it.
                    for item in carried_items(message) {
                        seq.serialize_element(&item)?;
                    }
                    if !message.content.is_empty() {
                        seq.serialize_element(&Said("assistant", Content::Text(message)))?;
                    }
                    for call in &message.tool_calls {
                        seq.serialize_element(&FunctionCall {
                            r#type: "function_call",
                            call_id: &call.id,
                            name: &call.name,
                            arguments: match &call.arguments {
                                // Arguments that were not JSON go back as the model wrote them.
                                Value::String(raw) => std::borrow::Cow::Borrowed(raw.as_str()),
                                other => std::borrow::Cow::Owned(other.to_string()),
                            },
                        })?;
                    }
                }
                Role::Tool => seq.serialize_element(&FunctionCallOutput {
                    r#type: "function_call_output",
                    call_id: message.tool_call_id.as_deref().unwrap_or(""),
                    output: Content::Output(message),
                })?,
            }
        }
        seq.end()
    }
}

/// `{"type": "message", "role", "content"}`.
struct Said<'a>(&'static str, Content<'a>);

impl Serialize for Said<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("type", "message")?;
        map.serialize_entry("role", self.0)?;
        map.serialize_entry("content", &self.1)?;
        map.end()
    }
}

#[derive(Serialize)]
struct FunctionCall<'a> {
    r#type: &'static str,
    call_id: &'a str,
    name: &'a str,
    arguments: std::borrow::Cow<'a, str>,
}

#[derive(Serialize)]
struct FunctionCallOutput<'a> {
    r#type: &'static str,
    call_id: &'a str,
    output: Content<'a>,
}

/// A message's content on the wire.
enum Content<'a> {
    /// Its text, as a string.
    Text(&'a Message),
    /// Its images and documents, then its text, as input content parts.
    Parts(&'a Message),
    /// A tool result: its text as a string, or its text then its parts.
    Output(&'a Message),
}

impl Serialize for Content<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (message, text_first) = match self {
            Content::Text(message) => return serializer.serialize_str(&message.content),
            Content::Output(message) if message.parts().is_empty() => {
                return serializer.serialize_str(&message.content);
            }
            Content::Parts(message) => (message, false),
            Content::Output(message) => (message, true),
        };
        let text = (!message.content.is_empty()).then_some(InputText {
            r#type: "input_text",
            text: &message.content,
        });
        let mut seq = serializer.serialize_seq(None)?;
        if text_first && let Some(text) = &text {
            seq.serialize_element(text)?;
        }
        for part in message.parts() {
            seq.serialize_element(&InputPart(part))?;
        }
        if !text_first && let Some(text) = &text {
            seq.serialize_element(text)?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct InputText<'a> {
    r#type: &'static str,
    text: &'a str,
}

/// `input_image` (a URL or a `data:` URL) or `input_file` (`file_url`, or `file_data`
/// as a `data:` URL with a file name).
struct InputPart<'a>(&'a Part);

impl Serialize for InputPart<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        match self.0 {
            Part::Image(source) => {
                map.serialize_entry("type", "input_image")?;
                map.serialize_entry("image_url", &AsUrl(source))?;
                map.serialize_entry("detail", "auto")?;
            }
            Part::Document { source, title } => {
                map.serialize_entry("type", "input_file")?;
                match source {
                    Source::Url(url) => map.serialize_entry("file_url", url)?,
                    Source::Data(_) => {
                        let name = title.as_deref().unwrap_or("document.pdf");
                        map.serialize_entry("filename", name)?;
                        map.serialize_entry("file_data", &AsUrl(source))?;
                    }
                }
            }
        }
        map.end()
    }
}

/// A source as a URL string: its URL, or its bytes as a `data:` URL.
struct AsUrl<'a>(&'a Source);

impl Serialize for AsUrl<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Source::Url(url) => serializer.serialize_str(url),
            Source::Data(data) => serializer.collect_str(&data.display_url()),
        }
    }
}

/// A response object (`"object": "response"`), as returned whole or in the
/// `response.completed` event.
#[derive(Debug, Deserialize, Default)]
pub(super) struct Response {
    #[serde(default)]
    pub(super) output: Option<Vec<Value>>,
    pub(super) usage: Option<WireUsage>,
    pub(super) error: Option<Value>,
}

#[derive(Debug, Deserialize, Default)]
pub(super) struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
}

#[derive(Debug, Deserialize, Default)]
struct InputDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl From<WireUsage> for Usage {
    /// `input_tokens` counts every prompt token, the cached ones (`cached_tokens`)
    /// among them; reasoning tokens are output tokens.
    fn from(usage: WireUsage) -> Self {
        Usage {
            input_tokens: usage.input_tokens.unwrap_or(0),
            output_tokens: usage.output_tokens.unwrap_or(0),
            cached_tokens: usage
                .input_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
            cache_write_tokens: 0,
        }
    }
}

/// The events of a stream brute reads; the others (`response.created`,
/// `response.content_part.added`, `*.done` of text, ...) are skipped.
#[derive(Deserialize)]
#[serde(tag = "type")]
pub(super) enum StreamEvent {
    #[serde(
        rename = "response.output_text.delta",
        alias = "response.refusal.delta"
    )]
    TextDelta { delta: String },
    #[serde(
        rename = "response.reasoning_summary_text.delta",
        alias = "response.reasoning_text.delta"
    )]
    ReasoningDelta { delta: String },
    #[serde(rename = "response.reasoning_summary_part.added")]
    SummaryPart,
    #[serde(rename = "response.output_item.added")]
    ItemAdded { output_index: u64, item: Value },
    #[serde(rename = "response.function_call_arguments.delta")]
    ArgumentsDelta { output_index: u64, delta: String },
    #[serde(rename = "response.output_item.done")]
    ItemDone { output_index: u64, item: Value },
    #[serde(rename = "response.completed", alias = "response.incomplete")]
    Completed { response: Response },
    #[serde(rename = "response.failed")]
    Failed { response: Response },
    #[serde(rename = "error")]
    Error {
        #[serde(default)]
        error: Option<Value>,
        #[serde(default)]
        code: Option<Value>,
        #[serde(default)]
        message: Option<String>,
    },
    #[serde(other)]
    Other,
}
