//! The [`Tool`] trait, what a tool returns, and the JSON Schema of its arguments.

use std::future::Future;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::context::ToolContext;
use super::error::ToolError;
use super::truncate::Truncation;
use crate::message::Part;

/// What a tool returns to the model: text (JSON values are written compactly), and
/// images and documents beside it.
///
/// A plain `String`, `&str` or `serde_json::Value` converts into an output with text
/// only, so most tools never name this type. A tool that shows the model a picture or a
/// PDF adds [`Part`]s; the tool result message carries them
/// ([`Message::parts`](crate::Message::parts)), sessions keep them, and each provider
/// sends them in the form its API takes (see [`brute::providers`](crate::providers)).
///
/// ```
/// use brute::message::Part;
/// use brute::tools::ToolOutput;
///
/// let png = [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];
/// let output = ToolOutput::text("The chart of last week's sales.")
///     .with_part(Part::image("image/png", &png)?);
/// assert_eq!(output.parts.len(), 1);
/// assert_eq!(ToolOutput::from("plain"), ToolOutput::text("plain"));
/// # Ok::<(), brute::message::PartError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ToolOutput {
    /// The text the model sees.
    pub content: String,
    /// Images and documents the model sees beside the text, in order.
    pub parts: Vec<Part>,
}

impl ToolOutput {
    /// An output with the given text.
    pub fn text(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            parts: Vec::new(),
        }
    }

    /// The same output with `part` added after its other parts.
    pub fn with_part(mut self, part: Part) -> Self {
        self.parts.push(part);
        self
    }
}

impl From<String> for ToolOutput {
    fn from(content: String) -> Self {
        ToolOutput::text(content)
    }
}

impl From<&str> for ToolOutput {
    fn from(content: &str) -> Self {
        ToolOutput::text(content)
    }
}

impl From<Value> for ToolOutput {
    fn from(value: Value) -> Self {
        match value {
            Value::String(s) => ToolOutput::text(s),
            other => ToolOutput::text(other.to_string()),
        }
    }
}

/// A tool the model can call.
///
/// Most tools are written with [`#[tool]`](crate::tool) on an async fn; implement the
/// trait by hand when a tool holds configuration or mutates files (then
/// [`Tool::mutates`] names the file so that calls on it are serialised and
/// snapshotted for `undo`).
///
/// ```
/// use brute::tools::{Tool, ToolContext, ToolError, ToolOutput};
/// use brute::structured::{schemars, serde};
///
/// /// Arguments of `greet`.
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// #[serde(crate = "brute::structured::serde")]
/// #[schemars(crate = "brute::structured::schemars")]
/// pub struct GreetArgs {
///     /// Whom to greet.
///     pub name: String,
/// }
///
/// /// Greets someone, with a configurable greeting.
/// pub struct Greet {
///     pub greeting: String,
/// }
///
/// impl Tool for Greet {
///     type Args = GreetArgs;
///     fn name(&self) -> &str { "greet" }
///     fn description(&self) -> &str { "Greets someone by name." }
///     async fn call(&self, args: GreetArgs, _cx: &ToolContext) -> Result<ToolOutput, ToolError> {
///         Ok(format!("{}, {}!", self.greeting, args.name).into())
///     }
/// }
/// ```
pub trait Tool: Send + Sync + 'static {
    /// The arguments, deserialised from the model's JSON; their JSON Schema is what
    /// the model is shown.
    type Args: DeserializeOwned + JsonSchema + Send + 'static;

    /// The name the model calls the tool by.
    fn name(&self) -> &str;

    /// What the tool does, for the model.
    fn description(&self) -> &str;

    /// Runs the tool.
    fn call(
        &self,
        args: Self::Args,
        cx: &ToolContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send;

    /// The file (relative to the root, as the model wrote it) that this call changes.
    /// Calls changing the same file run one after the other, and the file's prior
    /// state is recorded for `undo` when [`Tool::snapshots`] is true.
    fn mutates<'a>(&self, _args: &'a Self::Args) -> Option<&'a str> {
        None
    }

    /// Whether the prior state of [`Tool::mutates`]'s file is recorded for `undo`.
    fn snapshots(&self) -> bool {
        true
    }

    /// Which end of a long output is kept.
    fn truncation(&self) -> Truncation {
        Truncation::Head
    }

    /// The JSON Schema of the arguments. Computed once, when a pipeline is built.
    fn parameters(&self) -> Value {
        schema_for::<Self::Args>()
    }
}

/// What `#[tool(schema = expr)]` takes: a JSON Schema as a `serde_json::Value`.
///
/// Implemented for `Value` only; it exists so that a schema of another type (a string
/// holding JSON, a struct) is an error at the `schema = ..` key that says what to write.
#[diagnostic::on_unimplemented(
    message = "`#[tool(schema = ..)]` takes a JSON Schema as a `serde_json::Value`, not `{Self}`",
    label = "not a `serde_json::Value`",
    note = "write the schema with `serde_json::json!({{ \"type\": \"object\", .. }})` or call a fn returning a `serde_json::Value`"
)]
pub trait ExactSchema {
    /// The schema.
    fn into_schema(self) -> Value;
}

// Not listed in a wrong schema's error: its path there is that of a re-export deep in
// schemars, not `serde_json::Value`, which the note names.
#[diagnostic::do_not_recommend]
impl ExactSchema for Value {
    fn into_schema(self) -> Value {
        self
    }
}

/// The JSON Schema of `T` as tools advertise it: draft-07 with subschemas inlined, and
/// without the `$schema` and `title` keys that model APIs do not want.
pub fn schema_for<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft07()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut value: Value = generator.into_root_schema_for::<T>().into();
    if let Some(map) = value.as_object_mut() {
        map.remove("title");
        map.remove("$schema");
        if !map.contains_key("properties") && map.get("type") == Some(&Value::from("object")) {
            map.insert("properties".into(), Value::Object(Default::default()));
        }
    }
    value
}
