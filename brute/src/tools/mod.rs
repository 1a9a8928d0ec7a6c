//! Tools: typed functions the model can call, the sets that hold them, and the
//! middleware that advertises and runs them.
//!
//! - A [`Tool`] has a name, a description, typed arguments (`Deserialize` +
//!   `JsonSchema`) and an async `call`. Write one with [`#[tool]`](crate::tool) on an
//!   async fn, or implement the trait by hand.
//! - A [`ToolSet`] is a static collection: a tool, a tuple of sets, or [`tools!`](crate::tools!).
//!   Dispatch by name is a chain of string comparisons, no `dyn`. A [`Registry`] holds
//!   tools only known at run time.
//! - [`DefaultToolPipeline`] advertises a set's schemas on the way in and, on the way
//!   out, runs every tool call of the model's last message through the per-call
//!   pipeline ([`Validate`] → [`Snapshot`] → [`Execute`], built with
//!   [`pipeline!`](crate::pipeline!) and replaceable through the `pipeline` option),
//!   concurrently and in call order, turning every failure into a tool result the
//!   model sees.
//! - [`Tools::ALL`] are the built-in tools, confined to a root directory.
//!
//! ```
//! use brute::tools::{ToolContext, ToolError};
//! use brute::{brute_agent, tool, Loop, Message, ScriptedModel, ToolCall};
//!
//! /// Adds two numbers.
//! #[tool]
//! async fn add(
//!     /// The first number.
//!     a: i64,
//!     /// The second number.
//!     b: i64,
//! ) -> Result<String, ToolError> {
//!     Ok((a + b).to_string())
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let model = ScriptedModel::per_turn([
//!     Message::tool_calls("", vec![ToolCall::new("c1", "add", serde_json::json!({"a": 2, "b": 3}))]),
//!     Message::assistant("done"),
//! ]);
//! let agent = brute_agent! {
//!     use Loop::ToolResult;
//!     use brute::DefaultToolPipeline { tools: (Add,) };
//!     run model;
//! };
//! let outcome = agent.start("2 + 3?").await?;
//! assert_eq!(outcome.env.messages[2].content, "5");
//! # Ok::<(), brute::Error>(()) }).unwrap();
//! ```

mod builtin;
mod context;
mod error;
mod locks;
mod network;
mod pipeline;
mod sandbox;
mod secrets;
mod set;
mod truncate;
mod undo;

use std::future::Future;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use builtin::{
    AllTools, Answers, Delegate, DelegateArgs, FsSearch, FsSearchArgs, Patch, PatchArgs, Question,
    QuestionHandler, QuestionItem, QuestionOption, Questions, Read, ReadArgs, ReadOnlyTools,
    Remove, RemoveArgs, SharedModel, Shell, ShellArgs, TodoCall, TodoItem, TodoReadArgs,
    TodoStatus, TodoWriteArgs, Todos, Tools, Undo, UndoArgs, Write, WriteArgs,
};
#[cfg(feature = "fetch")]
pub use builtin::{Fetch, FetchArgs};
pub use context::ToolContext;
pub use error::{MAX_QUOTE, PathError, ToolError, quoted};
pub use network::NetworkPolicy;
pub use pipeline::{
    Approval, Decision, DefaultToolPipeline, DefaultToolPipelineOptions, Execute, Snapshot,
    SnapshotOptions, StandardCallPipeline, Timeouts, ToolCallEnv, ToolSnapshot, ToolValidation,
    Validate, ValidateOptions, standard_call_pipeline,
};
pub use sandbox::{RootDir, Sandbox};
pub use secrets::{Redactions, Secrets};
pub use set::{
    Bound, BoxFuture, DynCall, DynTool, NoCall, PreparedCall, Registry, ToolSet, calls, prepare,
};
pub use truncate::{MAX_BYTES, MAX_LINE_LENGTH, MAX_LINES, OutputDir, Truncation, truncate};
pub use undo::SnapshotStore;
/// The crates tool arguments derive from, re-exported so that a hand-written tool needs
/// no dependency of its own: `#[derive(serde::Deserialize, schemars::JsonSchema)]` with
/// `#[serde(crate = "brute::tools::serde")]` and `#[schemars(crate = "brute::tools::schemars")]`.
pub use {schemars, serde};

/// What a tool returns to the model: text (JSON values are written compactly).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ToolOutput {
    /// The text the model sees.
    pub content: String,
}

impl ToolOutput {
    /// An output with the given text.
    pub fn text(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
        }
    }
}

impl From<String> for ToolOutput {
    fn from(content: String) -> Self {
        ToolOutput { content }
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
            Value::String(s) => ToolOutput { content: s },
            other => ToolOutput {
                content: other.to_string(),
            },
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
/// use brute::tools::{schemars, serde};
///
/// /// Arguments of `greet`.
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// #[serde(crate = "brute::tools::serde")]
/// #[schemars(crate = "brute::tools::schemars")]
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
