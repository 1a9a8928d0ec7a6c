//! `SessionError`: what went wrong with a session, in any store.

use std::io;
use std::path::{Path, PathBuf};

use crate::error::{BoxError, Error};

/// What went wrong with a session. Every variant names the session (a file for the
/// JSONL store, an id for the database stores); line errors name the line (1 for the
/// first), history errors the message (1 for the first).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// Another writer holds the session's lock.
    #[error(
        "session {} is locked: another process or turn is writing it (an OS lock on {})",
        path.display(),
        lock.display()
    )]
    Locked {
        /// The session file.
        path: PathBuf,
        /// The file holding the OS lock (the session file itself).
        lock: PathBuf,
    },
    /// Another worker holds the lease of a session in a database store.
    #[error("session {session} is leased by another worker until its lease expires")]
    Leased {
        /// The session id.
        session: String,
    },
    /// The lease of this turn expired and another worker took the session: this write
    /// and every later one of the turn were refused. The first `durable` messages the
    /// turn stored (its prompt first, then replies and tool results in order) were
    /// written before the lease was lost and stay in the history; nothing after them
    /// was stored, and a failed turn's rollback could not take them back.
    ///
    /// What a client does: with `durable == 0` nothing of the turn is stored, so send
    /// the prompt again. Otherwise do **not** send the prompt again (it would be stored
    /// twice): load the session, see where it stands (its last message), and go on
    /// from there with a new turn. A tool whose result is among the stored messages
    /// ran; one whose call was stored without a result gets
    /// [`INTERRUPTED_TOOL_CALL`](super::INTERRUPTED_TOOL_CALL) when the session is next
    /// loaded, so check its effect before running it again.
    #[error(
        "session {session}: the lease of this turn expired and another worker may hold it; {}",
        durable_text(*durable)
    )]
    LeaseLost {
        /// The session id.
        session: String,
        /// How many of the turn's messages (through this lease) are stored, counted from
        /// the first: they stay in the history.
        durable: usize,
    },
    /// A line is not valid UTF-8. The file was left untouched.
    #[error(
        "{}:{line}: not valid UTF-8 (column {column}); the session file was left untouched",
        path.display()
    )]
    NotUtf8 {
        /// The session file.
        path: PathBuf,
        /// The line, 1 for the first.
        line: usize,
        /// The byte column of the first invalid byte, 1 for the first.
        column: usize,
    },
    /// A session file, or one of its lines, is larger than the store's limit
    /// ([`JsonlStore::max_file_bytes`](super::JsonlStore::max_file_bytes),
    /// [`JsonlStore::max_line_bytes`](super::JsonlStore::max_line_bytes)). Nothing was
    /// read past the limit, and the file was left untouched.
    #[error(
        "{}{}: {size} bytes, over the limit of {limit} bytes for a session {}; the session file was left untouched",
        path.display(),
        match line { Some(line) => format!(":{line}"), None => String::new() },
        if line.is_some() { "line" } else { "file" }
    )]
    TooLarge {
        /// The session file.
        path: PathBuf,
        /// The line, 1 for the first; `None` when the whole file is over its limit.
        line: Option<usize>,
        /// Its size in bytes (for a file, at least this much).
        size: u64,
        /// The limit it is over.
        limit: u64,
    },
    /// A line is not a message. The file was left untouched.
    #[error(
        "{}:{line}: not a message: {source}{}; the session file was left untouched",
        path.display(),
        if *unterminated { " (the last line has no newline: a crash during a write leaves this, delete the line to continue)" } else { "" }
    )]
    Corrupt {
        /// The session file.
        path: PathBuf,
        /// The line, 1 for the first.
        line: usize,
        /// Whether this is the last line and has no trailing newline.
        unterminated: bool,
        /// What the JSON parser said.
        #[source]
        source: serde_json::Error,
    },
    /// The session path exists but is not a regular file (a FIFO, a directory, a
    /// device): it is never opened, so loading cannot hang on it.
    #[error("session {}: not a regular file (a {kind}); refusing to use it", path.display())]
    NotAFile {
        /// The session path.
        path: PathBuf,
        /// What it is.
        kind: &'static str,
    },
    /// The session path is a symlink to nothing (its target, or a link further on,
    /// does not exist): it is not followed, so nothing is created where it points
    /// (neither the target nor its folder). Create the target, or remove the link.
    #[error(
        "session {}: a symlink to {}, which does not exist; refusing to follow it (create the file or remove the link)",
        path.display(),
        target.display()
    )]
    DanglingLink {
        /// The session path.
        path: PathBuf,
        /// Where it leads, which does not exist.
        target: PathBuf,
    },
    /// The history breaks the tool-call rules providers enforce, and the store was
    /// told to refuse rather than repair (see [`Validation`](super::Validation)).
    #[error("session {session}: message {message}: {problem}; the session was left untouched")]
    Invalid {
        /// The session (file path or id).
        session: String,
        /// The message, 1 for the first.
        message: usize,
        /// What is wrong with it.
        problem: String,
    },
    /// A session id a store cannot use (empty, or a path for a directory store).
    #[error("session id {id:?} is not usable: {reason}")]
    BadId {
        /// The id.
        id: String,
        /// Why.
        reason: &'static str,
    },
    /// A stored message of a database store is not a message.
    #[error("session {session}: stored message {message} is not a message: {source}")]
    BadRow {
        /// The session id.
        session: String,
        /// The message, 1 for the first.
        message: usize,
        /// What the JSON parser said.
        #[source]
        source: serde_json::Error,
    },
    /// Reading, writing, locking or replacing the file failed.
    #[error("session {}: cannot {action}: {source}", path.display())]
    Io {
        /// The file or directory concerned.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// A database store failed.
    #[error("{store} session store: cannot {action}: {source}")]
    Database {
        /// Which store (`sqlite`, `postgres`).
        store: &'static str,
        /// What was being done, naming the session where there is one.
        action: String,
        /// The driver's error.
        #[source]
        source: BoxError,
    },
    /// The store's writer thread is gone (it panicked, or the store was shut down).
    #[error("{store} session store: its writer thread is gone")]
    WriterGone {
        /// Which store.
        store: &'static str,
    },
    /// A fork or a rewind was refused: the point splits a tool call from its
    /// result, is past the end, or the fork's new session exists.
    #[error(transparent)]
    Fork(crate::session::validate::history_error::ForkError),
    /// A retention step failed (an archive refused what a prune would remove).
    #[error(transparent)]
    Retention(crate::session::validate::history_error::RetentionError),
    /// The session's stored running total of tokens and money is not one (see
    /// [`SessionStore::spend`](super::SessionStore::spend)); its messages are untouched.
    #[error(
        "session {session}: its stored running total of tokens and cost is unreadable: {source}; delete it to count from zero"
    )]
    BadSpend {
        /// The session (its file for the JSONL store, its id otherwise).
        session: String,
        /// What the JSON parser said.
        #[source]
        source: serde_json::Error,
    },
    /// A message of the turn carries an idempotency key that a stored message carries
    /// already: the request is a retry of one whose prompt is stored, and nothing was
    /// stored or run (see [`keyed_turn`](super::keyed_turn) for where that turn stands).
    #[error(
        "session {session}: idempotency key `{key}` is stored already (the request is a retry); nothing was stored"
    )]
    KeyStored {
        /// The session (its file for the JSONL store, its id otherwise).
        session: String,
        /// The key.
        key: String,
    },
    /// A turn asked to resume the turn of an idempotency key
    /// ([`ResumeKeyed`](super::ResumeKeyed)) whose turn is not unfinished in the
    /// history (it ended, paused, or no message carries the key); nothing ran.
    #[error(
        "session {session}: the turn of idempotency key `{key}` is not unfinished, so there is nothing to resume; nothing ran"
    )]
    NotResumable {
        /// The session (its file for the JSONL store, its id otherwise).
        session: String,
        /// The key.
        key: String,
    },
}

impl From<SessionError> for Error {
    /// A session error is an error of the `SessionLog` layer; get it back with
    /// [`Error::downcast_ref`].
    fn from(error: SessionError) -> Self {
        Error::from_layer("SessionLog", error)
    }
}

/// What a lost lease left stored.
fn durable_text(durable: usize) -> String {
    match durable {
        0 => "nothing of this turn was stored".to_string(),
        1 => {
            "the first message of this turn (its prompt) is stored and stays; nothing after it was"
                .to_string()
        }
        n => format!(
            "the first {n} messages of this turn (its prompt first) are stored and stay; nothing after them was"
        ),
    }
}

/// The `map_err` of an I/O step on `path`.
pub(crate) fn io_error<'a>(
    path: &'a Path,
    action: &'static str,
) -> impl FnOnce(io::Error) -> SessionError + 'a {
    move |source| SessionError::Io {
        path: path.to_path_buf(),
        action,
        source,
    }
}

/// The `map_err` of a database step.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn db_error<E: Into<BoxError>>(
    store: &'static str,
    action: impl FnOnce() -> String,
) -> impl FnOnce(E) -> SessionError {
    move |source| SessionError::Database {
        store,
        action: action(),
        source: source.into(),
    }
}
