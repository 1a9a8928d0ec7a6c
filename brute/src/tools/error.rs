//! Errors of tool calls: what the model sees when a call fails.

use std::path::PathBuf;
use std::time::Duration;

/// Why a tool call failed. The pipeline turns each into a tool result
/// `"Error: tool `name`: .."`, so the model learns what went wrong and the turn goes on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The model called a tool that is not in the set.
    #[error("unknown tool `{name}`; available tools: {available}")]
    UnknownTool {
        /// The name the model used.
        name: String,
        /// The names it could have used, comma-separated.
        available: String,
    },
    /// The arguments were a string that is not JSON.
    #[error("the arguments are not valid JSON: {0}")]
    InvalidJson(String),
    /// The arguments do not match the tool's schema.
    #[error("invalid arguments: {problem}")]
    InvalidArguments {
        /// The argument at fault (`.` for the arguments object itself).
        field: String,
        /// What was wrong and what was expected, naming the field.
        problem: String,
    },
    /// The approval policy refused the call.
    #[error("the call was denied: {0}")]
    Denied(String),
    /// The call took longer than its timeout and was cancelled.
    #[error("timed out after {:.1}s and was cancelled", .0.as_secs_f64())]
    Timeout(Duration),
    /// The tool panicked.
    #[error("panicked: {0}")]
    Panicked(String),
    /// A path argument was refused or could not be resolved.
    #[error(transparent)]
    Path(#[from] PathError),
    /// Reading or writing a file failed.
    #[error("{action} `{path}`: {source}")]
    Io {
        /// What was attempted ("cannot read", "cannot write", ..).
        action: &'static str,
        /// The path, relative to the root.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The tool ran and reports a failure.
    #[error("{0}")]
    Failed(String),
    /// The tool ran and reports a failure that may pass if the call is made again (a
    /// service that was busy, a dropped connection): a
    /// [`ToolRetry`](super::ToolRetry) stage retries it; without one it reads like
    /// [`Failed`](ToolError::Failed).
    #[error("{0}")]
    Retryable(String),
}

impl ToolError {
    /// A failure with the given message.
    pub fn failed(message: impl Into<String>) -> Self {
        ToolError::Failed(message.into())
    }

    /// A failure that may pass if the call is made again: a
    /// [`ToolRetry`](super::ToolRetry) stage of the per-call pipeline retries it.
    /// Other errors are never retried.
    ///
    /// ```
    /// use brute::tools::ToolError;
    ///
    /// assert!(ToolError::retryable("the service is busy").is_retryable());
    /// assert!(!ToolError::failed("no such user").is_retryable());
    /// ```
    pub fn retryable(message: impl Into<String>) -> Self {
        ToolError::Retryable(message.into())
    }

    /// Whether the tool marked this failure retryable ([`ToolError::retryable`]).
    pub fn is_retryable(&self) -> bool {
        matches!(self, ToolError::Retryable(_))
    }

    /// A failed file operation on `path` (quoted up to [`MAX_QUOTE`] characters, see
    /// [`quoted`]).
    pub(crate) fn io(action: &'static str, path: &str, source: std::io::Error) -> Self {
        ToolError::Io {
            action,
            path: quoted(path),
            source,
        }
    }
}

/// A tool's own failure message: what a `#[tool]` fn returning `Result<_, String>`
/// gives back. The message goes to the model as it is (results are truncated by the
/// pipeline like every other result).
impl From<String> for ToolError {
    fn from(message: String) -> Self {
        ToolError::Failed(message)
    }
}

/// A tool's own failure message, for `Result<_, &str>`.
impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        ToolError::Failed(message.to_string())
    }
}

/// Characters of an argument quoted in an error message at most: a model that sends a
/// 10 MB path gets an error of a few hundred bytes, not 10 MB.
const MAX_QUOTE: usize = 200;

/// `raw` as an error message quotes it: whole when it is at most 200 characters,
/// otherwise its start and its end (where a file name or serde's "expected .." is)
/// around how long it was, so that a model that sends a 10 MB argument gets an error
/// of a few hundred bytes. For the messages of tools of your own that quote what the
/// model sent (a name, a path, a URI).
///
/// ```
/// let long = "x".repeat(10_000_000) + ", expected usize";
/// let quoted = brute::tools::quoted(&long);
/// assert!(quoted.len() < 300, "{}", quoted.len());
/// assert!(quoted.contains("(10000016 bytes in all)") && quoted.ends_with(", expected usize"));
/// assert_eq!(brute::tools::quoted("src/main.rs"), "src/main.rs");
/// ```
pub fn quoted(raw: &str) -> String {
    const TAIL: usize = MAX_QUOTE / 4;
    if raw.char_indices().nth(MAX_QUOTE).is_none() {
        return raw.to_string();
    }
    let head_end = raw
        .char_indices()
        .nth(MAX_QUOTE - TAIL)
        .map_or(raw.len(), |(i, _)| i);
    let tail_start = raw
        .char_indices()
        .rev()
        .nth(TAIL - 1)
        .map_or(0, |(i, _)| i)
        .max(head_end);
    format!(
        "{} ... ({} bytes in all) ... {}",
        &raw[..head_end],
        raw.len(),
        &raw[tail_start..]
    )
}

/// Why a path given to a filesystem tool was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    /// The path was empty.
    #[error("the path is empty")]
    Empty,
    /// The path leads outside the root (through `..` or as an absolute path).
    #[error("`{path}` is outside the root directory `{}`; paths must stay inside it", root.display())]
    Escapes {
        /// The path as given.
        path: String,
        /// The root.
        root: PathBuf,
    },
    /// The path goes through a symbolic link that points outside the root.
    #[error("`{path}` goes through a symbolic link that leads outside the root directory `{}` (to `{}`)", root.display(), target.display())]
    SymlinkEscape {
        /// The path as given.
        path: String,
        /// Where the link leads.
        target: PathBuf,
        /// The root.
        root: PathBuf,
    },
    /// The path could not be resolved.
    #[error("cannot resolve `{path}`: {source}")]
    Unresolvable {
        /// The path as given.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
}
