//! The built-in tools.

mod delegate;
#[cfg(feature = "fetch")]
mod fetch;
mod fs;
mod image;
mod question;
#[cfg(feature = "search")]
mod search;
mod shell;
mod todo;

pub use delegate::{Delegate, DelegateArgs};
#[cfg(feature = "fetch")]
pub use fetch::{Fetch, FetchArgs};
pub use fs::{
    Patch, PatchArgs, Read, ReadArgs, Remove, RemoveArgs, Undo, UndoArgs, Write, WriteArgs,
};
pub use question::{Answers, Question, QuestionHandler, QuestionItem, QuestionOption, Questions};
#[cfg(feature = "search")]
pub use search::{FsSearch, FsSearchArgs};
pub use shell::{Shell, ShellArgs};
pub use todo::{TodoItem, TodoReadArgs, TodoStatus, TodoWriteArgs, Todos};

/// The built-in tool sets.
///
/// `question` and `delegate` are configured on the tools: [`Tools::ALL`] holds them
/// unconfigured (they report that no one can be asked, or that there is no model), and
/// [`Tools::all_with`] takes them configured.
///
/// ```
/// use brute::tools::{Tools, ToolSet};
///
/// let all = Tools::ALL;
/// let mut names = Vec::new();
/// all.names(&mut names);
/// assert!(names.contains(&"read") && names.contains(&"shell") && names.contains(&"delegate"));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Tools;

/// The type of [`Tools::ALL`]. The tools of a feature that is off are an empty set in
/// their place, so the type has one shape under every feature set.
pub type AllTools = (
    Read,
    Write,
    Patch,
    Remove,
    SearchTools,
    Undo,
    Shell,
    FetchTools,
    Todos,
    Question,
    Delegate,
);

/// The type of [`Tools::READ_ONLY`].
pub type ReadOnlyTools = (Read, SearchTools);

/// `fs_search` with the `search` feature, nothing without it.
#[cfg(feature = "search")]
type SearchTools = (FsSearch,);
#[cfg(not(feature = "search"))]
type SearchTools = ();
#[cfg(feature = "search")]
const SEARCH: SearchTools = (FsSearch,);
#[cfg(not(feature = "search"))]
const SEARCH: SearchTools = ();

/// `fetch` with the `fetch` feature, nothing without it.
#[cfg(feature = "fetch")]
type FetchTools = (Fetch,);
#[cfg(not(feature = "fetch"))]
type FetchTools = ();
#[cfg(feature = "fetch")]
const FETCH: FetchTools = (Fetch,);
#[cfg(not(feature = "fetch"))]
const FETCH: FetchTools = ();

impl Tools {
    /// Every built-in tool: `read`, `write`, `patch`, `remove`, `fs_search` (with the
    /// `search` feature), `undo`, `shell`, `fetch` (with the `fetch` feature),
    /// `todo_read` and `todo_write` ([`Todos`]), `question` (without a handler) and
    /// `delegate` (without a model).
    /// Each use of the constant is a new set, with its own empty todo list.
    #[allow(clippy::declare_interior_mutable_const)]
    pub const ALL: AllTools = Tools::all_with(Question::NONE, Delegate::NONE);

    /// Every built-in tool, with `question` and `delegate` as given.
    ///
    /// ```
    /// use brute::tools::{Delegate, Question, QuestionHandler, Tools};
    ///
    /// let handler = QuestionHandler::new(|_| async { Ok(vec![vec!["yes".to_string()]]) });
    /// let tools = Tools::all_with(Question::new(handler), Delegate::NONE);
    /// # let _ = tools;
    /// ```
    pub const fn all_with(question: Question, delegate: Delegate) -> AllTools {
        (
            Read,
            Write,
            Patch,
            Remove,
            SEARCH,
            Undo,
            Shell,
            FETCH,
            Todos::new(),
            question,
            delegate,
        )
    }

    /// The tools that change nothing: `read` and `fs_search` (with the `search`
    /// feature; what `delegate`'s sub-agents get).
    pub const READ_ONLY: ReadOnlyTools = (Read, SEARCH);
}
