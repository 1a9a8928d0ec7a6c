//! What an agent file needs, at most 20 names: the macros, the env and message a
//! stack works on, the model trait, and the built-in layers a `brute_agent!` block
//! names.
//!
//! Names that a user's own code is likely to have (`Event`, `Role`, `Prompt`, `Tool`,
//! `Trigger`, `Error`, ..) stay out: reach them at their one path (`brute::Event`,
//! `brute::tools::Tool`, ..), so that `use brute::prelude::*;` never shadows a type
//! of yours.
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

pub use crate::compaction::DefaultCompactionPipeline;
pub use crate::middleware::SessionLog;
pub use crate::middleware::{Loop, MaxIterations, SystemPrompt};
pub use crate::providers::ScriptedModel;
#[cfg(feature = "tools")]
pub use crate::tool;
#[cfg(feature = "tools")]
pub use crate::tools::{DefaultToolPipeline, ToolContext, ToolError, Tools};
pub use crate::{Agent, Env, Handler, Message, Middleware, Model, ToolCall, brute_agent};
