//! `SessionLog`: the session as a JSONL file, one message per line, durable as the
//! turn runs. See [`SessionLog`] for the guarantees.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::trace::traced;

use crate::env::{Changes, Env, Persist, SaveFuture};
use crate::error::Error;
use crate::handler::Handler;
use crate::message::{Message, Role};

/// What went wrong with a session file. Every variant names the file; line errors
/// name the line (1 for the first).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// Another writer holds the session's lock.
    #[error(
        "session {} is locked: another process or turn is writing it (lock file {})",
        path.display(),
        lock.display()
    )]
    Locked {
        /// The session file.
        path: PathBuf,
        /// The lock file beside it.
        lock: PathBuf,
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
}

impl From<SessionError> for Error {
    /// A session error is an error of the `SessionLog` layer; get it back with
    /// [`Error::downcast_ref`].
    fn from(error: SessionError) -> Self {
        Error::from_layer("SessionLog", error)
    }
}

fn io_error<'a>(
    path: &'a Path,
    action: &'static str,
) -> impl FnOnce(io::Error) -> SessionError + 'a {
    move |source| SessionError::Io {
        path: path.to_path_buf(),
        action,
        source,
    }
}

/// An open, locked session file: load it with [`SessionFile::open`], then
/// [`append`](SessionFile::append) or [`rewrite`](SessionFile::rewrite). This is what
/// `SessionLog` uses; use it directly to inspect or prepare sessions.
///
/// ```
/// use brute::{Message, SessionFile};
///
/// let dir = std::env::temp_dir().join(format!("brute-doc-{}", std::process::id()));
/// let path = dir.join("chat.jsonl");
/// let (mut file, history) = SessionFile::open(&path)?;
/// assert!(history.is_empty());
/// file.append(&[Message::user("hi"), Message::assistant("hello")])?;
/// drop(file); // releases the lock
/// assert_eq!(SessionFile::read(&path)?.len(), 2);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), brute::SessionError>(())
/// ```
#[derive(Debug)]
pub struct SessionFile {
    path: PathBuf,
    file: File,
    /// Held for the life of the value.
    _lock: LockGuard,
    /// The file's length, to undo a partial append.
    len: u64,
    buf: Vec<u8>,
    sync: bool,
}

/// What [`SessionFile::read_parsed`] found.
struct Parsed {
    messages: Vec<Message>,
    /// The file is non-empty and does not end with a newline.
    needs_newline: bool,
    len: u64,
}

impl SessionFile {
    /// Reads the messages of the session at `path` without locking or repairing it.
    /// A missing file is an empty session.
    pub fn read(path: impl AsRef<Path>) -> Result<Vec<Message>, SessionError> {
        Self::read_parsed(path.as_ref()).map(|p| p.messages)
    }

