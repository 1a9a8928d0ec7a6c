//! [`Codec`]: the request parameters, the encoder and the decoder of the Responses API,
//! and the reading of output items shared by the decoder and the stream decoder.

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::items::Items;
use super::stream::StreamDecoder;
use super::wire::{Body, Input, Response, TextConfig};
use crate::error::ModelError;
use crate::model::Completion;
use crate::providers::{Extra, Request, ToolDecl, WireFormat, check_parts, write_body};
use crate::tool::ToolSpec;
use crate::usage::Usage;

/// What a request asks to have included when nothing is stored on the server: the
/// encrypted reasoning, so that it can be sent back on the next call.
const ENCRYPTED_REASONING: &str = "reasoning.encrypted_content";

codec! {
    /// The model name and request parameters of a Responses call, with the encoder and
    /// decoders of its wire format.
    pub struct Codec for "responses" {
        key_header: ("authorization", "Bearer "),
        headers: &[],
        endpoint: endpoint,
        params: Params,
        response: Response as "a response object",
        stream: StreamDecoder,
    }
}

/// The request fields beside the model, the input and the tools.
#[derive(Clone, Debug, Default, Serialize)]
pub(super) struct Params {
    /// Whether the server keeps the response (off by default: brute keeps the
    /// conversation itself and sends it whole).
    store: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Reasoning::is_empty")]
    reasoning: Reasoning,
    #[serde(skip)]
    parallel_tool_calls: Option<bool>,
    #[serde(skip)]
    extra: Map<String, Value>,
}

/// `reasoning: {effort, summary}`.
#[derive(Clone, Debug, Default, Serialize)]
struct Reasoning {
    #[serde(skip_serializing_if = "Option::is_none")]
    effort: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<String>,
}

impl Reasoning {
    fn is_empty(&self) -> bool {
        self.effort.is_none() && self.summary.is_none()
    }
}

request_params!(Codec {
    /// Whether the server stores the response (`store`, `false` by default). When it
    /// does not, every request asks for the reasoning's `encrypted_content`
    /// (`include: ["reasoning.encrypted_content"]`), which brute keeps on the message
    /// and sends back, so that reasoning models keep their reasoning across tool calls
    /// without any state on the server.
    fn store(store: bool) |p| p.store = store;
    /// Sampling temperature (`temperature`).
    fn temperature(temperature: f32) |p| p.temperature = Some(temperature);
    /// Nucleus sampling (`top_p`).
    fn top_p(top_p: f32) |p| p.top_p = Some(top_p);
    /// The most tokens to generate, reasoning included (`max_output_tokens`).
    fn max_output_tokens(max_tokens: u32) |p| p.max_output_tokens = Some(max_tokens);
    /// Reasoning effort for reasoning models (`reasoning.effort`: `minimal`, `low`,
    /// `medium`, `high`).
    fn reasoning_effort(effort: impl Into<String>) |p| p.reasoning.effort = Some(effort.into());
    /// A summary of the reasoning in the reply (`reasoning.summary`: `auto`, `concise`,
    /// `detailed`): it becomes [`Message::reasoning`](crate::Message::reasoning), and is
    /// streamed as [`Event::ReasoningDelta`](crate::Event::ReasoningDelta).
    fn reasoning_summary(summary: impl Into<String>)
        |p| p.reasoning.summary = Some(summary.into());
    /// Whether the model may call several tools in one reply (`parallel_tool_calls`,
    /// sent only when tools are advertised).
    fn parallel_tool_calls(parallel: bool) |p| p.parallel_tool_calls = Some(parallel);
    /// Any other request field, sent as given (`user`, `prompt_cache_key`,
    /// `service_tier`, `include`, ...). An [`OutputSchema`](crate::structured::OutputSchema)
    /// in the env replaces a `text` set here for its call; an `include` set here replaces
    /// the one asking for the encrypted reasoning.
    fn param(key: impl Into<String>, value: Value) |p| p.extra.insert(key.into(), value);
});

impl Codec {
    /// The request body.
    fn body(&self, request: &Request<'_>) -> Result<Vec<u8>, ModelError> {
        check_parts(Self::NAME, request.messages, true)?;
        let tools = self
            .tools
            .encoded(Self::NAME, request.tools, 0, encode_tools)?;
        let tools = tools.as_deref();
        let text = request.output.map(TextConfig::new);
        let extra = Extra::unless_set(&self.params.extra, "text", text.is_some());
        let include = !self.params.store && !self.params.extra.contains_key("include");
        let body = Body {
            model: &self.model,
            input: Input(request.messages),
            parallel_tool_calls: tools.and(self.params.parallel_tool_calls),
            tools,
            stream: request.stream,
            include: include.then_some([ENCRYPTED_REASONING]),
            text,
            params: &self.params,
            extra,
        };
        write_body(Self::NAME, request.messages, &body)
    }

    /// The reply in a response that holds no error object.
    fn completion(response: Response, place: &str) -> Result<Completion, ModelError> {
        let output = response
            .output
            .ok_or_else(|| ModelError::Malformed(format!("{place}: the response has no output")))?;
        let mut items = Items::default();
        for item in output {
            items.add(item);
        }
        Ok(Completion {
            message: items.into_message(None),
            usage: response.usage.map(Usage::from),
        })
    }
}

/// `[{"type": "function", "name", "description", "parameters", "strict": false}]`: the
/// API makes a function strict unless told otherwise, and a strict schema must list
/// every property as required, which a tool's schema need not.
fn encode_tools(tools: &[ToolSpec]) -> Result<Box<RawValue>, serde_json::Error> {
    #[derive(Serialize)]
    struct Tool<'a> {
        r#type: &'static str,
        #[serde(flatten)]
        function: ToolDecl<'a>,
        strict: bool,
    }
    let tools: Vec<Tool<'_>> = tools
        .iter()
        .map(|spec| Tool {
            r#type: "function",
            function: ToolDecl {
                spec,
                schema_key: "parameters",
            },
            strict: false,
        })
        .collect();
    serde_json::value::to_raw_value(&tools)
}

/// `{base_url}/responses`.
fn endpoint(base_url: &str) -> String {
    format!("{}/responses", base_url.trim().trim_end_matches('/'))
}
