//! The JSON of A2A v1.0 (the protobuf JSON mapping of `a2a.proto`: camelCase fields,
//! enums by their full names such as `TASK_STATE_INPUT_REQUIRED`), for the server and
//! the client alike. Readers are lenient as protobuf JSON readers are: unknown fields
//! are ignored and the snake_case names of the main fields are accepted too.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol version this crate speaks (the `A2A-Version` header, the card's
/// `protocolVersion`).
pub(crate) const VERSION: &str = "1.0";

/// `ROLE_USER`: the client's side of a conversation.
pub(crate) const ROLE_USER: &str = "ROLE_USER";
/// `ROLE_AGENT`: the agent's side.
pub(crate) const ROLE_AGENT: &str = "ROLE_AGENT";

/// One piece of a message or artifact: text, raw bytes (base64), a URL or JSON data.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = A2aPart)]
pub(crate) struct Part {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) raw: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Value>)]
    pub(crate) data: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) filename: Option<String>,
    #[serde(default, alias = "media_type", skip_serializing_if = "Option::is_none")]
    pub(crate) media_type: Option<String>,
}

impl Part {
    /// A text part.
    pub(crate) fn text(text: impl Into<String>) -> Part {
        Part {
            text: Some(text.into()),
            ..Part::default()
        }
    }

    /// A JSON data part.
    pub(crate) fn data(data: Value) -> Part {
        Part {
            data: Some(data),
            media_type: Some("application/json".to_owned()),
            ..Part::default()
        }
    }
}

/// A message of a conversation: the client's (`ROLE_USER`) or the agent's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = A2aMessage)]
pub(crate) struct Message {
    #[serde(default, alias = "message_id")]
    pub(crate) message_id: String,
    #[serde(default, alias = "context_id", skip_serializing_if = "Option::is_none")]
    pub(crate) context_id: Option<String>,
    #[serde(default, alias = "task_id", skip_serializing_if = "Option::is_none")]
    pub(crate) task_id: Option<String>,
    #[serde(default)]
    pub(crate) role: String,
    #[serde(default)]
    pub(crate) parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Value>)]
    pub(crate) metadata: Option<Value>,
}

/// The state of a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = A2aTaskState)]
pub(crate) enum TaskState {
    #[serde(rename = "TASK_STATE_UNSPECIFIED")]
    Unspecified,
    #[serde(rename = "TASK_STATE_SUBMITTED")]
    Submitted,
    #[serde(rename = "TASK_STATE_WORKING")]
    Working,
    #[serde(rename = "TASK_STATE_COMPLETED")]
    Completed,
    #[serde(rename = "TASK_STATE_FAILED")]
    Failed,
    #[serde(rename = "TASK_STATE_CANCELED")]
    Canceled,
    #[serde(rename = "TASK_STATE_INPUT_REQUIRED")]
    InputRequired,
    #[serde(rename = "TASK_STATE_REJECTED")]
    Rejected,
    #[serde(rename = "TASK_STATE_AUTH_REQUIRED")]
    AuthRequired,
}

impl TaskState {
    /// The name the wire uses.
    pub(crate) fn name(self) -> &'static str {
        match self {
            TaskState::Unspecified => "TASK_STATE_UNSPECIFIED",
            TaskState::Submitted => "TASK_STATE_SUBMITTED",
            TaskState::Working => "TASK_STATE_WORKING",
            TaskState::Completed => "TASK_STATE_COMPLETED",
            TaskState::Failed => "TASK_STATE_FAILED",
            TaskState::Canceled => "TASK_STATE_CANCELED",
            TaskState::InputRequired => "TASK_STATE_INPUT_REQUIRED",
            TaskState::Rejected => "TASK_STATE_REJECTED",
            TaskState::AuthRequired => "TASK_STATE_AUTH_REQUIRED",
        }
    }
}

