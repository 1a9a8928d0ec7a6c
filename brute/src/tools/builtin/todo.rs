//! `todo_read` / `todo_write`: the agent's task list, kept by the tool set itself.

use std::sync::{Mutex, PoisonError};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::message::ToolCall;
use crate::tool::ToolSpec;
use crate::tools::set::{PreparedCall, parse_args};
use crate::tools::truncate::Truncation;
use crate::tools::{ToolContext, ToolError, ToolOutput, ToolSet, schema_for};

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

/// Arguments of `todo_read` (none).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TodoReadArgs {}

/// The todo list and its two tools, `todo_read` and `todo_write`: a tool set that
/// keeps the list it serves (one list per set, so per pipeline).
///
/// ```
/// use brute::tools::{ToolSet, Todos};
///
/// let todos = Todos::new();
/// assert!(todos.contains("todo_read") && todos.contains("todo_write"));
/// assert!(todos.items().is_empty());
/// ```
#[derive(Debug, Default)]
pub struct Todos {
    list: Mutex<Vec<TodoItem>>,
}

impl Todos {
    /// An empty list.
    pub const fn new() -> Self {
        Todos {
            list: Mutex::new(Vec::new()),
        }
    }

    /// The items, as the model last wrote them.
    pub fn items(&self) -> Vec<TodoItem> {
        self.list
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

const READ: (&str, &str) = ("todo_read", "Read your todo list.");
const WRITE: (&str, &str) = (
    "todo_write",
    "Replace your todo list (id, content, status: pending | in_progress | completed | cancelled).",
);

/// A checked call of `todo_read` or `todo_write`.
#[derive(Debug)]
pub enum TodoCall<'s> {
    /// `todo_read`.
    Read(&'s Todos),
    /// `todo_write` with the new list.
    Write(&'s Todos, Vec<TodoItem>),
}

impl PreparedCall for TodoCall<'_> {
    fn mutates(&self) -> Option<&str> {
        None
    }

    fn snapshots(&self) -> bool {
        false
    }

    fn truncation(&self) -> Truncation {
        Truncation::Head
    }

    async fn run(self, _cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        match self {
            TodoCall::Read(todos) => Ok(serde_json::json!({ "todos": todos.items() }).into()),
            TodoCall::Write(todos, items) => {
                let count = items.len();
                *todos.list.lock().unwrap_or_else(PoisonError::into_inner) = items;
                Ok(serde_json::json!({ "success": true, "count": count }).into())
            }
        }
    }
}

impl ToolSet for Todos {
    type Call<'s> = TodoCall<'s>;

    fn specs(&self, out: &mut Vec<ToolSpec>) {
        out.push(ToolSpec::new(READ.0, READ.1, schema_for::<TodoReadArgs>()));
        out.push(ToolSpec::new(
            WRITE.0,
            WRITE.1,
            schema_for::<TodoWriteArgs>(),
        ));
    }

    fn contains(&self, name: &str) -> bool {
        name == READ.0 || name == WRITE.0
    }

    fn names<'a>(&'a self, out: &mut Vec<&'a str>) {
        out.extend([READ.0, WRITE.0]);
    }

    fn prepare<'s>(&'s self, call: &ToolCall) -> Option<Result<TodoCall<'s>, ToolError>> {
        if call.name == READ.0 {
            Some(parse_args::<TodoReadArgs>(&call.arguments).map(|_| TodoCall::Read(self)))
        } else if call.name == WRITE.0 {
            Some(
                parse_args::<TodoWriteArgs>(&call.arguments)
                    .map(|args| TodoCall::Write(self, args.todos)),
            )
        } else {
            None
        }
    }
}
