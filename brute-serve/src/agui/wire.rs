//! AG-UI 1.0's wire shapes that the endpoint reads and writes: the `RunAgentInput` a
//! client posts, and the events of a run (camelCase JSON, `type` in
//! SCREAMING_SNAKE_CASE, one per SSE `data:` line).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The body of a run request (AG-UI's `RunAgentInput`). Fields this server does not
/// read (`protocolVersion`, `parentRunId`, `resume`, …) are accepted and ignored, as
/// the protocol's loose objects allow.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunAgentInput {
    /// The conversation: a brute session of this id (1 to 128 bytes, not starting
    /// with `.`, without `/`, `\` or a control character).
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = r"^[^./\\\x00-\x1f\x7f-\x9f][^/\\\x00-\x1f\x7f-\x9f]*$"
    )]
    pub(crate) thread_id: String,
    /// The client's id of this run, echoed in `RUN_STARTED` and `RUN_FINISHED`.
    pub(crate) run_id: String,
    /// The thread's messages as the client holds them; the new input at the end:
    /// the user's message, in text, or the `tool` messages answering the front-end
    /// tool calls the thread waits for.
    #[schema(min_items = 1)]
    pub(crate) messages: Vec<InputMessage>,
    /// Tools the front end runs: offered to the model next to the agent's own; a
    /// call to one ends the run with the thread waiting for its result.
    #[serde(default)]
    pub(crate) tools: Vec<FrontEndTool>,
    /// The client's state; this server's agents keep none to show.
    #[serde(default)]
    #[allow(dead_code)]
    #[schema(value_type = Option<Value>)]
    pub(crate) state: Option<Value>,
    /// Context entries (`{description, value}`), given to the model with the input.
    #[serde(default)]
    pub(crate) context: Vec<ContextEntry>,
    /// Properties for the agent's framework; ignored.
    #[serde(default)]
    #[allow(dead_code)]
    #[schema(value_type = Option<Value>)]
    pub(crate) forwarded_props: Option<Value>,
}

/// One message of the input, as far as the endpoint reads it.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = AguiMessage)]
pub(crate) struct InputMessage {
    /// `user`, `assistant`, `system`, `developer`, `tool`, `activity`, `reasoning`
    /// (any other is a 400 naming the message).
    #[serde(deserialize_with = "known_role")]
    #[schema(pattern = "^(user|assistant|system|developer|tool|activity|reasoning)$")]
    pub(crate) role: String,
    /// A string, or (for user and tool messages) a list of content parts.
    #[serde(default)]
    #[schema(value_type = Option<Value>)]
    pub(crate) content: Option<Value>,
    /// Of a `tool` message: the call it answers.
    #[serde(default)]
    pub(crate) tool_call_id: Option<String>,
    /// Of a `tool` message: the tool's failure, if it failed.
    #[serde(default)]
    pub(crate) error: Option<String>,
}

/// The roles of AG-UI's messages.
const ROLES: [&str; 7] = [
    "user",
    "assistant",
    "system",
    "developer",
    "tool",
    "activity",
    "reasoning",
];

/// A message's `role`: one of [`ROLES`], as the description's pattern says.
fn known_role<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let role = String::deserialize(deserializer)?;
    if ROLES.contains(&role.as_str()) {
        return Ok(role);
    }
    Err(serde::de::Error::custom(format!(
        "unknown role `{}`, expected one of `{}`",
        crate::session_id::shown(&role),
        ROLES.join("`, `")
    )))
}

/// A tool the front end runs (AG-UI's `Tool`).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[schema(as = AguiTool)]
pub(crate) struct FrontEndTool {
    /// Its name: unique among the run's tools, and not the name of one of the agent's
    /// own tools.
    #[schema(min_length = 1)]
    pub(crate) name: String,
    /// What it does, for the model.
    pub(crate) description: String,
    /// The JSON Schema of its arguments (an object; none: no arguments).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub(crate) parameters: Option<Value>,
}

impl InputMessage {
    /// The text of the message: the string, or its `text` parts joined; `None` for
    /// content with a part that is not text (this server takes text only).
    pub(crate) fn text(&self) -> Option<String> {
        match &self.content {
            None | Some(Value::Null) => Some(String::new()),
            Some(Value::String(text)) => Some(text.clone()),
            Some(Value::Array(parts)) => parts
                .iter()
                .map(|part| match (part.get("type"), part.get("text")) {
                    (Some(Value::String(kind)), Some(Value::String(text))) if kind == "text" => {
                        Some(text.as_str())
                    }
                    _ => None,
                })
                .collect::<Option<String>>(),
            Some(_) => None,
        }
    }
}

/// A context entry of the input.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[schema(as = AguiContext)]
pub(crate) struct ContextEntry {
    /// What the value is.
    pub(crate) description: String,
    /// The value.
    pub(crate) value: String,
}

/// An event of a run.
#[derive(Debug, Serialize, PartialEq)]
#[serde(tag = "type", rename_all = "SCREAMING_SNAKE_CASE")]
pub(crate) enum AguiEvent {
    /// The run started.
    #[serde(rename_all = "camelCase")]
    RunStarted { thread_id: String, run_id: String },
    /// An assistant message opens.
    #[serde(rename_all = "camelCase")]
    TextMessageStart { message_id: String, role: String },
    /// A piece of its text.
    #[serde(rename_all = "camelCase")]
    TextMessageContent { message_id: String, delta: String },
    /// It closes.
    #[serde(rename_all = "camelCase")]
    TextMessageEnd { message_id: String },
    /// A tool call opens.
    #[serde(rename_all = "camelCase")]
    ToolCallStart {
        tool_call_id: String,
        tool_call_name: String,
        parent_message_id: String,
    },
    /// Its arguments (the whole JSON text in one piece).
    #[serde(rename_all = "camelCase")]
    ToolCallArgs { tool_call_id: String, delta: String },
    /// Its arguments are complete.
    #[serde(rename_all = "camelCase")]
    ToolCallEnd { tool_call_id: String },
    /// A tool that ran on the server returned.
    #[serde(rename_all = "camelCase")]
    ToolCallResult {
        message_id: String,
        tool_call_id: String,
        content: String,
        role: String,
    },
    /// The run ended without failing; `outcome` says how.
    #[serde(rename_all = "camelCase")]
    RunFinished {
        thread_id: String,
        run_id: String,
        outcome: Value,
    },
    /// The run failed.
    #[serde(rename_all = "camelCase")]
    RunError { message: String, code: String },
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_use_the_protocols_names() {
        let event = AguiEvent::ToolCallStart {
            tool_call_id: "c1".into(),
            tool_call_name: "launch".into(),
            parent_message_id: "m1".into(),
        };
        assert_eq!(
            serde_json::to_value(event).unwrap_or_default(),
            json!({"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "launch", "parentMessageId": "m1"})
        );
    }

    #[test]
    fn text_of_parts_and_strings() {
        let parts: InputMessage = serde_json::from_value(json!({
            "id": "u1", "role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(parts.text().as_deref(), Some("ab"));
        let image: InputMessage = serde_json::from_value(json!({
            "id": "u1", "role": "user", "content": [{"type": "image", "source": {}}]
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(image.text(), None);
    }
}
