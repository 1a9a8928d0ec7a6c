//! `SessionFile`: one JSONL session file, locked, loaded, appended to and atomically
//! rewritten, with blocking I/O (the JSONL store runs it on its writer threads).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::message::{Message, Role};
use crate::session::error::{SessionError, io_error};
use crate::session::jsonl::tail;
use crate::session::lock::{LockGuard, parent, resolve, sibling, sync_dir};
use crate::session::validate::{self, Validation};

/// An open, locked session file: load it with [`SessionFile::open`], then
/// [`append`](SessionFile::append) or [`rewrite`](SessionFile::rewrite). The JSONL store
/// uses it on its writer threads; use it directly (it blocks) to inspect or prepare
/// sessions.
///
/// ```
/// use brute::{Message, session::SessionFile};
///
/// let dir = std::env::temp_dir().join(format!("brute-doc-{}", std::process::id()));
/// let path = dir.join("chat.jsonl");
/// let (mut file, history) = SessionFile::open(&path)?;
/// assert!(history.is_empty());
/// file.append(&[Message::user("hi"), Message::assistant("hello")])?;
/// drop(file); // releases the lock
/// assert_eq!(SessionFile::read(&path)?.len(), 2);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), brute::session::SessionError>(())
/// ```
#[derive(Debug)]
pub struct SessionFile {
    /// The path as given (a symlink stays one).
    path: PathBuf,
    /// The regular file it leads to: rewrites replace this one.
    real: PathBuf,
    /// The file, locked for the life of the value.
    file: LockGuard,
    /// The file's length, to undo a partial append.
    len: u64,
    /// Where each stored message (each line that is not a `system` message) starts:
    /// where a rewrite from a position cuts the file.
    pub(in crate::session) starts: Vec<u64>,
    /// A rewrite from a position whose redo record is written but that did not
    /// finish (its write failed): no other write goes to the file until one does.
    unfinished: bool,
    buf: Vec<u8>,
    sync: bool,
}

/// How large a session file and each of its lines may be: what a store reads before
/// it refuses with [`SessionError::TooLarge`], so a hostile or runaway file cannot make
/// loading take unbounded memory and time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    /// The largest line, in bytes.
    pub(crate) line: u64,
    /// The largest file, in bytes.
    pub(crate) file: u64,
}

impl Limits {
    /// 64 MiB a line (a message with a few large images or documents in base64), and
    /// 1 GiB a file.
    pub(crate) const DEFAULT: Limits = Limits {
        line: 64 << 20,
        file: 1 << 30,
    };
}

/// The UTF-8 byte order mark some editors put at the start of a file.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// What [`SessionFile::read_parsed`] found.
struct Parsed {
    messages: Vec<Message>,
    /// Where each message that is not `system` starts.
    starts: Vec<u64>,
    /// The file is non-empty and does not end with a newline.
    needs_newline: bool,
    len: u64,
}

impl SessionFile {
    /// Reads the messages of the session at `path` without locking or repairing it.
    /// A missing file is an empty session; a path that is not a regular file is
    /// [`SessionError::NotAFile`].
    pub fn read(path: impl AsRef<Path>) -> Result<Vec<Message>, SessionError> {
        Self::read_limited(path.as_ref(), Limits::DEFAULT)
    }

