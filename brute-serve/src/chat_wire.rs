//! The OpenAI Chat Completions wire format, as a server speaks it: the request it
//! reads, the completion and the stream chunks it writes.

use brute::{Message, Role, ToolCall};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::ApiError;

/// A chat-completions request (fields brute has no use for, such as `temperature`,
/// are accepted and ignored).
#[derive(Debug, Deserialize)]
pub(crate) struct ChatRequest {
    /// The agent to run.
    pub(crate) model: String,
    /// The conversation so far.
    pub(crate) messages: Vec<WireMessage>,
    /// Whether to answer with a stream of chunks.
    #[serde(default)]
    pub(crate) stream: bool,
}

/// One message of a request.
#[derive(Debug, Deserialize)]
pub(crate) struct WireMessage {
    role: String,
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    tool_calls: Vec<WireToolCall>,
    #[serde(default)]
    tool_call_id: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireToolCall {
    id: String,
    function: WireFunction,
}

#[derive(Debug, Deserialize)]
struct WireFunction {
    name: String,
    #[serde(default)]
    arguments: String,
}

impl WireMessage {
    /// The brute message; `index` names the message in errors.
    pub(crate) fn into_message(self, index: usize) -> Result<Message, ApiError> {
        let content = text(self.content, index)?;
        let role = match self.role.as_str() {
            "system" | "developer" => Role::System,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            other => {
                return Err(ApiError::invalid(format!(
                    "messages[{index}].role: unknown role `{other}`"
                )));
            }
        };
        let mut message = Message::new(role, content);
        message.tool_call_id = self.tool_call_id;
        for (i, call) in self.tool_calls.into_iter().enumerate() {
            let arguments = if call.function.arguments.trim().is_empty() {
                json!({})
            } else {
                serde_json::from_str(&call.function.arguments).map_err(|e| {
                    ApiError::invalid(format!(
                        "messages[{index}].tool_calls[{i}].function.arguments: not JSON: {e}"
                    ))
                })?
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
#[derive(Debug, Serialize)]
pub(crate) struct WireUsage {
    pub(crate) prompt_tokens: u64,
    pub(crate) completion_tokens: u64,
    pub(crate) total_tokens: u64,
}

/// A whole completion: `object: "chat.completion"`.
pub(crate) fn completion(
    id: &str,
    created: u64,
    model: &str,
    text: &str,
    finish: &str,
    usage: WireUsage,
) -> Value {
    json!({
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{
            "index": 0,
            "message": { "role": "assistant", "content": text },
            "finish_reason": finish,
        }],
        "usage": usage,
    })
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
