//! The shapes the OpenAPI description gives to what brute-serve cannot derive a schema
//! on: brute's own types on the wire (`brute::Message`, `brute::ToolCall`,
//! `brute::stream::Verdict`) and the parts of a request or a stream a handler reads or
//! writes by hand. A leaf: the handlers name these in their `#[utoipa::path]`
//! attributes and `openapi.rs` lists the handlers, so the types live apart from
//! both (the description and its routes would otherwise import each other).
//!
//! Held to the server's behaviour by the contract test (brute-serve/tests/serve/openapi.rs).

/// A decision on a call that waits for approval (`brute::stream::Verdict`).
#[derive(utoipa::ToSchema)]
#[schema(as = Verdict)]
#[serde(tag = "decision", rename_all = "snake_case")]
#[allow(dead_code)] // A description only.
pub(crate) enum VerdictSchema {
    /// Run the call as the model wrote it.
    Approve,
    /// Do not run it; the model is told it was denied, and why.
    Deny {
        /// Why, for the model.
        reason: Option<String>,
    },
    /// Run it with these arguments instead.
    Edit {
        /// The arguments to run the call with.
        #[schema(value_type = Value)]
        arguments: (),
    },
}

/// A message of a stored session (`brute::Message`'s serde form).
#[derive(utoipa::ToSchema)]
#[schema(as = Message)]
#[allow(dead_code)] // A description only.
pub(crate) struct MessageSchema {
    /// `system`, `user`, `assistant` or `tool`.
    #[schema(pattern = "^(system|user|assistant|tool)$")]
    role: String,
    /// The text.
    content: String,
    /// Parts beside the text (images, files, data).
    #[schema(value_type = Option<Vec<Object>>, nullable = false)]
    parts: (),
    /// The model's reasoning.
    #[schema(nullable = false)]
    reasoning: Option<String>,
    /// The provider's signature of the reasoning.
    #[schema(nullable = false)]
    reasoning_signature: Option<String>,
    /// An assistant message's tool calls.
    #[schema(nullable = false)]
    tool_calls: Option<Vec<ToolCallSchema>>,
    /// On a tool result: the call it answers.
    #[schema(nullable = false)]
    tool_call_id: Option<String>,
    /// Whether the message waits for a decision on its calls.
    #[schema(nullable = false)]
    awaiting_approval: Option<bool>,
    /// The idempotency keys of the requests that wrote the message (a turn's key on its
    /// prompt, a decision's record on the reply it decided).
    #[schema(nullable = false)]
    idempotency_keys: Option<Vec<String>>,
}

/// The `Idempotency-Key` header of a turn or a decision (see the README's
/// "Idempotent requests").
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)] // Only its description is read.
pub(crate) struct IdempotencyHeader {
    /// 1 to 255 visible ASCII characters, chosen by the client, the same on every retry
    /// of one request: a retry of a turn (or decision) that finished is answered again
    /// from the session (`Idempotent-Replayed: true`), one whose server died is resumed,
    /// one that still runs is a 409; the key with another input is a 422.
    #[param(
        rename = "Idempotency-Key",
        min_length = 1,
        max_length = 255,
        pattern = r"^[\x21-\x7e]+$"
    )]
    idempotency_key: Option<String>,
}

/// A tool call of a stored message (`brute::ToolCall`'s serde form).
#[derive(utoipa::ToSchema)]
#[schema(as = StoredToolCall)]
#[allow(dead_code)] // A description only.
pub(crate) struct ToolCallSchema {
    /// The model's id of the call.
    id: String,
    /// The tool.
    name: String,
    /// The arguments as the model wrote them (normally an object).
    #[schema(value_type = Value)]
    arguments: (),
}

/// The `content` of a chat-completions message: a string or text parts.
#[derive(utoipa::ToSchema)]
#[schema(as = MessageContent)]
#[allow(dead_code)] // A description only.
pub(crate) enum ContentSchema {
    /// The text.
    #[schema(title = "text")]
    Text(String),
    /// Text parts, joined.
    #[schema(title = "parts")]
    Parts(Vec<TextPartSchema>),
}

/// A text part of a chat-completions message (the only kind the server takes).
#[derive(utoipa::ToSchema)]
#[schema(as = TextPart)]
#[allow(dead_code)] // A description only.
pub(crate) struct TextPartSchema {
    /// Always `text`.
    #[serde(rename = "type")]
    #[schema(pattern = "^text$")]
    kind: String,
    /// The text.
    text: String,
}

/// One Server-Sent Event of a turn: `event:` the item's `type`, `data:` the
/// `brute::stream::TurnItem` as JSON (`end` last).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // A description only.
pub(crate) struct TurnEvent {
    /// The item's `type` (`content_delta`, `message`, `tool_result`, `approval_required`, `end`, ..).
    event: String,
    /// The item as JSON, its `type` included.
    #[schema(content_media_type = "application/json")]
    data: String,
}

/// One Server-Sent Event of a stream whose events carry only `data:` (a chat
/// completion's chunks and `[DONE]`, AG-UI's events, A2A's responses).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // A description only.
pub(crate) struct DataEvent {
    /// The event's data: JSON (or `[DONE]`, the last of a chat completion's).
    data: String,
}

/// The body of `POST /a2a`: any JSON. A JSON-RPC 2.0 request (`{"jsonrpc": "2.0",
/// "id", "method", "params"}`) of `SendMessage`, `SendStreamingMessage`, `GetTask` or
/// `CancelTask` is run; anything else is answered with a JSON-RPC error (status 200,
/// as JSON-RPC does).
pub(crate) struct JsonRpcRequest;