    /// [`SessionFile::read`] with the store's size limits.
    pub(crate) fn read_limited(path: &Path, limits: Limits) -> Result<Vec<Message>, SessionError> {
        let real = resolve(path)?;
        let mut bytes = Vec::new();
        match File::open(&real) {
            Ok(file) => read_capped(&file, &real, limits, &mut bytes)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error(&real, "read the file")(e)),
        }
        // A rewrite interrupted by a crash (or running now) is read as finished.
        tail::apply_in_memory(&real, &mut bytes)?;
        Self::parse(&real, bytes, limits).map(|p| p.messages)
    }

    fn parse(path: &Path, bytes: Vec<u8>, limits: Limits) -> Result<Parsed, SessionError> {
        let needs_newline = bytes.last().is_some_and(|b| *b != b'\n');
        let mut messages = Vec::with_capacity(bytes.len() / 128 + 1);
        let mut starts = Vec::with_capacity(bytes.len() / 128 + 1);
        // A leading byte order mark is not part of the first line.
        let body = bytes.strip_prefix(BOM).unwrap_or(&bytes);
        let mut start = (bytes.len() - body.len()) as u64;
        let mut lines = body.split(|b| *b == b'\n').peekable();
        let mut number = 0;
        while let Some(line) = lines.next() {
            number += 1;
            let line_start = start;
            start += line.len() as u64 + 1;
            if line.len() as u64 > limits.line {
                return Err(SessionError::TooLarge {
                    path: path.to_path_buf(),
                    line: Some(number),
                    size: line.len() as u64,
                    limit: limits.line,
                });
            }
            let text = std::str::from_utf8(line).map_err(|e| SessionError::NotUtf8 {
                path: path.to_path_buf(),
                line: number,
                column: e.valid_up_to() + 1,
            })?;
            if text.trim().is_empty() {
                continue;
            }
            let message: Message =
                serde_json::from_str(text).map_err(|source| SessionError::Corrupt {
                    path: path.to_path_buf(),
                    line: number,
                    unterminated: lines.peek().is_none(),
                    source,
                })?;
            if message.role != Role::System {
                starts.push(line_start);
            }
            messages.push(message);
        }
        Ok(Parsed {
            messages,
            starts,
            needs_newline,
            len: bytes.len() as u64,
        })
    }

    /// Locks the session at `path`, loads it, repairs what breaks the tool-call rules
    /// (see [`Validation::Repair`]; a tool call a crash left without a result gets an
    /// error result), writes the repair back, and opens it for appending. Creates
    /// missing parent directories; a missing file is an empty session. Appends are
    /// fsynced.
    ///
    /// On any error the session file is left as it was.
    pub fn open(path: impl AsRef<Path>) -> Result<(SessionFile, Vec<Message>), SessionError> {
        Self::open_with(path.as_ref(), true)
    }

    /// [`SessionFile::open`], choosing whether appends are fsynced (`sync`) or only
    /// written to the OS (which survives a crash of the process but not of the machine).
    pub fn open_with(path: &Path, sync: bool) -> Result<(SessionFile, Vec<Message>), SessionError> {
        let (mut session, mut messages, created) = Self::open_raw(path, sync, Limits::DEFAULT)?;
        if created && sync {
            sync_dir(&parent(&session.real))?;
        }
        let report = validate::repair(&mut messages, Validation::Repair).map_err(|problem| {
            SessionError::Invalid {
                session: path.display().to_string(),
                message: problem.message(),
                problem: problem.to_string(),
            }
        })?;
        if !report.problems.is_empty() {
            validate::warn_repaired(&path.display().to_string(), &report);
        }
        if report.rewritten {
            session.rewrite(&messages)?;
        } else if report.appended > 0 {
            session.append(&messages[messages.len() - report.appended..])?;
        }
        Ok((session, messages))
    }

    /// Locks and loads the session as it is, without checking the history: what a
    /// store does before the layer above validates it. Also says whether the file
    /// was created: its directory then needs an fsync (the caller's, so that it can
    /// share it).
    pub(crate) fn open_raw(
        path: &Path,
        sync: bool,
        limits: Limits,
    ) -> Result<(SessionFile, Vec<Message>, bool), SessionError> {
        let real = resolve(path)?;
        let dir = parent(&real);
        if !dir.is_dir() {
            fs::create_dir_all(&dir).map_err(io_error(&dir, "create the directory"))?;
        }
        let (lock, created) = LockGuard::acquire(path, &real)?;
        // A rewrite from a position interrupted by a crash is finished first: the lock
        // is ours, so none is running.
        tail::recover(&real, lock.file(), path)?;
        // A rewrite interrupted by a crash leaves its temp file: the lock is ours, so
        // no rewrite is running.
        match fs::remove_file(temp_path(&real)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(io_error(&temp_path(&real), "remove a leftover temp file")(
                    e,
                ));
            }
            _ => {}
        }
        let mut bytes = Vec::new();
        if !created {
            read_capped(lock.file(), &real, limits, &mut bytes)?;
        }
        let Parsed {
            messages,
            starts,
            needs_newline,
            len,
        } = Self::parse(&real, bytes, limits)?;
        let mut session = SessionFile {
            path: path.to_path_buf(),
            real,
            file: lock,
            len,
            starts,
            unfinished: false,
            buf: Vec::new(),
            sync,
        };
        if needs_newline {
            session.write_raw(b"\n")?;
            session.flush()?;
        }
        Ok((session, messages, created))
    }

    /// The session file's path, as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `messages` (system messages are skipped), one line each, in one write,
    /// then fsyncs. If the write fails, the file is truncated back to what it was.
    pub fn append<'a>(
        &mut self,
        messages: impl IntoIterator<Item = &'a Message>,
    ) -> Result<(), SessionError> {
        let before = self.len;
        let bytes = self.serialize(messages)?;
        self.write_bytes(&bytes)?;
        self.buf = bytes;
        self.flush().inspect_err(|_| self.undo(before))
    }

    /// `messages` as lines, in the reused buffer (taken: give it back with `self.buf`).
    pub(crate) fn serialize<'a>(
        &mut self,
        messages: impl IntoIterator<Item = &'a Message>,
    ) -> Result<Vec<u8>, SessionError> {
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        for message in messages.into_iter().filter(|m| m.role != Role::System) {
            serialize(&mut buf, message, &self.path)?;
        }
        Ok(buf)
    }

    /// Writes `bytes` (lines of [`serialize`](Self::serialize)) at the end, without
    /// fsync; undone on failure. Returns the length before, for [`undo`](Self::undo).
    pub(crate) fn write_bytes(&mut self, bytes: &[u8]) -> Result<u64, SessionError> {
        self.refuse_unfinished()?;
        let before = self.write_raw(bytes)?;
        self.starts.extend(line_starts(before, bytes));
        Ok(before)
    }

    /// Fails while a rewrite from a position is unfinished: a write now would be
    /// undone when the next open finishes the rewrite.
    fn refuse_unfinished(&self) -> Result<(), SessionError> {
        if self.unfinished {
            return Err(io_error(&self.path, "append to the file")(
                io::Error::other(
                    "a rewrite of the file did not finish; it is finished when the session is opened again",
                ),
            ));
        }
        Ok(())
    }

    /// Writes `bytes` at the end, without fsync; undone on failure.
    fn write_raw(&mut self, bytes: &[u8]) -> Result<u64, SessionError> {
        let before = self.len;
        if bytes.is_empty() {
            return Ok(before);
        }
        match self.file.file().write_all(bytes) {
            Ok(()) => {
                self.len += bytes.len() as u64;
                Ok(before)
            }
            Err(e) => {
                self.undo(before);
                Err(io_error(&self.path, "append to the file")(e))
            }
        }
    }

    /// A handle to fsync what was written (with others, on a writer thread), when the
    /// file syncs.
    pub(crate) fn sync_handle(&self) -> Option<io::Result<File>> {
        self.sync.then(|| self.file.file().try_clone())
    }

    /// The directory of the session file, to fsync after the file was created.
    pub(crate) fn dir_handle(&self) -> io::Result<File> {
        File::open(parent(&self.real))
    }

    /// fsyncs what was written, when the file syncs.
    pub(crate) fn flush(&mut self) -> Result<(), SessionError> {
        if self.sync {
            self.file
                .file()
                .sync_data()
                .map_err(io_error(&self.path, "fsync the file"))?;
        }
        Ok(())
    }

    /// Cuts the file back to `len` (undoes a partial or unsynced append), so that the
    /// next append does not glue onto a torn line.
    pub(crate) fn undo(&mut self, len: u64) {
        let _ = self.file.file().set_len(len);
        // The file of a rewrite writes at its position, not at the end.
        let _ = self.file.file().seek(SeekFrom::Start(len));
        self.len = len;
        let kept = self.starts.partition_point(|&start| start < len);
        self.starts.truncate(kept);
    }

    /// Cuts the last `count` messages (lines) off the file, durably: the prompt of a
    /// turn that was dropped before anything answered it.
    pub(crate) fn cut_last(&mut self, count: usize) -> Result<(), SessionError> {
        self.refuse_unfinished()?;
        let mut content = Vec::new();
        let mut file = self.file.file();
        file.seek(SeekFrom::Start(0))
            .and_then(|_| file.read_to_end(&mut content))
            .map_err(io_error(&self.path, "read the file"))?;
        let mut cut = content.len();
        for _ in 0..count {
            // The line before `cut` starts after the newline before its own.
            let body = &content[..cut.saturating_sub(1)];
            cut = body.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        }
        self.undo(cut as u64);
        self.flush()
    }

    /// Replaces the whole file with `messages` (system messages are skipped),
    /// atomically: a temp file in the same directory is written and fsynced, renamed
    /// over the session, and the directory is fsynced. A reader sees the old file or
    /// the new one, never a mix, and a crash leaves one of the two (and a temp file
    /// that the next open removes). A symlinked session keeps its link: the file it
    /// leads to is replaced.
    pub fn rewrite<'a>(
        &mut self,
        messages: impl IntoIterator<Item = &'a Message>,
    ) -> Result<(), SessionError> {
        let buf = self.serialize(messages)?;
        self.rewrite_bytes(buf)
    }

    /// [`rewrite`](Self::rewrite) with the lines already serialised.
    pub(crate) fn rewrite_bytes(&mut self, buf: Vec<u8>) -> Result<(), SessionError> {
        let dir = parent(&self.real);
        let tmp = temp_path(&self.real);
        let result = (|| {
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&tmp)
                .map_err(io_error(&tmp, "create the temp file"))?;
            // Locked before it replaces the session, so the session is never unlocked.
            file.try_lock()
                .map_err(|e| io_error(&tmp, "lock the temp file")(io::Error::other(e)))?;
            file.write_all(&buf)
                .map_err(io_error(&tmp, "write the temp file"))?;
            file.sync_all()
                .map_err(io_error(&tmp, "fsync the temp file"))?;
            fs::rename(&tmp, &self.real).map_err(io_error(&self.path, "replace the file"))?;
            sync_dir(&dir)?;
            Ok(file)
        })();
        let len = buf.len() as u64;
        self.buf = buf;
        match result {
            Ok(file) => {
                // The replaced file's lock is released by dropping it.
                self.file = LockGuard::adopt(file);
                self.len = len;
                self.starts = line_starts(0, &self.buf).collect();
                // A rewrite from a position that did not finish is superseded.
                if self.unfinished {
                    tail::discard(&self.real)?;
                    self.unfinished = false;
                }
                Ok(())
            }
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    /// Replaces the stored messages from position `from` on with `bytes` (lines of
    /// [`serialize`](Self::serialize)), durably and crash-safe, at the cost of the
    /// tail: cut at that message's line behind a redo record (`session/jsonl/tail.rs`); from
    /// 0, [`rewrite_bytes`](Self::rewrite_bytes).
    pub(crate) fn rewrite_from(&mut self, from: usize, bytes: Vec<u8>) -> Result<(), SessionError> {
        let Some(&offset) = self.starts.get(from).filter(|_| from > 0) else {
            return match from {
                0 => self.rewrite_bytes(bytes),
                // Nothing stored is replaced: an append.
                _ if from == self.starts.len() => {
                    let before = self.write_bytes(&bytes)?;
                    let flushed = self.flush().inspect_err(|_| self.undo(before));
                    self.recycle(bytes);
                    flushed
                }
                _ => Err(io_error(&self.path, "rewrite the file")(io::Error::other(
                    format!("position {from} is past the {} stored", self.starts.len()),
                ))),
            };
        };
        let written = tail::cut_and_write(&self.real, &self.path, self.file.file(), offset, &bytes);
        if let Err((error, unfinished)) = written {
            self.unfinished |= unfinished;
            return Err(error);
        }
        self.unfinished = true;
        self.starts.truncate(from);
        self.starts.extend(line_starts(offset, &bytes));
        self.len = offset + bytes.len() as u64;
        self.recycle(bytes);
        tail::discard(&self.real)?;
        self.unfinished = false;
        Ok(())
    }

    /// Gives a buffer back for the next serialisation.
    pub(crate) fn recycle(&mut self, buf: Vec<u8>) {
        self.buf = buf;
    }
}

