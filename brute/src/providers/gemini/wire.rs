//! The Gemini API's JSON shapes: the request (`contents` of `parts`, the system
//! instruction, the tools, the generation config), the response, which is also each
//! event of a stream.

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::message::{Part, Source};
use crate::providers::Extra;
use crate::usage::Usage;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Body<'a, P> {
    pub(super) contents: &'a [Content<'a>],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) system_instruction: Option<Content<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tools: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tool_config: Option<ToolConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) generation_config: Option<GenerationConfig<'a, P>>,
    #[serde(flatten)]
    pub(super) extra: Extra<'a>,
}

/// `generationConfig`: the codec's parameters, and the answer's schema when the env
/// has one (`responseMimeType: "application/json"`, `responseJsonSchema`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct GenerationConfig<'a, P> {
    #[serde(flatten)]
    pub(super) params: &'a P,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) response_mime_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) response_json_schema: Option<&'a Value>,
}

/// `toolConfig: {functionCallingConfig: {mode: "ANY"}}`: a function must be called.
pub(super) struct ToolConfig;

impl Serialize for ToolConfig {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry("functionCallingConfig", &serde_json::json!({"mode": "ANY"}))?;
        map.end()
    }
}

/// One turn: `{"role": "user" | "model", "parts": [..]}` (the system instruction has
/// no role).
#[derive(Serialize)]
pub(super) struct Content<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) role: Option<&'static str>,
    pub(super) parts: Vec<OutPart<'a>>,
}

/// One part of a turn.
pub(super) enum OutPart<'a> {
    /// `{"text", "thoughtSignature"?}`.
    Text {
        text: &'a str,
        signature: Option<String>,
    },
    /// An image or a document: `inlineData` with its bytes, `fileData` with its URL.
    Media(&'a Part),
    /// `{"functionCall": {"name", "args", "id"?}, "thoughtSignature"?}`.
    Call {
        id: Option<&'a str>,
        name: &'a str,
        args: &'a Value,
        signature: Option<String>,
    },
    /// `{"functionResponse": {"name", "response": {"result"}, "id"?, "parts"?}}`: the
    /// result's images and documents given by their bytes go inside it as `inlineData`
    /// parts (Gemini's multimodal function responses); those given by URL, which a
    /// function response cannot hold, follow it as `fileData` parts of the same turn.
    Response {
        id: Option<&'a str>,
        name: &'a str,
        result: &'a str,
        media: &'a [Part],
    },
}

impl Serialize for OutPart<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        match self {
            OutPart::Text { text, signature } => {
                map.serialize_entry("text", text)?;
                if let Some(signature) = signature {
                    map.serialize_entry("thoughtSignature", signature)?;
                }
            }
            OutPart::Media(part) => match part.source() {
                Source::Data(data) => map.serialize_entry(
                    "inlineData",
                    &serde_json::json!({"mimeType": data.media_type(), "data": data.base64()}),
                )?,
                Source::Url(url) => {
                    map.serialize_entry("fileData", &serde_json::json!({"fileUri": url}))?
                }
            },
            OutPart::Call {
                id,
                name,
                args,
                signature,
            } => {
                // The API takes an object; arguments that are not one go back empty.
                let empty = Value::Object(Default::default());
                let args = if args.is_object() { *args } else { &empty };
                let mut call = serde_json::json!({"name": name, "args": args});
                if let Some(id) = id {
                    call["id"] = Value::from(*id);
                }
                map.serialize_entry("functionCall", &call)?;
                if let Some(signature) = signature {
                    map.serialize_entry("thoughtSignature", signature)?;
                }
            }
            OutPart::Response {
                id,
                name,
                result,
                media,
            } => map.serialize_entry(
                "functionResponse",
                &FunctionResponse {
                    name,
                    response: ResponseResult { result },
                    id: *id,
                    parts: InlineParts(media),
                },
            )?,
        }
        map.end()
    }
}

#[derive(Serialize)]
struct FunctionResponse<'a> {
    name: &'a str,
    response: ResponseResult<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    #[serde(skip_serializing_if = "InlineParts::is_empty")]
    parts: InlineParts<'a>,
}

#[derive(Serialize)]
struct ResponseResult<'a> {
    result: &'a str,
}

/// The parts of a tool result given by their bytes, as a function response's
/// `parts`: `{"inlineData": {"mimeType", "data", "displayName"?}}` each, a document's
/// title as its display name.
struct InlineParts<'a>(&'a [Part]);

impl InlineParts<'_> {
    fn is_empty(&self) -> bool {
        !self.0.iter().any(|part| part.data().is_some())
    }
}

impl Serialize for InlineParts<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Blob<'a> {
            mime_type: &'a str,
            data: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            display_name: Option<&'a str>,
        }
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Inline<'a> {
            inline_data: Blob<'a>,
        }
        let mut seq = serializer.serialize_seq(None)?;
        for part in self.0 {
            let Some(data) = part.data() else { continue };
            let display_name = match part {
                Part::Document { title, .. } => title.as_deref(),
                Part::Image(_) => None,
            };
            seq.serialize_element(&Inline {
                inline_data: Blob {
                    mime_type: data.media_type(),
                    data: data.base64(),
                    display_name,
                },
            })?;
        }
        seq.end()
    }
}

/// A `GenerateContentResponse`: the whole reply, or one event of a stream.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Response {
    #[serde(default)]
    pub(super) candidates: Vec<Candidate>,
    pub(super) usage_metadata: Option<UsageMetadata>,
    pub(super) prompt_feedback: Option<PromptFeedback>,
    pub(super) error: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Candidate {
    pub(super) content: Option<CandidateContent>,
    pub(super) finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct CandidateContent {
    #[serde(default)]
    pub(super) parts: Vec<InPart>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct InPart {
    pub(super) text: Option<String>,
    #[serde(default)]
    pub(super) thought: bool,
    pub(super) thought_signature: Option<String>,
    pub(super) function_call: Option<InCall>,
}

#[derive(Debug, Deserialize)]
pub(super) struct InCall {
    #[serde(default)]
    pub(super) name: String,
    #[serde(default)]
    pub(super) args: Value,
    pub(super) id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PromptFeedback {
    pub(super) block_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct UsageMetadata {
    prompt_token_count: Option<u64>,
    candidates_token_count: Option<u64>,
    thoughts_token_count: Option<u64>,
    cached_content_token_count: Option<u64>,
}

impl From<UsageMetadata> for Usage {
    /// `promptTokenCount` counts every prompt token, the cached ones
    /// (`cachedContentTokenCount`) among them; thinking tokens are output tokens.
    fn from(usage: UsageMetadata) -> Self {
        Usage {
            input_tokens: usage.prompt_token_count.unwrap_or(0),
            output_tokens: usage
                .candidates_token_count
                .unwrap_or(0)
                .saturating_add(usage.thoughts_token_count.unwrap_or(0)),
            cached_tokens: usage.cached_content_token_count.unwrap_or(0),
            cache_write_tokens: 0,
        }
    }
}
