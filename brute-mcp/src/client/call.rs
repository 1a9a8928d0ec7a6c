//! One call of an MCP server's tool: its arguments checked against the tool's input
//! schema, sent as `tools/call`, and the result turned into the text and parts the
//! model sees.

use std::sync::Arc;

use brute::ToolCall;
use brute::message::{Data, Part, Source};
use brute::tools::{PreparedCall, ToolContext, ToolError, ToolOutput, Truncation, quoted};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, JsonObject, ResourceContents,
};
use rmcp::service::{Peer, RoleClient, ServiceError};
use serde_json::Value;

use super::http::{Endpoint, Refusal};

/// A checked call of one of an [`McpTools`](crate::McpTools) server's tools, as
/// [`ToolSet::prepare`](brute::tools::ToolSet::prepare) returns it. Running it sends
/// `tools/call`; dropping the running call (a timeout, a cancelled turn) tells the
/// server the request is cancelled.
pub struct McpCall {
    pub(crate) server: Arc<str>,
    /// The HTTP address, for the error of a refused call.
    pub(crate) endpoint: Option<Arc<Endpoint>>,
    pub(crate) peer: Peer<RoleClient>,
    pub(crate) tool: String,
    pub(crate) arguments: JsonObject,
}

impl std::fmt::Debug for McpCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpCall")
            .field("server", &self.server)
            .field("tool", &self.tool)
            .finish_non_exhaustive()
    }
}

impl PreparedCall for McpCall {
    fn mutates(&self) -> Option<&str> {
        // What a remote tool changes is unknown: no file lock, no undo snapshot.
        None
    }

    fn snapshots(&self) -> bool {
        false
    }

    fn truncation(&self) -> Truncation {
        Truncation::Head
    }

    async fn run(self, _cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let params = CallToolRequestParams::new(self.tool.clone()).with_arguments(self.arguments);
        match self.peer.call_tool(params).await {
            Ok(result) => output(result),
            Err(error) => {
                if let Some(endpoint) = &self.endpoint
                    && let Some(refusal) = Refusal::of(&error)
                {
                    let error = refusal.error(&self.server, endpoint, false);
                    return Err(ToolError::failed(error.to_string()));
                }
                Err(ToolError::failed(service_error(&self.server, &error)))
            }
        }
    }
}

/// What the model is told when the server could not answer.
fn service_error(server: &str, error: &ServiceError) -> String {
    match error {
        ServiceError::TransportClosed => format!(
            "MCP server `{server}` is not running (its connection closed); the call was not made or its result was lost"
        ),
        ServiceError::UnexpectedResponse => format!(
            "MCP server `{server}` answered `tools/call` with something that is not a tool result"
        ),
        other => format!("MCP server `{server}`: {other}"),
    }
}

/// A `tools/call` result as the model sees it: its text blocks joined by newlines,
/// its images (and embedded images and PDFs) as parts, what brute cannot carry
/// (audio, other binary resources) as a line saying what was left out. An error
/// result (`isError`) is a tool error, of its text.
pub(crate) fn output(result: CallToolResult) -> Result<ToolOutput, ToolError> {
    let mut lines: Vec<String> = Vec::new();
    let mut parts: Vec<Part> = Vec::new();
    for block in result.content {
        match block_output(block) {
            Shown::Text(text) => lines.push(text),
            Shown::Part(part) => parts.push(part),
        }
    }
    if lines.is_empty()
        && parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        lines.push(structured.to_string());
    }
    let text = lines.join("\n");
    if result.is_error == Some(true) {
        Err(ToolError::failed(text))
    } else {
        Ok(ToolOutput {
            content: text,
            parts,
        })
    }
}

/// One content block as the model sees it.
enum Shown {
    /// A line of the result's text.
    Text(String),
    /// An image or a document beside the text.
    Part(Part),
}

/// One content block: text as it is, an image as an image part, an embedded resource
/// as its text or (an image or a PDF) as a part, the rest described.
fn block_output(block: ContentBlock) -> Shown {
    match block {
        ContentBlock::Text(text) => Shown::Text(text.text),
        ContentBlock::Image(image) => match Data::from_base64(&image.mime_type, image.data) {
            Ok(data) => Shown::Part(Part::Image(Source::Data(data))),
            Err(e) => Shown::Text(format!(
                "[image ({}) left out: {e}]",
                quoted(&image.mime_type)
            )),
        },
        ContentBlock::Audio(audio) => Shown::Text(format!(
            "[audio ({}, {} bytes of base64) left out: brute's messages carry no audio]",
            quoted(&audio.mime_type),
            audio.data.len()
        )),
        ContentBlock::Resource(embedded) => resource_output(embedded.resource),
        ContentBlock::ResourceLink(link) => {
            Shown::Text(format!("[resource link: {}]", quoted(&link.uri)))
        }
        #[allow(unreachable_patterns)]
        _ => Shown::Text("[content of a kind brute does not show]".to_string()),
    }
}

