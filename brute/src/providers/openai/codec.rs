//! [`Codec`]: the request parameters, the encoder and the decoder of the Chat
//! Completions API.

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::stream::StreamDecoder;
use super::wire::{Body, Response, ResponseFormat, StreamOptions, WireMessages};
use crate::error::ModelError;
use crate::message::{Message, ToolCall};
use crate::model::Completion;
use crate::providers::{
    Extra, Request, ToolDecl, WireFormat, check_parts, decode_arguments, write_body,
};
use crate::tool::ToolSpec;
use crate::usage::Usage;

codec! {
    /// The model name and request parameters of a Chat Completions call, with the
    /// encoder and decoders of its wire format.
    pub struct Codec for "openai" {
        key_header: ("authorization", "Bearer "),
        headers: &[],
        endpoint: endpoint,
        params: Params,
        response: Response as "a chat completion",
        stream: StreamDecoder,
    }
}

/// The request fields beside the model, the messages and the tools.
#[derive(Clone, Debug, Default, Serialize)]
pub(super) struct Params {
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<i64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    stop: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<String>,
    #[serde(skip)]
    parallel_tool_calls: Option<bool>,
    #[serde(skip)]
    pub(super) extra: Map<String, Value>,
}

request_params!(Codec {
    /// Sampling temperature (`temperature`).
    fn temperature(temperature: f32) |p| p.temperature = Some(temperature);
    /// Nucleus sampling (`top_p`).
    fn top_p(top_p: f32) |p| p.top_p = Some(top_p);
    /// The most tokens to generate (`max_tokens`, which every compatible server reads;
    /// OpenAI's reasoning models want `max_completion_tokens`).
    fn max_tokens(max_tokens: u32) |p| p.max_tokens = Some(max_tokens);
    /// The most tokens to generate, reasoning included (`max_completion_tokens`, OpenAI).
    fn max_completion_tokens(max_tokens: u32) |p| p.max_completion_tokens = Some(max_tokens);
    /// A sampling seed (`seed`).
    fn seed(seed: i64) |p| p.seed = Some(seed);
    /// Stop sequences (`stop`).
    fn stop(stop: impl IntoIterator<Item = impl Into<String>>)
        |p| p.stop = stop.into_iter().map(Into::into).collect();
    /// Reasoning effort for reasoning models (`reasoning_effort`: `low`, `medium`, `high`).
    fn reasoning_effort(effort: impl Into<String>) |p| p.reasoning_effort = Some(effort.into());
    /// Whether the model may call several tools in one reply (`parallel_tool_calls`,
    /// sent only when tools are advertised).
    fn parallel_tool_calls(parallel: bool) |p| p.parallel_tool_calls = Some(parallel);
    /// Any other request field, sent as given (`user`, `prompt_cache_key`, ...). An
    /// [`OutputSchema`](crate::structured::OutputSchema) in the env replaces a
    /// `response_format` set here for its call.
    fn param(key: impl Into<String>, value: Value) |p| p.extra.insert(key.into(), value);
});

impl Codec {
    /// The request body.
    fn body(&self, request: &Request<'_>) -> Result<Vec<u8>, ModelError> {
        check_parts(Self::NAME, request.messages, false)?;
        let tools = self
            .tools
            .encoded(Self::NAME, request.tools, 0, encode_tools)?;
        let tools = tools.as_deref();
        let response_format = request.output.map(ResponseFormat::new);
        let extra = Extra::unless_set(
            &self.params.extra,
            "response_format",
            response_format.is_some(),
        );
        let body = Body {
            model: &self.model,
            messages: WireMessages(request.messages),
            parallel_tool_calls: tools.and(self.params.parallel_tool_calls),
            tools,
            stream: request.stream,
            stream_options: request.stream.then_some(StreamOptions {
                include_usage: true,
            }),
            response_format,
            params: &self.params,
            extra,
        };
        write_body(Self::NAME, request.messages, &body)
    }

    /// The reply in a response that holds no error object.
    fn completion(response: Response, place: &str) -> Result<Completion, ModelError> {
        let choice = response.choices.into_iter().next().ok_or_else(|| {
            ModelError::Malformed(format!("{place}: the response has no choices"))
        })?;
        let wire = choice.message;
        let mut message = Message::assistant(wire.content.or(wire.refusal).unwrap_or_default());
        message.set_reasoning(
            wire.reasoning_content
                .or(wire.reasoning)
                .filter(|r| !r.is_empty()),
        );
        message.tool_calls = wire
            .tool_calls
            .into_iter()
            .map(|call| {
                let arguments = match call.function.arguments {
                    Value::String(raw) => decode_arguments(&raw),
                    Value::Null => Value::Object(Map::new()),
                    other => other,
                };
                ToolCall::new(call.id, call.function.name, arguments)
            })
            .collect();
        Ok(Completion {
            message,
            usage: response.usage.map(Usage::from),
        })
    }
}

fn encode_tools(tools: &[ToolSpec]) -> Result<Box<RawValue>, serde_json::Error> {
    #[derive(Serialize)]
    struct Tool<'a> {
        r#type: &'static str,
        function: ToolDecl<'a>,
    }
    let tools: Vec<Tool<'_>> = tools
        .iter()
        .map(|spec| Tool {
            r#type: "function",
            function: ToolDecl {
                spec,
                schema_key: "parameters",
            },
        })
        .collect();
    serde_json::value::to_raw_value(&tools)
}

/// `{base_url}/chat/completions`.
fn endpoint(base_url: &str) -> String {
    format!("{}/chat/completions", base_url.trim().trim_end_matches('/'))
}
