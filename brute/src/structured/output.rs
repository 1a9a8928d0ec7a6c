//! [`OutputSchema`]: the shape a turn's answer must have, as the providers send it.

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::message::Message;
use crate::tool::ToolSpec;

/// The JSON Schema a model's answer must match, left in
/// [`Env::extensions`](crate::Env::extensions) for the providers to read.
///
/// While an env holds one, [`OpenAi`](crate::providers::OpenAi) sends it as
/// `response_format: {type: "json_schema", json_schema: {name, schema, strict}}` and
/// [`Anthropic`](crate::providers::Anthropic) advertises a tool of its name with the
/// schema as its input and forces the model to call it (`tool_choice`), then turns the
/// call back into a text answer, so that with either provider the answer is the JSON
/// text in [`Message::content`]. Other models (a closure, [`ScriptedModel`]) may read it
/// from the env and answer in JSON.
///
/// Give it a name none of the agent's tools has: a call of a tool of that name is
/// taken for the answer.
///
/// Both APIs want an object at the root: a schema of anything else (an array, an enum)
/// is wrapped as `{"value": schema}` and unwrapped again by [`OutputSchema::extract`].
///
/// ```
/// use brute::structured::OutputSchema;
/// use serde_json::json;
///
/// let output = OutputSchema::new("city", json!({
///     "type": "object",
///     "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
///     "required": ["name"]
/// }));
/// // Strict (the default): every object closes and requires all its properties.
/// assert_eq!(output.schema()["additionalProperties"], json!(false));
/// assert_eq!(output.schema()["required"], json!(["name", "population"]));
///
/// let mut reply = brute::Message::assistant(r#"{"name": "Zürich", "population": 443037}"#);
/// assert_eq!(output.extract(&reply)?["name"], "Zürich");
/// # Ok::<(), brute::structured::ExtractError>(())
/// ```
///
/// [`ScriptedModel`]: crate::providers::ScriptedModel
#[derive(Clone)]
pub struct OutputSchema {
    name: Arc<str>,
    description: Arc<str>,
    /// As given (wrapped when not an object).
    given: Arc<Value>,
    /// What is sent: `given`, made strict when `strict`.
    schema: Arc<Value>,
    wrapped: bool,
    strict: bool,
    check: Option<Check>,
}

/// A check of the answer beyond its JSON shape: the type's own deserialisation, or a
/// rule of the application.
type Check = Arc<dyn Fn(&Value) -> Result<(), String> + Send + Sync>;

/// The key a non-object answer is wrapped under.
const WRAP_KEY: &str = "value";

impl OutputSchema {
    /// The answer must match `schema`; `name` names it to the provider (the OpenAI
    /// schema name, the Anthropic tool name), cut to the 64 characters
    /// `[A-Za-z0-9_-]` both accept. Strict by default.
    pub fn new(name: impl AsRef<str>, schema: Value) -> Self {
        let (given, wrapped) = match schema.get("type") {
            Some(Value::String(t)) if t == "object" => (schema, false),
            _ => {
                let mut properties = Map::new();
                properties.insert(WRAP_KEY.into(), schema);
                let wrapper = serde_json::json!({
                    "type": "object",
                    "properties": properties,
                    "required": [WRAP_KEY],
                    "additionalProperties": false,
                });
                (wrapper, true)
            }
        };
        let given = Arc::new(given);
        OutputSchema {
            name: Arc::from(tool_name(name.as_ref())),
            description: Arc::from(
                "Give your final answer by calling this tool: its input is the answer.",
            ),
            schema: Arc::new(strict(&given)),
            given,
            wrapped,
            strict: true,
            check: None,
        }
    }

    /// Adds a check of the answer beyond its JSON shape (a range, a rule between
    /// fields): an `Err` is a validation error, sent back to the model by
    /// [`Structured`](super::Structured) like a shape error. Checks run in the order
    /// they were added, after the type's own ([`OutputSchema::of`]).
    ///
    /// ```
    /// use brute::{Message, structured::OutputSchema};
    /// use serde_json::json;
    ///
    /// let output = OutputSchema::new("score", json!({"type": "integer"}))
    ///     .check(|v| match v.as_i64() {
    ///         Some(0..=10) => Ok(()),
    ///         _ => Err("the score is from 0 to 10".into()),
    ///     });
    /// assert!(output.validate(&Message::assistant(r#"{"value": 7}"#)).is_ok());
    /// assert_eq!(
    ///     output.validate(&Message::assistant(r#"{"value": 11}"#)).unwrap_err(),
    ///     "the score is from 0 to 10"
    /// );
    /// ```
    pub fn check(
        mut self,
        check: impl Fn(&Value) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.check = Some(match self.check.take() {
            None => Arc::new(check),
            Some(first) => Arc::new(move |value: &Value| {
                first(value)?;
                check(value)
            }),
        });
        self
    }

