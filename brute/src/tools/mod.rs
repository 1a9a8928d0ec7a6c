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
//! - [`Tools::ALL`] are the built-in tools, confined to a root directory. A tool's
//!   own configuration lives on the tool: [`Question::new`] takes the question
//!   handler, [`Delegate::new`] the sub-agent's model, and [`Todos`] keeps its list.
//!
//! Where each concern lives (one job per file):
//!
//! | file | what |
//! |---|---|
//! | `tool.rs` | the [`Tool`] trait, [`ToolOutput`], [`schema_for`] |
//! | `set.rs` | [`ToolSet`] (tuples, [`tools!`](crate::tools!), [`Registry`]) and [`PreparedCall`]: a call looked up once, bound to its tool |
//! | `client.rs` | [`ClientTools`]: tools the caller runs, which pause the turn instead |
//! | `context.rs` | [`ToolContext`]: what every tool shares, composed of the five below |
//! | `sandbox.rs` | confinement: [`Sandbox`], [`RootDir`] |
//! | `undo.rs` | the undo history: [`SnapshotStore`] |
//! | `locks.rs` | per-file locks |
//! | `network.rs` | [`NetworkPolicy`] and the special-purpose address table |
//! | `secrets.rs` | [`Secrets`], [`Redactions`] |
//! | `truncate.rs` | cutting long outputs, [`OutputDir`] |
//! | `error.rs` | [`ToolError`], [`PathError`], bounded quoting of arguments |
//! | `pipeline/` | [`DefaultToolPipeline`]; `stages.rs`: the per-call env and stages; `approval.rs`: [`Approval`], [`Timeouts`] |
//! | `builtin/` | the built-in tools |
//! | `skills/` | Agent Skills: [`SkillLibrary`], the [`Skills`] layer, the `skill` tool ([`LoadSkill`]) |
//!
//! ```
//! use brute::tools::{ToolContext, ToolError};
//! use brute::{Message, ToolCall, brute_agent, middleware::Loop, providers::ScriptedModel, tool};
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
//!     use brute::tools::DefaultToolPipeline { tools: (Add,) };
//!     run model;
//! };
//! let outcome = agent.start("2 + 3?").await?;
//! assert_eq!(outcome.env.messages[2].content, "5");
//! # Ok::<(), brute::Error>(()) }).unwrap();
//! ```

mod builtin;
mod client;
mod context;
mod error;
mod locks;
mod network;
mod pipeline;
mod sandbox;
mod secrets;
mod set;
mod skills;
mod tool;
mod truncate;
mod undo;

pub use builtin::{
    AllTools, Answers, Delegate, DelegateArgs, Patch, PatchArgs, Question, QuestionHandler,
    QuestionItem, QuestionOption, Questions, Read, ReadArgs, ReadOnlyTools, Remove, RemoveArgs,
    Shell, ShellArgs, TodoItem, TodoReadArgs, TodoStatus, TodoWriteArgs, Todos, Tools, Undo,
    UndoArgs, Write, WriteArgs,
};
#[cfg(feature = "fetch")]
pub use builtin::{Fetch, FetchArgs};
#[cfg(feature = "search")]
pub use builtin::{FsSearch, FsSearchArgs};
pub use client::{ClientToolClash, ClientTools};
pub use context::ToolContext;
pub use error::{PathError, ToolError, quoted};
pub use network::NetworkPolicy;
pub(crate) use pipeline::resume;
pub use pipeline::{
    AllowAll, Approval, ApprovalPolicy, Decision, DefaultToolPipeline, Execute, Snapshot,
    StandardCallPipeline, Timeouts, ToolAttempts, ToolCallEnv, ToolRetry, ToolSnapshot,
    ToolValidation, Validate, standard_call_pipeline,
};
pub use sandbox::{RootDir, Sandbox};
pub use secrets::{Redactions, Secrets};
pub(crate) use set::BoxFuture;
pub use set::{DynTool, PreparedCall, Registry, ToolSet};
pub use skills::{LoadSkill, LoadSkillArgs, Skill, SkillError, SkillLibrary, Skills};
pub use tool::{ExactSchema, Tool, ToolOutput, schema_for};
pub use truncate::{OutputDir, Truncation};
pub use undo::SnapshotStore;
