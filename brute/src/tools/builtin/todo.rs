//! `todo_read` / `todo_write`: the agent's task list, kept in the tool context.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};

/// Where a todo stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
    /// Dropped.
    Cancelled,
}

/// One item of the todo list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TodoItem {
    /// A short identifier.
    pub id: String,
    /// What is to be done.
    pub content: String,
    /// Where it stands.
    pub status: TodoStatus,
}

/// Arguments of `todo_write`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TodoWriteArgs {
    /// The whole new list, replacing the old one.
    pub todos: Vec<TodoItem>,
}

/// `todo_write`: replaces the todo list.
#[derive(Clone, Copy, Debug, Default)]
pub struct TodoWrite;

impl Tool for TodoWrite {
    type Args = TodoWriteArgs;

    fn name(&self) -> &str {
        "todo_write"
    }

    fn description(&self) -> &str {
        "Replace your todo list (id, content, status: pending | in_progress | completed | cancelled)."
    }

    async fn call(&self, args: TodoWriteArgs, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let count = args.todos.len();
        cx.set_todos(args.todos);
        Ok(serde_json::json!({ "success": true, "count": count }).into())
    }
}

/// Arguments of `todo_read` (none).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TodoReadArgs {}

/// `todo_read`: the todo list, as JSON.
#[derive(Clone, Copy, Debug, Default)]
pub struct TodoRead;

impl Tool for TodoRead {
    type Args = TodoReadArgs;

    fn name(&self) -> &str {
        "todo_read"
    }

    fn description(&self) -> &str {
        "Read your todo list."
    }

    async fn call(&self, _args: TodoReadArgs, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(serde_json::json!({ "todos": cx.todos() }).into())
    }
}
