//! The OpenAI Chat Completions wire format, as a server speaks it: the request it
//! reads, the completion and the stream chunks it writes, and what a response needs
//! to know besides the turn ([`Reply`]).

use std::time::Duration;

use brute::model::ToolSpec;
use brute::structured::OutputSchema;
use brute::tools::ClientTools;
use brute::{Message, Role, ToolCall};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::chat_tap::Tap;
use crate::error::ApiError;

/// A chat-completions request (fields brute has no use for, such as `temperature`,
/// are accepted and ignored).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub(crate) struct ChatRequest {
    /// The agent to run.
    pub(crate) model: String,
    /// The conversation so far (at least one message).
    #[schema(min_items = 1)]
    pub(crate) messages: Vec<WireMessage>,
    /// Whether to answer with a stream of chunks (`null` is `false`).
    #[serde(default)]
    pub(crate) stream: Option<bool>,
    /// Tools the client runs: advertised to the model next to the agent's own
    /// (`null` is none).
    #[serde(default)]
    pub(crate) tools: Option<Vec<WireTool>>,
    /// The shape of the answer: `json_schema` or `json_object` (`text` is the default).
    #[serde(default)]
    pub(crate) response_format: Option<ResponseFormat>,
    /// Options of a streamed answer.
    #[serde(default)]
    pub(crate) stream_options: Option<StreamOptions>,
}

/// `stream_options`: `include_usage` adds a last chunk with `choices: []` and the usage.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
pub(crate) struct StreamOptions {
    /// Whether the stream ends with a usage chunk.
    #[serde(default)]
    pub(crate) include_usage: bool,
}

/// A tool of the request: `{"type": "function", "function": {"name", "description"?,
/// "parameters"?}}`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub(crate) struct WireTool {
    /// Always `function`.
    #[serde(rename = "type")]
    #[schema(pattern = "^function$")]
    kind: String,
    /// The function the model may call.
    function: WireToolFunction,
}

/// The function of a client tool.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub(crate) struct WireToolFunction {
    /// Its name (unique among the request's tools).
    #[schema(min_length = 1)]
    name: String,
    /// What it does, for the model.
    #[serde(default)]
    description: String,
    /// The JSON Schema of its arguments (an object; none: no arguments).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    parameters: Option<Value>,
}

impl WireTool {
    /// The spec the model is shown; `index` names the tool in errors.
    pub(crate) fn into_spec(self, index: usize) -> Result<ToolSpec, ApiError> {
        if self.kind != "function" {
            return Err(ApiError::invalid(format!(
                "tools[{index}].type: `{}` is not supported (only `function`)",
                self.kind
            )));
        }
        let WireToolFunction {
            name,
            description,
            parameters,
        } = self.function;
        if name.is_empty() {
            return Err(ApiError::invalid(format!(
                "tools[{index}].function.name: empty"
            )));
        }
        let parameters = match parameters {
            None => json!({"type": "object", "properties": {}}),
            Some(p @ Value::Object(_)) => p,
            Some(_) => {
                return Err(ApiError::invalid(format!(
                    "tools[{index}].function.parameters: expected a JSON Schema object"
                )));
            }
        };
        Ok(ToolSpec::new(name, description, parameters))
    }
}

/// `response_format`: `{"type": "text"}`, `{"type": "json_object"}` or
/// `{"type": "json_schema", "json_schema": {"name", "schema"?, "strict"?, "description"?}}`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ResponseFormat {
    /// Free text: nothing to do.
    Text,
    /// Any JSON object.
    JsonObject,
    /// JSON matching a schema.
    JsonSchema {
        /// The schema and its name.
        json_schema: WireJsonSchema,
    },
}

/// The `json_schema` of a `response_format`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub(crate) struct WireJsonSchema {
    /// The schema's name.
    name: String,
    /// What the answer is, for the model.
    #[serde(default)]
    description: Option<String>,
    /// The JSON Schema of the answer (an object; none: any object).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    schema: Option<Value>,
    /// Whether the provider enforces the schema strictly.
    #[serde(default)]
    strict: Option<bool>,
}

