//! [`Codec`]: the request parameters, the encoder and the decoder of the Gemini API,
//! and the reading of a reply's parts shared by the decoder and the stream decoder.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::reading::{MADE_UP_CALL_ID, Reading, Signatures};
use super::stream::StreamDecoder;
use super::wire::{Body, Content, GenerationConfig, OutPart, Response, ToolConfig};
use crate::error::ModelError;
use crate::message::{Message, Role};
use crate::model::Completion;
use crate::providers::{Extra, Request, ToolDecl, WireFormat, check_parts, write_body};
use crate::tool::ToolSpec;

codec! {
    /// The model name and request parameters of a `generateContent` call, with the
    /// encoder and decoders of its wire format.
    pub struct Codec for "gemini" {
        key_header: ("x-goog-api-key", ""),
        headers: &[],
        endpoint: endpoint,
        call_url: call_url,
        params: Params,
        response: Response as "a GenerateContentResponse",
        stream: StreamDecoder,
    }
}

/// The fields of `generationConfig`, and the other request fields.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Params {
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_k: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    stop_sequences: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_config: Option<ThinkingConfig>,
    #[serde(skip)]
    extra: Map<String, Value>,
}

/// `thinkingConfig: {thinkingBudget, includeThoughts}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
struct ThinkingConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_budget: Option<i32>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    include_thoughts: bool,
}

request_params!(Codec {
    /// Sampling temperature (`generationConfig.temperature`).
    fn temperature(temperature: f32) |p| p.temperature = Some(temperature);
    /// Nucleus sampling (`generationConfig.topP`).
    fn top_p(top_p: f32) |p| p.top_p = Some(top_p);
    /// Top-k sampling (`generationConfig.topK`).
    fn top_k(top_k: u32) |p| p.top_k = Some(top_k);
    /// The most tokens to generate (`generationConfig.maxOutputTokens`).
    fn max_output_tokens(max_tokens: u32) |p| p.max_output_tokens = Some(max_tokens);
    /// Stop sequences (`generationConfig.stopSequences`).
    fn stop(stop: impl IntoIterator<Item = impl Into<String>>)
        |p| p.stop_sequences = stop.into_iter().map(Into::into).collect();
    /// A sampling seed (`generationConfig.seed`).
    fn seed(seed: i64) |p| p.seed = Some(seed);
    /// The thinking budget in tokens (`thinkingConfig.thinkingBudget`; `0` turns
    /// thinking off where the model allows it, `-1` lets the model choose).
    fn thinking_budget(budget: i32)
        |p| p.thinking_config.get_or_insert_with(Default::default).thinking_budget = Some(budget);
    /// Summaries of the model's thoughts in the reply (`thinkingConfig.includeThoughts`):
    /// they become [`Message::reasoning`](crate::Message::reasoning).
    fn include_thoughts(include: bool)
        |p| p.thinking_config.get_or_insert_with(Default::default).include_thoughts = include;
    /// Any other request field, sent as given beside `contents` (`safetySettings`,
    /// `cachedContent`, ...). An [`OutputSchema`](crate::structured::OutputSchema) with
    /// tools advertised replaces a `toolConfig` set here for its call.
    fn param(key: impl Into<String>, value: Value) |p| p.extra.insert(key.into(), value);
});

impl Codec {
    /// The request body.
    fn body(&self, request: &Request<'_>) -> Result<Vec<u8>, ModelError> {
        check_parts(Self::NAME, request.messages, true)?;
        let mut system = String::new();
        let contents = contents(request.messages, &mut system);
        // With tools, the answer is a function the model must call (the API does not
        // combine function calling with a JSON answer on every model); without, the
        // API's own JSON mode.
        let (tools, tool_config, schema) = match request.output {
            Some(output) if !request.tools.is_empty() => {
                let mut all = request.tools.to_vec();
                all.push(output.tool());
                (self.tools(&all)?, Some(ToolConfig), None)
            }
            output => (self.tools(request.tools)?, None, output.map(|o| o.schema())),
        };
        let generation_config =
            (schema.is_some() || *self.params != Params::default()).then_some(GenerationConfig {
                params: &*self.params,
                response_mime_type: schema.map(|_| "application/json"),
                response_json_schema: schema,
            });
        let extra = Extra::unless_set(&self.params.extra, "toolConfig", tool_config.is_some());
        let body = Body {
            contents: &contents,
            system_instruction: (!system.is_empty()).then(|| Content {
                role: None,
                parts: vec![OutPart::Text {
                    text: &system,
                    signature: None,
                }],
            }),
            tools: tools.as_deref(),
            tool_config,
            generation_config,
            extra,
        };
        write_body(Self::NAME, request.messages, &body)
    }