/// A task's state, with the agent's message that goes with it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = A2aTaskStatus)]
pub(crate) struct TaskStatus {
    pub(crate) state: TaskState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<Message>,
}

/// An output of a task.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = A2aArtifact)]
pub(crate) struct Artifact {
    #[serde(default, alias = "artifact_id")]
    pub(crate) artifact_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) name: Option<String>,
    #[serde(default)]
    pub(crate) parts: Vec<Part>,
}

/// A task: its id, its context (conversation), its state, outputs and messages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = A2aTask)]
pub(crate) struct Task {
    pub(crate) id: String,
    #[serde(default, alias = "context_id")]
    pub(crate) context_id: String,
    pub(crate) status: TaskStatus,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) artifacts: Vec<Artifact>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) history: Vec<Message>,
}

/// A change of a task's state, in a stream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = A2aStatusUpdate)]
pub(crate) struct StatusUpdate {
    #[serde(alias = "task_id")]
    pub(crate) task_id: String,
    #[serde(default, alias = "context_id")]
    pub(crate) context_id: String,
    pub(crate) status: TaskStatus,
}

/// A piece of an artifact, in a stream: appended to what came before when `append`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = A2aArtifactUpdate)]
pub(crate) struct ArtifactUpdate {
    #[serde(alias = "task_id")]
    pub(crate) task_id: String,
    #[serde(default, alias = "context_id")]
    pub(crate) context_id: String,
    pub(crate) artifact: Artifact,
    #[serde(default)]
    pub(crate) append: bool,
    #[serde(default, alias = "last_chunk")]
    pub(crate) last_chunk: bool,
}

/// One result of `SendMessage` (`task` or `message`) or one event of a stream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = A2aStreamResponse)]
pub(crate) enum StreamResponse {
    Task(Task),
    Message(Message),
    #[serde(alias = "status_update")]
    StatusUpdate(StatusUpdate),
    #[serde(alias = "artifact_update")]
    ArtifactUpdate(ArtifactUpdate),
}

/// How the client wants a `SendMessage` answered.
#[derive(Clone, Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = A2aSendConfiguration)]
pub(crate) struct SendConfiguration {
    /// Answer with the task as soon as it is submitted; the turn runs on.
    #[serde(default, alias = "return_immediately")]
    pub(crate) return_immediately: bool,
    /// At most this many messages of the history in the answer.
    #[serde(
        default,
        alias = "history_length",
        deserialize_with = "crate::whole::optional"
    )]
    #[schema(minimum = 0, maximum = 9_007_199_254_740_991_f64)]
    pub(crate) history_length: Option<usize>,
}

/// The params of `SendMessage` and `SendStreamingMessage`.
#[derive(Clone, Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = A2aSendParams)]
pub(crate) struct SendParams {
    /// The client's message.
    #[schema(value_type = crate::schema::A2aUserMessage)]
    pub(crate) message: Message,
    #[serde(default)]
    pub(crate) configuration: Option<SendConfiguration>,
}

/// The params of `GetTask` and `CancelTask`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskParams {
    pub(crate) id: String,
    #[serde(
        default,
        alias = "history_length",
        deserialize_with = "crate::whole::optional"
    )]
    pub(crate) history_length: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_response_is_keyed_by_its_kind_and_states_by_their_full_names() {
        let update = StreamResponse::StatusUpdate(StatusUpdate {
            task_id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state: TaskState::InputRequired,
                message: None,
            },
        });
        assert_eq!(
            serde_json::to_value(&update).unwrap_or_default(),
            serde_json::json!({"statusUpdate": {"taskId": "t", "contextId": "c",
                "status": {"state": "TASK_STATE_INPUT_REQUIRED"}}})
        );
        let parsed: Message = serde_json::from_value(serde_json::json!({
            "message_id": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}], "extra": 1
        }))
        .unwrap_or_default();
        assert_eq!(parsed.message_id, "m");
        assert_eq!(parsed.parts, [Part::text("hi")]);
    }
}