    fn read_parsed(path: &Path) -> Result<Parsed, SessionError> {
        let bytes = match fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io_error(path, "read the file")(e)),
        };
        let needs_newline = bytes.last().is_some_and(|b| *b != b'\n');
        let mut messages = Vec::with_capacity(bytes.len() / 128 + 1);
        let mut lines = bytes.split(|b| *b == b'\n').peekable();
        let mut number = 0;
        while let Some(line) = lines.next() {
            number += 1;
            let text = std::str::from_utf8(line).map_err(|e| SessionError::NotUtf8 {
                path: path.to_path_buf(),
                line: number,
                column: e.valid_up_to() + 1,
            })?;
            if text.trim().is_empty() {
                continue;
            }
            let message = serde_json::from_str(text).map_err(|source| SessionError::Corrupt {
                path: path.to_path_buf(),
                line: number,
                unterminated: lines.peek().is_none(),
                source,
            })?;
            messages.push(message);
        }
        Ok(Parsed {
            messages,
            needs_newline,
            len: bytes.len() as u64,
        })
    }

    /// Locks the session at `path`, loads it, repairs tool calls a crash left without
    /// a result (writing the repair back), and opens it for appending. Creates missing
    /// parent directories; a missing file is an empty session. Appends are fsynced.
    ///
    /// On any error the session file is left as it was.
    pub fn open(path: impl AsRef<Path>) -> Result<(SessionFile, Vec<Message>), SessionError> {
        Self::open_with(path.as_ref(), true)
    }

    /// [`SessionFile::open`], choosing whether appends are fsynced (`sync`) or only
    /// written to the OS (which survives a crash of the process but not of the machine).
    pub fn open_with(path: &Path, sync: bool) -> Result<(SessionFile, Vec<Message>), SessionError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(io_error(dir, "create the directory"))?;
        }
        let lock_path = lock_path(path);
        let lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(io_error(&lock_path, "open the lock file"))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                return Err(SessionError::Locked {
                    path: path.to_path_buf(),
                    lock: lock_path,
                });
            }
            Err(fs::TryLockError::Error(e)) => {
                return Err(io_error(&lock_path, "lock the session")(e));
            }
        }
        let lock = LockGuard(lock);

        let Parsed {
            mut messages,
            needs_newline,
            len,
        } = Self::read_parsed(path)?;
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .map_err(io_error(path, "open the file for appending"))?;
        let mut session = SessionFile {
            path: path.to_path_buf(),
            file,
            _lock: lock,
            len,
            buf: Vec::new(),
            sync,
        };
        if needs_newline {
            session.write_buf(b"\n")?;
        }
        match repair(&mut messages) {
            Repair::None => {}
            Repair::Appended(n) => {
                tracing::warn!(brute.session.path = %path.display(), brute.session.repaired = n, "session had tool calls without a result (a crash?): synthetic error results appended");
                session.append(&messages[messages.len() - n..])?;
            }
            Repair::Inserted => {
                tracing::warn!(brute.session.path = %path.display(), "session had tool calls without a result before later messages: synthetic error results inserted, file rewritten");
                session.rewrite(&messages)?;
            }
        }
        Ok((session, messages))
    }

    /// The session file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `messages` (system messages are skipped), one line each, in one write,
    /// then fsyncs. If the write fails, the file is truncated back to what it was.
    pub fn append<'a>(
        &mut self,
        messages: impl IntoIterator<Item = &'a Message>,
    ) -> Result<(), SessionError> {
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        for message in messages.into_iter().filter(|m| m.role != Role::System) {
            serialize(&mut buf, message, &self.path)?;
        }
        let result = if buf.is_empty() {
            Ok(())
        } else {
            self.write_buf(&buf)
        };
        self.buf = buf;
        result
    }

    fn write_buf(&mut self, bytes: &[u8]) -> Result<(), SessionError> {
        let written = self.file.write_all(bytes).and_then(|()| {
            if self.sync {
                self.file.sync_data()
            } else {
                Ok(())
            }
        });
        match written {
            Ok(()) => {
                self.len += bytes.len() as u64;
                Ok(())
            }
            Err(e) => {
                // Undo a partial line, so that the next append does not glue onto it.
                let _ = self.file.set_len(self.len);
                Err(io_error(&self.path, "append to the file")(e))
            }
        }
    }

    /// Replaces the whole file with `messages` (system messages are skipped),
    /// atomically: a temp file in the same directory is written and fsynced, renamed
    /// over the session, and the directory is fsynced. A reader sees the old file or
    /// the new one, never a mix, and a crash leaves one of the two.
    pub fn rewrite<'a>(
        &mut self,
        messages: impl IntoIterator<Item = &'a Message>,
    ) -> Result<(), SessionError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        let tmp = dir.join(format!(
            ".{name}.{}.{}.tmp",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        for message in messages.into_iter().filter(|m| m.role != Role::System) {
            serialize(&mut buf, message, &self.path)?;
        }
        let result = (|| {
            let mut file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)
                .map_err(io_error(&tmp, "create the temp file"))?;
            file.write_all(&buf)
                .map_err(io_error(&tmp, "write the temp file"))?;
            file.sync_all()
                .map_err(io_error(&tmp, "fsync the temp file"))?;
            drop(file);
            fs::rename(&tmp, &self.path).map_err(io_error(&self.path, "replace the file"))?;
            // Make the rename durable. Opening a directory fails on some platforms;
            // the rename itself has happened by then.
            if let Ok(d) = File::open(&dir) {
                d.sync_all()
                    .map_err(io_error(&dir, "fsync the directory"))?;
            }
            let file = OpenOptions::new()
                .append(true)
                .open(&self.path)
                .map_err(io_error(&self.path, "open the file for appending"))?;
            Ok(file)
        })();
        match result {
            Ok(file) => {
                self.file = file;
                self.len = buf.len() as u64;
                self.buf = buf;
                Ok(())
            }
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                self.buf = buf;
                Err(e)
            }
        }
    }
}

/// The session's OS lock, released by an explicit unlock on drop rather than by
/// closing: a child process spawned by another thread holds a copy of every descriptor
/// between its fork and its exec, and a lock released only by closing would stay held
/// until that exec (a spurious "session is locked" for the next turn).
#[derive(Debug)]
struct LockGuard(File);