    /// `[{"functionDeclarations": [..]}]`.
    fn tools(&self, tools: &[ToolSpec]) -> Result<Option<std::sync::Arc<RawValue>>, ModelError> {
        self.tools.encoded(Self::NAME, tools, 0, encode_tools)
    }

    /// The reply in a response that holds no error object.
    fn completion(response: Response, place: &str) -> Result<Completion, ModelError> {
        let mut reading = Reading::default();
        reading.read(response, place, None)?;
        reading.finish(place, None)
    }
}

/// The turns of the conversation; the system messages' text is gathered in `system`.
/// Consecutive turns of one role are one turn, as the API wants (the results of
/// parallel calls together).
fn contents<'a>(messages: &'a [Message], system: &mut String) -> Vec<Content<'a>> {
    let mut turns: Vec<Content<'a>> = Vec::with_capacity(messages.len());
    // A function response names its function: the names of the calls so far, by id.
    let mut names: HashMap<&'a str, &'a str> = HashMap::new();
    for message in messages {
        let mut parts = Vec::new();
        let role = match message.role {
            Role::System => {
                if !system.is_empty() {
                    system.push_str("\n\n");
                }
                system.push_str(&message.content);
                continue;
            }
            Role::User => {
                parts.extend(message.parts().iter().map(OutPart::Media));
                push_text(&mut parts, &message.content, None);
                "user"
            }
            Role::Assistant => {
                let mut signatures = Signatures::of(message).unwrap_or_default();
                push_text(&mut parts, &message.content, signatures.text.take());
                for call in &message.tool_calls {
                    names.insert(&call.id, &call.name);
                    parts.push(OutPart::Call {
                        id: sent_id(&call.id),
                        name: &call.name,
                        args: &call.arguments,
                        signature: signatures.take_call(&call.id),
                    });
                }
                "model"
            }
            Role::Tool => {
                let id = message.tool_call_id.as_deref().unwrap_or("");
                parts.push(OutPart::Response {
                    id: sent_id(id),
                    name: names.get(id).copied().unwrap_or(id),
                    result: &message.content,
                    media: message.parts(),
                });
                // Images and documents by URL follow the response in the same turn.
                parts.extend(
                    message
                        .parts()
                        .iter()
                        .filter(|part| part.data().is_none())
                        .map(OutPart::Media),
                );
                "user"
            }
        };
        if parts.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some(last) if last.role == Some(role) => last.parts.extend(parts),
            _ => turns.push(Content {
                role: Some(role),
                parts,
            }),
        }
    }
    turns
}

/// Adds a text part unless there is neither text nor a signature to carry.
fn push_text<'a>(parts: &mut Vec<OutPart<'a>>, text: &'a str, signature: Option<String>) {
    if !text.is_empty() || signature.is_some() {
        parts.push(OutPart::Text { text, signature });
    }
}

/// A call's id as sent back: the model's own, never one brute made up.
fn sent_id(id: &str) -> Option<&str> {
    Some(id).filter(|id| !id.is_empty() && !id.starts_with(MADE_UP_CALL_ID))
}

fn encode_tools(tools: &[ToolSpec]) -> Result<Box<RawValue>, serde_json::Error> {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Tool<'a> {
        function_declarations: Vec<ToolDecl<'a>>,
    }
    let declarations = tools
        .iter()
        .map(|spec| ToolDecl {
            spec,
            schema_key: "parametersJsonSchema",
        })
        .collect();
    serde_json::value::to_raw_value(&[Tool {
        function_declarations: declarations,
    }])
}

/// `{base_url}/models`: the calls go to `models/{model}:generateContent`.
fn endpoint(base_url: &str) -> String {
    format!("{}/models", base_url.trim().trim_end_matches('/'))
}

/// `{endpoint}/{model}:generateContent`, or `:streamGenerateContent?alt=sse` (events
/// rather than a JSON array) when streaming; a model named `models/NAME` is `NAME`.
fn call_url<'a>(codec: &Codec, endpoint: &'a str, stream: bool) -> Cow<'a, str> {
    let model = codec.model();
    let model = model.strip_prefix("models/").unwrap_or(model);
    let method = if stream {
        "streamGenerateContent?alt=sse"
    } else {
        "generateContent"
    };
    Cow::Owned(format!("{endpoint}/{model}:{method}"))
}
