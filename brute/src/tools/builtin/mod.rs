//! The built-in tools.

mod delegate;
#[cfg(feature = "fetch")]
mod fetch;
mod fs;
mod question;
mod search;
mod shell;
mod todo;

pub use delegate::{Delegate, DelegateArgs};
#[cfg(feature = "fetch")]
pub use fetch::{Fetch, FetchArgs};
pub use fs::{
    Patch, PatchArgs, Read, ReadArgs, Remove, RemoveArgs, Undo, UndoArgs, Write, WriteArgs,
};
pub use question::{Question, QuestionItem, QuestionOption, Questions};
pub use search::{FsSearch, FsSearchArgs};
pub use shell::{Shell, ShellArgs};
pub use todo::{TodoItem, TodoRead, TodoReadArgs, TodoStatus, TodoWrite, TodoWriteArgs};

/// The built-in tool sets.
///
/// ```
/// use brute::tools::{Tools, ToolSet};
///
/// let mut names = Vec::new();
/// Tools::ALL.names(&mut names);
/// assert!(names.contains(&"read") && names.contains(&"shell") && names.contains(&"delegate"));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Tools;

/// The type of [`Tools::ALL`].
#[cfg(feature = "fetch")]
pub type AllTools = (
    Read,
    Write,
    Patch,
    Remove,
    FsSearch,
    Undo,
    Shell,
    Fetch,
    TodoRead,
    TodoWrite,
    Question,
    Delegate,
);

/// The type of [`Tools::ALL`] (without `fetch`: the `fetch` feature is off).
#[cfg(not(feature = "fetch"))]
pub type AllTools = (
    Read,
    Write,
    Patch,
    Remove,
    FsSearch,
    Undo,
    Shell,
    TodoRead,
    TodoWrite,
    Question,
    Delegate,
);

/// The type of [`Tools::READ_ONLY`].
pub type ReadOnlyTools = (Read, FsSearch);

impl Tools {
    /// Every built-in tool: `read`, `write`, `patch`, `remove`, `fs_search`, `undo`,
    /// `shell`, `fetch` (with the `fetch` feature), `todo_read`, `todo_write`,
    /// `question` and `delegate`.
    #[cfg(feature = "fetch")]
    pub const ALL: AllTools = (
        Read, Write, Patch, Remove, FsSearch, Undo, Shell, Fetch, TodoRead, TodoWrite, Question,
        Delegate,
    );

    /// Every built-in tool: `read`, `write`, `patch`, `remove`, `fs_search`, `undo`,
    /// `shell`, `todo_read`, `todo_write`, `question` and `delegate` (`fetch` needs the
    /// `fetch` feature).
    #[cfg(not(feature = "fetch"))]
    pub const ALL: AllTools = (
        Read, Write, Patch, Remove, FsSearch, Undo, Shell, TodoRead, TodoWrite, Question, Delegate,
    );

    /// The tools that change nothing: `read` and `fs_search` (what `delegate`'s
    /// sub-agents get).
    pub const READ_ONLY: ReadOnlyTools = (Read, FsSearch);
}
