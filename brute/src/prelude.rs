//! What an agent file needs: the macros, the core types and the built-in layers a
//! `brute_agent!` block names.
//!
//! ```
//! use brute::prelude::*;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let agent = brute_agent! {
//!     use SystemPrompt { prompt: "You are terse." };
//!     use Loop::While { condition: |env| env.iteration < 2 };
//!     use MaxIterations { max: 25 };
//!     run ScriptedModel::new([Message::assistant("one"), Message::assistant("two")]);
//! };
//! assert_eq!(agent.start("Hello").await?.text(), Some("two"));
//! # Ok::<(), brute::Error>(()) }).unwrap();
//! ```

pub use crate::compaction::{DefaultCompactionPipeline, Trigger};
pub use crate::middleware::{
    LimitMode, Loop, MaxIterations, Prompt, Retry, SessionLog, SystemPrompt,
};
pub use crate::providers::ScriptedModel;
#[cfg(feature = "tools")]
pub use crate::tool;
#[cfg(feature = "tools")]
pub use crate::tools::{DefaultToolPipeline, Tool, Tools};
pub use crate::{
    Agent, Completion, Env, Error, Event, EventKind, Handler, Message, Middleware, Model, Outcome,
    Role, StopReason, ToolCall, brute_agent, pipeline,
};