impl ResponseFormat {
    /// The output schema the turn's model is given, none for text.
    pub(crate) fn into_schema(self) -> Result<Option<OutputSchema>, ApiError> {
        Ok(match self {
            ResponseFormat::Text => None,
            // Any object: a schema no provider makes strict (no `properties` to close).
            ResponseFormat::JsonObject => {
                Some(OutputSchema::new("json_object", json!({"type": "object"})).strict(false))
            }
            ResponseFormat::JsonSchema { json_schema } => {
                let schema = match json_schema.schema {
                    None => json!({"type": "object"}),
                    Some(s @ Value::Object(_)) => s,
                    Some(_) => {
                        return Err(ApiError::invalid(
                            "response_format.json_schema.schema: expected a JSON Schema object",
                        ));
                    }
                };
                let mut output = OutputSchema::new(&json_schema.name, schema)
                    .strict(json_schema.strict.unwrap_or(false));
                if let Some(description) = json_schema.description {
                    output = output.description(description);
                }
                Some(output)
            }
        })
    }
}

/// The role of a message of a request (`developer` is `system`).
#[derive(Clone, Copy, Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum WireRole {
    /// Instructions.
    System,
    /// Instructions (OpenAI's newer name).
    Developer,
    /// The user.
    User,
    /// The model.
    Assistant,
    /// A tool's result.
    Tool,
}

/// One message of a request.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub(crate) struct WireMessage {
    /// Who said it (read as a [`WireRole`] by [`WireMessage::into_message`], so that
    /// a wrong one is named by its place).
    #[schema(value_type = WireRole)]
    role: String,
    /// A string, or an array of `{"type": "text", "text"}` parts (joined).
    #[serde(default)]
    #[schema(value_type = Option<crate::schema::ContentSchema>)]
    content: Option<Value>,
    /// An assistant message's tool calls.
    #[serde(default)]
    tool_calls: Vec<WireToolCall>,
    /// A tool message's call id.
    #[serde(default)]
    tool_call_id: Option<String>,
}

/// A tool call of an assistant message of the request.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub(crate) struct WireToolCall {
    /// The call's id.
    id: String,
    /// The function called.
    function: WireFunction,
}

/// The function of a tool call of the request.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub(crate) struct WireFunction {
    /// The tool's name.
    name: String,
    /// The arguments as JSON text (text that is not JSON is kept as a string, as the
    /// model wrote it).
    #[serde(default)]
    arguments: String,
}

impl WireMessage {
    /// The brute message; `index` names the message in errors.
    pub(crate) fn into_message(self, index: usize) -> Result<Message, ApiError> {
        let content = text(self.content, index)?;
        let role: WireRole = serde_json::from_value(Value::String(self.role))
            .map_err(|e| ApiError::invalid(format!("messages[{index}].role: {e}")))?;
        let role = match role {
            WireRole::System | WireRole::Developer => Role::System,
            WireRole::User => Role::User,
            WireRole::Assistant => Role::Assistant,
            WireRole::Tool => Role::Tool,
        };
        let mut message = Message::new(role, content);
        message.tool_call_id = self.tool_call_id;
        for call in self.tool_calls {
            // What a model wrote is history, even when it is not JSON: kept as text,
            // it goes back to the model as it was.
            let arguments = if call.function.arguments.trim().is_empty() {
                json!({})
            } else {
                serde_json::from_str(&call.function.arguments)
                    .unwrap_or(Value::String(call.function.arguments))
            };
            message
                .tool_calls
                .push(ToolCall::new(call.id, call.function.name, arguments));
        }
        Ok(message)
    }
}

/// The text of a message's content: a string, or an array of parts of which the
/// `text` ones are joined.
fn text(content: Option<Value>, index: usize) -> Result<String, ApiError> {
    match content {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s),
        Some(Value::Array(parts)) => {
            let mut out = String::new();
            for (i, part) in parts.iter().enumerate() {
                match (part.get("type").and_then(Value::as_str), part.get("text")) {
                    (Some("text"), Some(Value::String(t))) => out.push_str(t),
                    _ => {
                        return Err(ApiError::invalid(format!(
                            "messages[{index}].content[{i}]: only text parts are supported"
                        )));
                    }
                }
            }
            Ok(out)
        }
        Some(_) => Err(ApiError::invalid(format!(
            "messages[{index}].content: expected a string or an array of parts"
        ))),
    }
}