/// An embedded resource: its text, an image or PDF blob as a part (a PDF titled with
/// its URI), another blob described.
fn resource_output(resource: ResourceContents) -> Shown {
    match resource {
        ResourceContents::TextResourceContents { text, .. } => Shown::Text(text),
        ResourceContents::BlobResourceContents {
            uri,
            mime_type,
            blob,
            ..
        } => {
            let mime = mime_type.as_deref().unwrap_or("");
            let is_image = mime.starts_with("image/");
            if !is_image && mime != "application/pdf" {
                return Shown::Text(format!(
                    "[resource {} ({}, binary) left out: brute shows binary resources only as images and PDFs]",
                    quoted(&uri),
                    if mime.is_empty() {
                        "no media type".to_string()
                    } else {
                        quoted(mime)
                    }
                ));
            }
            match Data::from_base64(mime, blob) {
                Ok(data) if is_image => Shown::Part(Part::Image(Source::Data(data))),
                Ok(data) => Shown::Part(Part::Document {
                    source: Source::Data(data),
                    title: Some(uri),
                }),
                Err(e) => Shown::Text(format!("[resource {} left out: {e}]", quoted(&uri))),
            }
        }
        #[allow(unreachable_patterns)]
        _ => Shown::Text("[resource of a kind brute does not show]".to_string()),
    }
}

/// The call's arguments as an object, checked against the top level of the tool's
/// input schema: every `required` argument present, and every argument whose schema
/// names a `type` of that type. The server checks the rest.
pub(crate) fn arguments(call: &ToolCall, schema: &Value) -> Result<JsonObject, ToolError> {
    let object = match &call.arguments {
        Value::Object(object) => object.clone(),
        Value::Null => JsonObject::new(),
        Value::String(text) => match serde_json::from_str::<Value>(text.as_str()) {
            Ok(Value::Object(object)) => object,
            Ok(Value::Null) => JsonObject::new(),
            Ok(other) => return Err(not_an_object(&other)),
            Err(e) => return Err(ToolError::InvalidJson(e.to_string())),
        },
        other => return Err(not_an_object(other)),
    };
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            if !object.contains_key(name) {
                let field = quoted(name);
                return Err(ToolError::InvalidArguments {
                    problem: format!("argument `{field}`: missing (it is required)"),
                    field,
                });
            }
        }
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, value) in &object {
            let Some(types) = properties.get(name).and_then(|p| p.get("type")) else {
                continue;
            };
            let allowed: Vec<&str> = match types {
                Value::String(one) => vec![one.as_str()],
                Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
                _ => continue,
            };
            if !allowed.is_empty() && !allowed.iter().any(|t| has_type(value, t)) {
                let field = quoted(name);
                return Err(ToolError::InvalidArguments {
                    problem: format!(
                        "argument `{field}`: expected {}, got {}",
                        allowed.join(" or "),
                        type_name(value)
                    ),
                    field,
                });
            }
        }
    }
    Ok(object)
}

fn not_an_object(value: &Value) -> ToolError {
    ToolError::InvalidArguments {
        field: ".".to_string(),
        problem: format!("expected an object of arguments, got {}", type_name(value)),
    }
}

fn has_type(value: &Value, ty: &str) -> bool {
    match ty {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        // A type this check does not know: the server decides.
        _ => true,
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a number",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(arguments: Value) -> ToolCall {
        ToolCall::new("c1", "add", arguments)
    }

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}, "note": {"type": ["string", "null"]}},
            "required": ["a"]
        })
    }

    #[test]
    fn arguments_are_checked_against_the_top_of_the_schema() {
        let ok = arguments(&call(json!({"a": 1, "note": null})), &schema());
        assert_eq!(ok.ok().map(|o| o.len()), Some(2));
        let text = arguments(&call(json!("{\"a\": 2}")), &schema());
        assert!(text.is_ok());
        match arguments(&call(json!({"note": "x"})), &schema()) {
            Err(ToolError::InvalidArguments { field, problem }) => {
                assert_eq!(field, "a");
                assert!(problem.contains("missing"), "{problem}");
            }
            other => panic!("expected a missing argument, got {other:?}"),
        }
        match arguments(&call(json!({"a": "one"})), &schema()) {
            Err(ToolError::InvalidArguments { problem, .. }) => {
                assert_eq!(problem, "argument `a`: expected integer, got a string");
            }
            other => panic!("expected a type error, got {other:?}"),
        }
        assert!(matches!(
            arguments(&call(json!([1])), &schema()),
            Err(ToolError::InvalidArguments { .. })
        ));
        assert!(matches!(
            arguments(&call(json!("{not json")), &schema()),
            Err(ToolError::InvalidJson(_))
        ));
    }

    #[test]
    fn results_become_text_and_error_results_tool_errors() {
        let result =
            CallToolResult::success(vec![ContentBlock::text("one"), ContentBlock::text("two")]);
        assert_eq!(
            output(result).ok().map(|o| o.content),
            Some("one\ntwo".into())
        );
        let structured = CallToolResult::structured(json!({"sum": 3}));
        let text = output(structured)
            .ok()
            .map(|o| o.content)
            .unwrap_or_default();
        assert!(text.contains("\"sum\":3"), "{text}");
        let failed = CallToolResult::error(vec![ContentBlock::text("no such file")]);
        match output(failed) {
            Err(ToolError::Failed(message)) => assert_eq!(message, "no such file"),
            other => panic!("expected a failure, got {other:?}"),
        }
    }
}