/// Reads `file` (at `path`) into `bytes`, refusing a file over the limit without
/// reading past it.
fn read_capped(
    file: &File,
    path: &Path,
    limits: Limits,
    bytes: &mut Vec<u8>,
) -> Result<(), SessionError> {
    let too_large = |size| SessionError::TooLarge {
        path: path.to_path_buf(),
        line: None,
        size,
        limit: limits.file,
    };
    let len = file
        .metadata()
        .map_err(io_error(path, "look at the file"))?
        .len();
    if len > limits.file {
        return Err(too_large(len));
    }
    bytes.reserve(usize::try_from(len).unwrap_or(0));
    file.take(limits.file + 1)
        .read_to_end(bytes)
        .map_err(io_error(path, "read the file"))?;
    if bytes.len() as u64 > limits.file {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(())
}

/// Where the lines of `bytes` start, counted from `at` (a message is one line: JSON
/// escapes every newline inside it).
fn line_starts(at: u64, bytes: &[u8]) -> impl Iterator<Item = u64> + '_ {
    let ends = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i as u64 + 1);
    std::iter::once(0)
        .chain(ends)
        .filter(move |&start| start < bytes.len() as u64)
        .map(move |start| at + start)
}

fn serialize(buf: &mut Vec<u8>, message: &Message, path: &Path) -> Result<(), SessionError> {
    serde_json::to_writer(&mut *buf, message)
        .map_err(|e| io_error(path, "serialise a message")(io::Error::other(e)))?;
    buf.push(b'\n');
    Ok(())
}

/// `.<name>.tmp`: the one temp file of a rewrite (one at a time: the lock is held).
fn temp_path(path: &Path) -> PathBuf {
    sibling(path, ".", ".tmp")
}

#[cfg(test)]
#[path = "file_tests.rs"]
mod tests;