impl Drop for LockGuard {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

fn serialize(buf: &mut Vec<u8>, message: &Message, path: &Path) -> Result<(), SessionError> {
    serde_json::to_writer(&mut *buf, message)
        .map_err(|e| io_error(path, "serialise a message")(io::Error::other(e)))?;
    buf.push(b'\n');
    Ok(())
}

/// `<path>.lock`: the lock lives beside the session, not on it, because an atomic
/// rewrite replaces the session file (and a lock on the old file would not hold).
fn lock_path(path: &Path) -> PathBuf {
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".lock");
    path.with_file_name(name)
}

/// The content of the synthetic result given to a tool call that has none.
pub const INTERRUPTED_TOOL_CALL: &str = "error: this tool call was interrupted before it returned a result (the session was restored after the agent stopped); its effect is unknown, check before retrying";

enum Repair {
    None,
    /// This many synthetic results were added at the end.
    Appended(usize),
    /// Synthetic results were inserted before the end.
    Inserted,
}

/// Gives every tool call without a result a synthetic error result, placed after the
/// results its assistant message has.
fn repair(messages: &mut Vec<Message>) -> Repair {
    let mut inserts: Vec<(usize, Vec<Message>)> = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        if !messages[i].has_tool_calls() {
            i += 1;
            continue;
        }
        let mut end = i + 1;
        while end < messages.len() && messages[end].role == Role::Tool {
            end += 1;
        }
        let answered = &messages[i + 1..end];
        let missing: Vec<Message> = messages[i]
            .tool_calls
            .iter()
            .filter(|call| {
                !answered
                    .iter()
                    .any(|m| m.tool_call_id.as_deref() == Some(call.id.as_str()))
            })
            .map(|call| Message::tool_result(call.id.clone(), INTERRUPTED_TOOL_CALL))
            .collect();
        if !missing.is_empty() {
            inserts.push((end, missing));
        }
        i = end;
    }
    if inserts.is_empty() {
        return Repair::None;
    }
    let at_end = inserts.len() == 1 && inserts[0].0 == messages.len();
    let mut added = 0;
    for (at, synthetic) in inserts.into_iter().rev() {
        added += synthetic.len();
        messages.splice(at..at, synthetic);
    }
    if at_end {
        Repair::Appended(added)
    } else {
        Repair::Inserted
    }
}

/// What `SessionLog` installs in the env for one turn: saves exactly the changes the
/// transcript reports, appending what was appended and replacing the file when the
/// history was rewritten.
struct Writer {
    file: SessionFile,
}

impl Persist for Writer {
    fn save<'a>(&'a mut self, changes: Changes<'a>) -> SaveFuture<'a> {
        let saved = match changes {
            Changes::None => Ok(()),
            Changes::Appended(new) => self.file.append(new),
            Changes::Rewritten(all) => self.file.rewrite(all),
        };
        Box::pin(std::future::ready(saved.map_err(Error::from)))
    }
}

/// Keeps the conversation in a JSONL session file: loads it on the way in, and makes
/// every message of the turn durable as the turn runs.
///
/// The format is [`Message`]'s serde form, one message per line. What the middleware
/// guarantees:
///
/// - **Way in**: the file's messages are put before the turn's (after any leading
///   system message the caller prepared), so the turn continues the conversation.
/// - **Durable as the turn runs**: `SessionLog` installs its writer as the env's
///   [`Persist`](crate::env::Persist); the terminal takes the durability step
///   ([`Env::persist`]) before and after every model call, and a tool pipeline after
///   every tool result, so every message is on disk before the next model call. The
///   writer saves exactly what the [`Transcript`](crate::Transcript) reports changed:
///   new messages are appended (O(1) in the history length, one fsync per step).
/// - **Rewrites are atomic**: when the transcript reports a rewrite (compaction, an
///   edit of an earlier message), the file is replaced: temp file in the same
///   directory, fsync, rename, fsync of the directory.
/// - **Crash repair**: a tool call left without its result by a crash gets a synthetic
///   error result when the file is loaded, and the repair is written back.
/// - **Bad input**: a corrupt or non-UTF-8 line is a [`SessionError`] naming the file
///   and the line; the file is left untouched.
/// - **One writer**: the session is locked (an OS lock on `<path>.lock`) for the whole
///   turn; a second writer gets [`SessionError::Locked`].
///
/// `system` messages are never written: `SystemPrompt` adds them each turn.
///
/// For layers of your own: a layer that appends messages between model calls (a tool
/// pipeline) takes the durability step ([`Env::persist`]) after each one, so that a
/// crash loses nothing it completed. Every change goes through the transcript, so an
/// edit of an earlier message is always seen and replaces the file.
///
/// The file I/O is synchronous, in the task running the turn: one `write` (and, with
/// `sync`, one `fsync`) per durability step with new messages, nothing for a step
/// without. Loading reads the whole file (about 1.4 s per million messages here, see
/// `BENCHMARKS.md`).
///
/// Sits outside every loop and every compaction layer, at most once per stack
/// (checked at compile time: it provides [`kind::SessionLog`](crate::kind::SessionLog)).
///
/// ```
/// use brute::{brute_agent, Message, ScriptedModel, SessionLog, SystemPrompt};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let dir = tempfile_dir();
/// let path = dir.join("chats/nathan.jsonl");
/// let model = ScriptedModel::from_fn(|env| {
///     let named = env.messages.iter().any(|m| m.content == "My name is Nathan.");
///     Message::assistant(if named { "Nathan." } else { "I don't know." })
/// });
/// let agent = brute_agent! {
///     use SessionLog { path: path.clone() };
///     use SystemPrompt { prompt: "You are terse." };
///     run model;
/// };
/// agent.start("My name is Nathan.").await?;
/// let outcome = agent.start("What's my name?").await?;
/// assert_eq!(outcome.text(), Some("Nathan."));
/// // Four lines: two turns of user + assistant; the system message is not saved.
/// assert_eq!(std::fs::read_to_string(&path)?.lines().count(), 4);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
/// # fn tempfile_dir() -> std::path::PathBuf {
/// #     let d = std::env::temp_dir().join(format!("brute-doc-sl-{}", std::process::id()));
/// #     std::fs::remove_dir_all(&d).ok();
/// #     d
/// # }
/// ```
#[derive(crate::Middleware, Debug, Clone)]
#[middleware(crate = crate, provides = crate::kind::SessionLog)]
pub struct SessionLog<A> {
    app: A,
    /// The session file. Missing parent directories are created. A [`SessionPath`] in
    /// the env's extensions overrides it for one turn.
    #[middleware(into, default = "session.jsonl")]
    path: PathBuf,
    /// fsync the file at each durability step (the default). `false` only writes to the OS:
    /// the session then survives a crash of the process but not of the machine.
    #[middleware(default = true)]
    sync: bool,
}

