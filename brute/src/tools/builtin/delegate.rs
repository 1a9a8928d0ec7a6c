//! `delegate`: a read-only research sub-agent.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tools;
use crate::message::Role;
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
/// answer. The sub-agent runs on the context's
/// [`DelegateModel`](crate::tools::DelegateModel); without one, the call fails with an
/// error result saying so.
#[derive(Clone, Copy, Debug, Default)]
pub struct Delegate;

impl Tool for Delegate {
    type Args = DelegateArgs;

    fn name(&self) -> &str {
        "delegate"
    }

    fn description(&self) -> &str {
        "Give a research task to a read-only sub-agent (read, fs_search) and get its report."
    }

    async fn call(&self, args: DelegateArgs, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Some(model) = cx.delegate().model.clone() else {
            return Err(ToolError::failed(
                "no model for sub-agents: set `delegate: DelegateModel::new(model)` on DefaultToolPipeline",
            ));
        };
        let max = cx.delegate().max_iterations;
        let root = cx.sandbox().root().to_path_buf();
        let output_dir = cx.output_dir().to_path_buf();
        let agent = crate::brute_agent! {
            use crate::SystemPrompt { prompt: PROMPT };
            use crate::Loop::ToolResult;
            use crate::MaxIterations { max: max };
            use DefaultToolPipeline { tools: Tools::READ_ONLY, root: root, output_dir: output_dir };
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