impl utoipa::PartialSchema for JsonRpcRequest {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::SchemaType::AnyValue)
            .description(Some(
                "A JSON-RPC 2.0 request of SendMessage, SendStreamingMessage, GetTask or \
                 CancelTask; any other JSON is answered with a JSON-RPC error. A request \
                 without `id` is a notification (answered 204, without a body); a batch \
                 (an array) is answered with one error (-32600), batches are not supported",
            ))
            .into()
    }
}

impl utoipa::ToSchema for JsonRpcRequest {}

/// A JSON-RPC 2.0 response: `result` (an `A2aStreamResponse` or an `A2aTask`) or
/// `error` (with A2A's code).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // A description only.
pub(crate) struct JsonRpcResponse {
    /// Always `2.0`.
    #[schema(pattern = "^2\\.0$")]
    jsonrpc: String,
    /// The request's id (`null` when it could not be read).
    #[schema(value_type = Value)]
    id: (),
    /// What the method answered.
    #[schema(value_type = Option<Object>, nullable = false)]
    result: (),
    /// Why it failed.
    #[schema(nullable = false)]
    error: Option<JsonRpcError>,
}

/// The error of a JSON-RPC response.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // A description only.
pub(crate) struct JsonRpcError {
    /// JSON-RPC's or A2A's code (-32700 .. -32001).
    code: i64,
    /// What went wrong.
    message: String,
    /// A failed turn's `{"kind": ..}`: the stable kind of the server's JSON errors.
    #[schema(value_type = Option<Object>, nullable = false)]
    data: (),
}

/// An error of the A2A HTTP+JSON binding (`google.rpc.Status`), or one of the
/// server's own (`Error`: no token, a body over the limit, a path it cannot read).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // A description only.
#[serde(untagged)]
pub(crate) enum RestError {
    /// A2A's error.
    A2a(A2aStatus),
    /// The server's.
    Server(crate::error::ErrorBody<'static>),
}

/// A `google.rpc.Status` error body with an `ErrorInfo` naming A2A's reason.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // A description only.
pub(crate) struct A2aStatus {
    /// The status.
    error: A2aStatusDetail,
}

/// The `error` of an [`A2aStatus`].
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // A description only.
pub(crate) struct A2aStatusDetail {
    /// The HTTP status.
    code: u16,
    /// The `google.rpc.Code` name (`INVALID_ARGUMENT`, `NOT_FOUND`, ..).
    status: String,
    /// What went wrong.
    message: String,
    /// One `google.rpc.ErrorInfo` with A2A's reason.
    #[schema(value_type = Vec<Object>)]
    details: (),
}

/// The message of a `SendMessage` (an `A2aMessage` from the client): its `role` is
/// `ROLE_USER` or empty, its `contextId` a session id.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // A description only.
#[serde(rename_all = "camelCase")]
pub(crate) struct A2aUserMessage {
    /// The client's id of the message.
    #[schema(nullable = false)]
    message_id: Option<String>,
    /// The conversation: a session id (a new one when absent).
    #[schema(
        nullable = false,
        min_length = 1,
        max_length = 128,
        pattern = r"^[^./\\\x00-\x1f\x7f-\x9f][^/\\\x00-\x1f\x7f-\x9f]*$"
    )]
    context_id: Option<String>,
    /// The task the message answers (one that waits for input).
    task_id: Option<String>,
    /// `ROLE_USER` (or empty).
    #[schema(nullable = false, pattern = "^(ROLE_USER)?$")]
    role: Option<String>,
    /// The message's parts: at least one, each text or data (the agent takes no
    /// files).
    #[schema(min_items = 1)]
    parts: Vec<A2aUserPart>,
    /// The client's metadata.
    #[schema(value_type = Option<Value>)]
    metadata: (),
}

/// A part of a client's A2A message: one with `text`, or one with `data` (any JSON
/// but `null`); the other fields of `A2aPart` may come along.
pub(crate) struct A2aUserPart;

impl utoipa::PartialSchema for A2aUserPart {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        let optional = serde_json::json!({
            "raw": {"type": ["string", "null"]},
            "url": {"type": ["string", "null"]},
            "filename": {"type": ["string", "null"]},
            "mediaType": {"type": ["string", "null"]},
        });
        let branch = |name: &str, schema: serde_json::Value| {
            let mut properties = optional.clone();
            properties[name] = schema;
            serde_json::json!({"type": "object", "required": [name], "properties": properties})
        };
        let schema = serde_json::json!({
            "description": "A text part (`text`) or a data part (`data`)",
            "anyOf": [
                branch("text", serde_json::json!({"type": "string"})),
                branch("data", serde_json::json!({
                    "type": ["object", "array", "string", "number", "boolean"]
                })),
            ],
        });
        match serde_json::from_value(schema) {
            Ok(schema) => utoipa::openapi::RefOr::T(schema),
            // The literal above is a schema; should it ever not parse, the part is
            // described as any object rather than not at all.
            Err(_) => utoipa::openapi::ObjectBuilder::new().into(),
        }
    }
}

impl utoipa::ToSchema for A2aUserPart {}

/// An A2A agent card (the fields this server writes).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // A description only.
#[serde(rename_all = "camelCase")]
pub(crate) struct AgentCard {
    /// The agent's name.
    name: String,
    /// What it is.
    description: String,
    /// Its JSON-RPC and HTTP+JSON endpoints.
    #[schema(value_type = Vec<Object>)]
    supported_interfaces: (),
    /// The server's version.
    version: String,
    /// Streaming on, push notifications off.
    #[schema(value_type = Object)]
    capabilities: (),
    /// The media types it reads.
    default_input_modes: Vec<String>,
    /// The media types it writes.
    default_output_modes: Vec<String>,
    /// One skill: talking to it.
    #[schema(value_type = Vec<Object>)]
    skills: (),
}