    /// The answer in `message` if it is valid: [`OutputSchema::extract`], then the
    /// checks. The error says what is wrong, for the model.
    pub fn validate(&self, message: &Message) -> Result<Value, String> {
        let value = self.extract(message).map_err(|e| e.to_string())?;
        if let Some(check) = &self.check {
            check(&value)?;
        }
        Ok(value)
    }

    /// Whether the schema is sent strict (default `true`): OpenAI's `strict: true`, which
    /// constrains decoding to the schema and requires every object to close
    /// (`additionalProperties: false`) and list all its properties as required (optional
    /// fields are nullable instead). Turn it off for schemas strict mode cannot express,
    /// such as maps (`HashMap` fields, whose objects have no fixed properties).
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self.schema = if strict {
            Arc::new(self::strict(&self.given))
        } else {
            self.given.clone()
        };
        self
    }

    /// Describes the answer to the model (the Anthropic tool's description).
    pub fn description(mut self, description: impl Into<Arc<str>>) -> Self {
        self.description = description.into();
        self
    }

    /// The name sent to the provider.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The schema sent to the provider (wrapped and made strict as configured).
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Whether the schema is sent strict.
    pub fn is_strict(&self) -> bool {
        self.strict
    }

    /// Whether the answer is wrapped as `{"value": ..}` on the wire.
    pub fn is_wrapped(&self) -> bool {
        self.wrapped
    }

    /// The tool a provider without a native JSON mode advertises for the answer.
    pub fn tool(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.to_string(),
            description: self.description.to_string(),
            parameters: self.schema.clone(),
        }
    }

    /// The answer in `message`: its text parsed as JSON (a code fence around it is
    /// allowed), unwrapped when the schema was wrapped.
    pub fn extract(&self, message: &Message) -> Result<Value, ExtractError> {
        let text = unfence(&message.content);
        if text.is_empty() {
            return Err(ExtractError::Empty);
        }
        let value: Value =
            serde_json::from_str(text).map_err(|e| ExtractError::NotJson(e.to_string()))?;
        if !self.wrapped {
            return Ok(value);
        }
        match value {
            Value::Object(mut map) => map
                .remove(WRAP_KEY)
                .ok_or(ExtractError::NotWrapped(WRAP_KEY)),
            _ => Err(ExtractError::NotWrapped(WRAP_KEY)),
        }
    }

    /// Turns the answer tool's call in a reply into the reply's text, so that the
    /// answer reads the same whichever mechanism produced it. A reply that calls other
    /// tools too keeps those and drops the answer (the model answered before seeing their
    /// results, and will answer again).
    pub fn settle(&self, message: &mut Message) {
        let Some(at) = message
            .tool_calls
            .iter()
            .position(|c| *c.name == *self.name)
        else {
            return;
        };
        let call = message.tool_calls.remove(at);
        if message.tool_calls.is_empty() {
            message.content = call.arguments.to_string();
        }
    }
}

impl fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutputSchema")
            .field("name", &self.name)
            .field("strict", &self.strict)
            .field("wrapped", &self.wrapped)
            .finish_non_exhaustive()
    }
}

/// Why a reply holds no answer of the expected shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExtractError {
    /// The reply has no text.
    #[error("the reply is empty: it should be a JSON value matching the schema")]
    Empty,
    /// The reply is not JSON.
    #[error("the reply is not JSON: {0}")]
    NotJson(String),
    /// The schema was wrapped and the reply is not `{"value": ..}`.
    #[error("the reply should be an object with the answer under {0:?}")]
    NotWrapped(&'static str),
}

/// `text` without surrounding whitespace and a Markdown code fence, if it has one.
fn unfence(text: &str) -> &str {
    let text = text.trim();
    let Some(inner) = text.strip_prefix("```") else {
        return text;
    };
    let Some(inner) = inner.strip_suffix("```") else {
        return text;
    };
    // Drop the info string (`json`) on the opening line.
    match inner.split_once('\n') {
        Some((_, body)) => body.trim(),
        None => inner.trim(),
    }
}

/// `name` cut to what both APIs accept as a schema or tool name.
fn tool_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if cleaned.is_empty() {
        "answer".to_owned()
    } else {
        cleaned
    }
}

