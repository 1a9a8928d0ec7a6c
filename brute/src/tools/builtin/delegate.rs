//! `delegate`: a read-only research sub-agent, on a model configured on the tool.

use std::fmt;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tools;
use crate::env::Env;
use crate::error::Error;
use crate::message::Role;
use crate::model::{Completion, Model};
use crate::tools::{BoxFuture, DefaultToolPipeline, Tool, ToolContext, ToolError, ToolOutput};

/// The sub-agent's system prompt.
const PROMPT: &str = "You are a research agent working for another agent. You have read-only tools \
(read, fs_search): investigate the task, then answer with a concise, complete report of what you \
found. You cannot change anything.";

/// Arguments of `delegate`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DelegateArgs {
    /// The research task, stated completely: the sub-agent sees nothing else.
    pub task: String,
}

/// `delegate`: hands a research task to a sub-agent with read-only tools (`read`,
/// `fs_search`) in the same root and its own iteration limit, and returns its final
/// answer.
///
/// The sub-agent's model is configured on the tool: `Delegate::new(model)`. Without
/// one ([`Delegate::NONE`], what [`Tools::ALL`] holds) the call fails with an error
/// result saying so.
///
/// ```
/// use brute::{Message, providers::ScriptedModel};
/// use brute::tools::{Delegate, Question, Tools};
///
/// let delegate = Delegate::new(ScriptedModel::new([Message::assistant("found it")]))
///     .max_iterations(5);
/// let tools = Tools::all_with(Question::NONE, delegate);
/// # let _ = tools;
/// ```
#[derive(Clone, Debug)]
pub struct Delegate {
    model: Option<SharedModel>,
    max_iterations: u32,
}

impl Delegate {
    /// `delegate` without a model: every call reports that there is none.
    pub const NONE: Delegate = Delegate {
        model: None,
        max_iterations: 10,
    };

    /// Sub-agents run on `model` (at most 10 passes unless changed).
    pub fn new(model: impl Model + 'static) -> Self {
        Delegate {
            model: Some(SharedModel(Arc::new(model))),
            max_iterations: 10,
        }
    }

    /// Sets the sub-agent's limit of passes.
    pub fn max_iterations(mut self, max: u32) -> Self {
        self.max_iterations = max;
        self
    }
}

impl Default for Delegate {
    fn default() -> Self {
        Delegate::NONE
    }
}

impl Tool for Delegate {
    type Args = DelegateArgs;

    fn name(&self) -> &str {
        "delegate"
    }

    fn description(&self) -> &str {
        "Give a research task to a read-only sub-agent (read, fs_search) and get its report."
    }

    async fn call(&self, args: DelegateArgs, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Some(model) = self.model.clone() else {
            return Err(ToolError::failed(
                "no model for sub-agents: put `Delegate::new(model)` in the tool set",
            ));
        };
        let max = self.max_iterations;
        let root = cx.sandbox().root().to_path_buf();
        let output_dir = cx.output_dir().map(std::path::Path::to_path_buf);
        let secrets = cx.secrets().clone();
        let agent = crate::brute_agent! {
            use crate::middleware::SystemPrompt { prompt: PROMPT };
            use crate::middleware::Loop::ToolResult;
            use crate::middleware::MaxIterations { max: max };
            use DefaultToolPipeline {
                tools: Tools::READ_ONLY,
                root: root,
                output_dir: output_dir,
                output_retention: None,
                env_secrets: false,
                secrets: secrets,
            };
            run model;
        };
        // Boxed: the sub-agent's future is a whole stack of its own, and nesting its
        // layout inside the caller's would exceed rustc's recursion limit.
        let turn: BoxFuture<'_, Result<crate::Outcome, crate::Error>> =
            Box::pin(agent.start(args.task));
        let outcome = turn
            .await
            .map_err(|e| ToolError::failed(format!("the sub-agent failed: {e}")))?;
        let text = outcome
            .env
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant && !m.content.trim().is_empty())
            .map(|m| m.content.clone())
            .unwrap_or_else(|| "(sub-agent completed but produced no text response)".to_string());
        Ok(text.into())
    }
}

/// A model behind a pointer, for the sub-agents of `delegate`.
trait DynModel: Send + Sync {
    fn complete_boxed<'a>(&'a self, env: &'a Env) -> BoxFuture<'a, Result<Completion, Error>>;
    fn model_name(&self) -> &str;
    fn model_secrets(&self) -> Vec<&str>;
}

impl<M: Model + 'static> DynModel for M {
    fn complete_boxed<'a>(&'a self, env: &'a Env) -> BoxFuture<'a, Result<Completion, Error>> {
        Box::pin(self.complete(env))
    }

    fn model_name(&self) -> &str {
        self.name()
    }

    fn model_secrets(&self) -> Vec<&str> {
        self.secrets()
    }
}

/// A shared, type-erased model: what `delegate` runs its sub-agent on.
#[derive(Clone)]
struct SharedModel(Arc<dyn DynModel>);

#[diagnostic::do_not_recommend]
impl Model for SharedModel {
    async fn complete(&self, env: &Env) -> Result<Completion, Error> {
        self.0.complete_boxed(env).await
    }

    fn name(&self) -> &str {
        self.0.model_name()
    }

    fn secrets(&self) -> Vec<&str> {
        self.0.model_secrets()
    }
}

impl fmt::Debug for SharedModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SharedModel")
            .field(&self.0.model_name())
            .finish()
    }
}