/// The token counts of a completion.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Usage)]
pub(crate) struct WireUsage {
    /// Tokens read.
    pub(crate) prompt_tokens: u64,
    /// Tokens written.
    pub(crate) completion_tokens: u64,
    /// Both.
    pub(crate) total_tokens: u64,
}

/// A tool call as OpenAI writes it: `{"id", "type": "function", "function": {"name",
/// "arguments"}}`, the arguments a string of JSON; `index` is set in stream deltas.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = ToolCall)]
pub(crate) struct OutToolCall {
    /// The call's id: the `tool_call_id` of its result.
    id: String,
    /// Always `function`.
    #[serde(rename = "type")]
    #[schema(value_type = String, pattern = "^function$")]
    kind: &'static str,
    /// The function called.
    function: OutFunction,
    /// Its place among the stream's calls (stream deltas only).
    #[serde(skip_serializing_if = "Option::is_none")]
    index: Option<usize>,
}

/// The function of a tool call of a response.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct OutFunction {
    /// The tool's name.
    name: String,
    /// The arguments as JSON text.
    arguments: String,
}

/// `call` in the wire's shape; `index` is set in stream deltas.
pub(crate) fn tool_call(call: &ToolCall, index: Option<usize>) -> OutToolCall {
    let arguments = match &call.arguments {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    OutToolCall {
        id: call.id.clone(),
        kind: "function",
        function: OutFunction {
            name: call.name.clone(),
            arguments,
        },
        index,
    }
}

/// A whole completion (`object: "chat.completion"`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct ChatCompletion<'a> {
    /// The completion id.
    id: &'a str,
    /// Always `chat.completion`.
    #[schema(value_type = String, pattern = "^chat\\.completion$")]
    object: &'static str,
    /// When it was made, in seconds since the Unix epoch.
    created: u64,
    /// The agent that made it.
    model: &'a str,
    /// The one answer.
    #[schema(min_items = 1, max_items = 1)]
    choices: [Choice<'a>; 1],
    /// The tokens of the whole turn.
    usage: WireUsage,
}

/// The answer of a completion.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct Choice<'a> {
    /// Always 0.
    index: u32,
    /// The assistant's message.
    message: AnswerMessage<'a>,
    /// `stop`, `tool_calls` or `length`.
    #[schema(value_type = String, pattern = "^(stop|tool_calls|length)$")]
    finish_reason: &'a str,
}

/// The assistant's message of a completion.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct AnswerMessage<'a> {
    /// Always `assistant`.
    #[schema(value_type = String, pattern = "^assistant$")]
    role: &'static str,
    /// The text (`null` when the message is only tool calls).
    content: Option<&'a str>,
    /// Calls of the request's tools, for the client to run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<OutToolCall>,
}

/// A whole completion. With `calls`, the message carries them as `tool_calls` (and
/// `content` is null when there is no text).
pub(crate) fn completion<'a>(
    id: &'a str,
    created: u64,
    model: &'a str,
    text: &'a str,
    calls: &[&ToolCall],
    finish: &'a str,
    usage: WireUsage,
) -> ChatCompletion<'a> {
    let content = (calls.is_empty() || !text.is_empty()).then_some(text);
    ChatCompletion {
        id,
        object: "chat.completion",
        created,
        model,
        choices: [Choice {
            index: 0,
            message: AnswerMessage {
                role: "assistant",
                content,
                tool_calls: calls.iter().map(|c| tool_call(c, None)).collect(),
            },
            finish_reason: finish,
        }],
        usage,
    }
}

/// One chunk of a streamed completion: `object: "chat.completion.chunk"`.
pub(crate) fn chunk(
    id: &str,
    created: u64,
    model: &str,
    delta: Value,
    finish: Option<&str>,
) -> Value {
    json!({
        "id": id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }],
    })
}

/// The last chunk of a stream asked for with `stream_options.include_usage`: no
/// choice, the usage of the whole turn.
pub(crate) fn usage_chunk(id: &str, created: u64, model: &str, usage: WireUsage) -> Value {
    json!({
        "id": id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [],
        "usage": usage,
    })
}

/// The status of a chat completion whose turn paused on a call that waits for a
/// person's approval: 403 (not 409 or 5xx, which OpenAI clients retry on their own).
pub(crate) const APPROVAL_STATUS: u16 = 403;