/// `schema` as OpenAI's strict mode wants it: every object schema with `properties`
/// closes (`additionalProperties: false`) and requires all of them, recursively
/// (through `properties`, `items`, `anyOf`, `oneOf`, `allOf`, `definitions`, `$defs`).
/// Properties that were optional stay optional in meaning only when their schema allows
/// `null` (as schemars writes an `Option`).
fn strict(schema: &Value) -> Value {
    let mut schema = schema.clone();
    make_strict(&mut schema);
    schema
}

fn make_strict(schema: &mut Value) {
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        for property in properties.values_mut() {
            make_strict(property);
        }
        // The required ones first, in their order, then the others.
        let names: Vec<String> = properties.keys().cloned().collect();
        let mut required: Vec<Value> = match map.get("required") {
            Some(Value::Array(list)) => list.clone(),
            _ => Vec::new(),
        };
        for name in names {
            if !required.iter().any(|r| r.as_str() == Some(&name)) {
                required.push(Value::String(name));
            }
        }
        map.insert("required".into(), Value::Array(required));
        map.insert("additionalProperties".into(), Value::Bool(false));
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(inner) = map.get_mut(key) {
            make_strict(inner);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(list)) = map.get_mut(key) {
            list.iter_mut().for_each(make_strict);
        }
    }
    for key in ["definitions", "$defs"] {
        if let Some(Value::Object(defs)) = map.get_mut(key) {
            defs.values_mut().for_each(make_strict);
        }
    }
    // Formats strict mode does not know (schemars writes `uint32`, `double`, ...) are
    // dropped; the type and bounds stay.
    if let Some(Value::String(format)) = map.get("format")
        && !KNOWN_FORMATS.contains(&format.as_str())
    {
        map.remove("format");
    }
}

/// The string formats OpenAI's strict mode accepts.
const KNOWN_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn non_objects_are_wrapped_and_unwrapped() {
        let output = OutputSchema::new(
            "tags",
            json!({"type": "array", "items": {"type": "string"}}),
        );
        assert!(output.is_wrapped());
        assert_eq!(output.schema()["required"], json!(["value"]));
        let reply = Message::assistant(r#"{"value": ["a", "b"]}"#);
        assert_eq!(output.extract(&reply), Ok(json!(["a", "b"])));
        let bare = Message::assistant(r#"["a"]"#);
        assert_eq!(
            output.extract(&bare),
            Err(ExtractError::NotWrapped("value"))
        );
    }

    #[test]
    fn fences_and_blanks_around_the_answer_are_allowed() {
        let output = OutputSchema::new("x", json!({"type": "object", "properties": {}}));
        let reply = Message::assistant("```json\n{\"a\": 1}\n```\n");
        assert_eq!(output.extract(&reply), Ok(json!({"a": 1})));
        assert_eq!(
            output.extract(&Message::assistant("  ")),
            Err(ExtractError::Empty)
        );
        assert!(matches!(
            output.extract(&Message::assistant("sure! {")),
            Err(ExtractError::NotJson(_))
        ));
    }

    #[test]
    fn strict_closes_nested_objects_and_drops_unknown_formats() {
        let output = OutputSchema::new(
            "a person!",
            json!({"type": "object", "properties": {
                "age": {"type": "integer", "format": "uint32", "minimum": 0},
                "born": {"type": "string", "format": "date"},
                "pets": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}}
            }}),
        );
        assert_eq!(output.name(), "a_person_");
        let schema = output.schema();
        assert_eq!(
            schema["properties"]["age"],
            json!({"type": "integer", "minimum": 0})
        );
        assert_eq!(schema["properties"]["born"]["format"], "date");
        let pet = &schema["properties"]["pets"]["items"];
        assert_eq!(pet["additionalProperties"], json!(false));
        assert_eq!(pet["required"], json!(["name"]));
        let loose = output.strict(false);
        assert_eq!(loose.schema()["properties"]["age"]["format"], "uint32");
        assert!(loose.schema().get("required").is_none());
    }

    #[test]
    fn the_answer_tool_becomes_the_text_unless_other_tools_were_called() {
        let output = OutputSchema::new("answer", json!({"type": "object", "properties": {}}));
        let call = |name: &str| crate::ToolCall::new("id", name, json!({"a": 1}));
        let mut alone = Message::tool_calls("", vec![call("answer")]);
        output.settle(&mut alone);
        assert_eq!(
            (alone.content.as_str(), alone.tool_calls.len()),
            (r#"{"a":1}"#, 0)
        );
        let mut mixed = Message::tool_calls("", vec![call("shell"), call("answer")]);
        output.settle(&mut mixed);
        assert_eq!((mixed.content.as_str(), mixed.tool_calls.len()), ("", 1));
        assert_eq!(mixed.tool_calls[0].name, "shell");
    }
}