/// The session file of one turn, overriding `SessionLog`'s `path` option: put it in
/// the env's extensions, so that one shared agent serves many sessions at once.
///
/// ```
/// use brute::{brute_agent, Message, SessionLog, SessionPath};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// # let dir = std::env::temp_dir().join(format!("brute-doc-sp-{}", std::process::id()));
/// let agent = brute_agent! {
///     use SessionLog;
///     run |_env| async { Ok(Message::assistant("hi")) };
/// };
/// let mut env = agent.env();
/// env.extensions.insert(SessionPath(dir.join("alice.jsonl")));
/// env.messages.push(Message::user("hello"));
/// agent.turn(env).await?;
/// assert!(dir.join("alice.jsonl").exists());
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), brute::Error>(()) }).unwrap();
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionPath(pub PathBuf);

impl<A: Handler<Env>> Handler<Env> for SessionLog<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        let path = env
            .extensions
            .get::<SessionPath>()
            .map_or_else(|| self.path.clone(), |p| p.0.clone());
        let span = tracing::info_span!(
            "brute.session_log",
            brute.layer = "SessionLog",
            brute.session.path = %path.display(),
            brute.session.loaded = tracing::field::Empty,
        );
        let record = span.clone();
        traced!(self.logged(env, &record, path), span)
    }
}

impl<A: Handler<Env>> SessionLog<A> {
    /// The turn with the session loaded and saved, inside the layer's span (`record`).
    async fn logged(
        &self,
        env: &mut Env,
        record: &tracing::Span,
        path: PathBuf,
    ) -> Result<(), Error> {
        let (file, loaded) = SessionFile::open_with(&path, self.sync)?;
        record.record("brute.session.loaded", loaded.len());
        let count = loaded.len();
        // What the store holds of the record (system lines of old files are not part
        // of it).
        let recorded = loaded.iter().filter(|m| m.role != Role::System).count();
        // The history goes after any leading system message the caller prepared, and
        // before the prompt.
        let lead = env
            .messages
            .iter()
            .take_while(|m| m.role == Role::System)
            .count();
        if count > 0 {
            env.messages.edit(|messages| {
                messages.splice(lead..lead, loaded);
            });
        }
        // The file holds the loaded history; everything after it is this turn's.
        let previous = env.set_persist(Box::new(Writer { file }), recorded);
        // The prompt (and anything the caller prepared) is durable before the turn runs.
        let result = match env.persist().await {
            Ok(()) => self.app.call(env).await,
            Err(e) => Err(e),
        };
        let saved = env.persist().await;
        drop(env.take_persist());
        if let Some(previous) = previous {
            env.set_persist(previous, 0);
        }
        result.and(saved)
    }
}