/// The error body of a chat completion whose turn paused on `calls`, calls of the
/// agent's own that wait for a person's approval: the OpenAI error shape with
/// `code: "approval_required"`, plus `session` (kept for the decision, `null` when the
/// server keeps none), `agent` and `pending` (the calls, in the `tool_calls` shape).
pub(crate) fn approval_required(
    session: Option<&str>,
    agent: &str,
    calls: &[&ToolCall],
    expiry: std::time::Duration,
) -> ApprovalRequired {
    let names: Vec<String> = calls
        .iter()
        .map(|c| format!("`{}` (`{}`)", c.id, c.name))
        .collect();
    let how = match (session, calls.first()) {
        (Some(session), Some(first)) => format!(
            "decide with POST /v1/sessions/{session}/approvals/{}?agent={agent} and \
             {{\"decision\": \"approve\"}} (or \"deny\", or \"edit\" with \"arguments\") \
             within {} s; the rest of the turn streams from there",
            first.id,
            expiry.as_secs()
        ),
        _ => "this server keeps no session, so it cannot be decided: give the agent a \
              `SessionLog` on the server's store"
            .to_owned(),
    };
    let pending: Vec<OutToolCall> = calls.iter().map(|c| tool_call(c, None)).collect();
    ApprovalRequired {
        error: ApprovalDetail {
            message: format!(
                "tool call {} waits for a person's approval: {how}",
                names.join(", ")
            ),
            kind: "approval_required",
            param: None,
            code: "approval_required",
            session: session.map(str::to_owned),
            agent: agent.to_owned(),
            pending,
        },
    }
}

/// The 403 of a chat completion whose turn paused on calls that wait for approval:
/// the `Error` shape with `code: "approval_required"` and what deciding needs.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct ApprovalRequired {
    /// What waits, and how to decide it.
    error: ApprovalDetail,
}

/// The `error` of an [`ApprovalRequired`].
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct ApprovalDetail {
    /// Which calls wait and how to decide them.
    message: String,
    /// Always `approval_required`.
    #[serde(rename = "type")]
    #[schema(value_type = String, pattern = "^approval_required$")]
    kind: &'static str,
    /// Always `null`.
    param: Option<String>,
    /// Always `approval_required`.
    #[schema(value_type = String, pattern = "^approval_required$")]
    code: &'static str,
    /// The session kept for the decision (`null` when the server keeps none).
    session: Option<String>,
    /// The agent, the `?agent=` of the decision.
    agent: String,
    /// The calls that wait.
    pending: Vec<OutToolCall>,
}

/// What the response of one chat completion needs to know besides the turn's items.
pub(crate) struct Reply {
    /// The completion id (also the id of the turn's session).
    pub(crate) id: String,
    /// The `model` of the request: the agent.
    pub(crate) model: String,
    pub(crate) created: u64,
    /// The tools of the request, which the client runs.
    pub(crate) client: ClientTools,
    pub(crate) tap: Tap,
    /// Whether the turn's session outlives it (the server has a store).
    pub(crate) keeps_sessions: bool,
    pub(crate) approval_expiry: Duration,
}

impl Reply {
    /// The answer to calls of the agent's own that wait for approval.
    pub(crate) fn approval(&self, calls: &[&ToolCall]) -> ApprovalRequired {
        // The session exists when the turn kept one on the server's store.
        let kept = self.keeps_sessions && self.tap.persisted();
        let session = kept.then_some(self.id.as_str());
        approval_required(session, &self.model, calls, self.approval_expiry)
    }
}

/// OpenAI's `finish_reason`: `tool_calls` when the client has calls to run, `stop`
/// for an answer, `length` for a turn a limit stopped.
pub(crate) fn finish_reason(client_calls: bool, completed: bool) -> &'static str {
    if client_calls {
        "tool_calls"
    } else if completed {
        "stop"
    } else {
        "length"
    }
}

/// The usage of a turn in the wire's names.
pub(crate) fn wire_usage(usage: &brute::Usage) -> WireUsage {
    WireUsage {
        prompt_tokens: usage.input_tokens,
        completion_tokens: usage.output_tokens,
        total_tokens: usage.total(),
    }
}
