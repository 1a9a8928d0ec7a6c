//! `JsonlStore`: one JSONL file per session in a directory, the default store.

pub(in crate::session) mod file;
pub(in crate::session) mod pool;
pub(in crate::session) mod retention_fs;
pub(in crate::session) mod tail;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::cost::Spend;
use crate::message::Message;
use crate::session::admin::retention::{SessionInfo, SessionSize, StoreSize};
use crate::session::error::{SessionError, io_error};
use crate::session::lock::{LockGuard, resolve};
use crate::session::store::{Abandoned, SessionStore};
use crate::session::totals;
use file::{Limits, SessionFile};
use pool::Pool;
use retention_fs::{dir_bytes, file_info};

/// Sessions as JSONL files, one message per line, `<dir>/<id>.jsonl`: the format of
/// `SessionLog`'s `path` (byte for byte), so files written by either load in the other.
///
/// Pick it for one machine and sessions you want to read with `cat` and `jq`. The lease
/// is an OS lock on the session file itself (no lock file): exclusive across the
/// processes of one machine, freed by the OS when a process dies; it does not
/// coordinate machines (use `PostgresStore`). The file I/O runs on a writer thread
/// of the store (shared by its clones), never on the async runtime; concurrent
/// appends share fsyncs (group commit) and each is durable before its future is done.
///
/// ```
/// use brute::session::{JsonlStore, SessionStore};
/// use brute::Message;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// # let dir = std::env::temp_dir().join(format!("brute-doc-jsonl-{}", std::process::id()));
/// let store = JsonlStore::new(&dir);
/// let (mut lease, history) = store.open("alice").await?;
/// assert!(history.is_empty());
/// store.append(&mut lease, &[Message::user("hi")]).await?;
/// store.release(lease).await?;
/// assert_eq!(store.list().await?, ["alice"]);
/// assert!(dir.join("alice.jsonl").exists());
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), brute::session::SessionError>(()) }).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct JsonlStore {
    dir: PathBuf,
    sync: bool,
    limits: Limits,
    pool: Arc<Pool>,
}

/// A JSONL session held for a turn: the locked, open file.
#[derive(Debug)]
pub struct FileLease {
    /// `None` only while a write runs on a writer thread (or after one was lost).
    file: Option<SessionFile>,
    path: PathBuf,
    /// The session's running total (its sidecar's, or what was set since).
    spend: Spend,
    /// A total set and not yet written to the sidecar.
    pending: Option<Spend>,
}

impl FileLease {
    /// The session file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn take(&mut self) -> Result<SessionFile, SessionError> {
        self.file
            .take()
            .ok_or(SessionError::WriterGone { store: "jsonl" })
    }
}

impl JsonlStore {
    /// Sessions in `dir` (created on the first write), fsynced at every write.
    pub fn new(dir: impl Into<PathBuf>) -> JsonlStore {
        JsonlStore {
            dir: dir.into(),
            sync: true,
            limits: Limits::DEFAULT,
            pool: Pool::from_env(),
        }
    }

    /// Whether writes are fsynced (the default). `false` only writes to the OS: the
    /// sessions then survive a crash of the process but not of the machine.
    pub fn sync(mut self, sync: bool) -> JsonlStore {
        self.sync = sync;
        self
    }

    /// The largest session line the store loads, in bytes (64 MiB by default): a
    /// longer line fails the load with [`SessionError::TooLarge`] naming the file, the
    /// line and the limit, and the file is left untouched.
    pub fn max_line_bytes(mut self, bytes: u64) -> JsonlStore {
        self.limits.line = bytes;
        self
    }

    /// The largest session file the store loads, in bytes (1 GiB by default): a
    /// larger file fails the load with [`SessionError::TooLarge`] before it is read.
    pub fn max_file_bytes(mut self, bytes: u64) -> JsonlStore {
        self.limits.file = bytes;
        self
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of session `id`: `<dir>/<id>.jsonl`. An id is a file name: not empty,
    /// no path separator, not starting with a dot.
    pub fn path_of(&self, id: &str) -> Result<PathBuf, SessionError> {
        let bad = |reason| SessionError::BadId {
            id: id.to_string(),
            reason,
        };
        if id.is_empty() {
            return Err(bad("it is empty"));
        }
        if id.starts_with('.') {
            return Err(bad("it starts with a dot"));
        }
        if id.contains(['/', '\\', '\0']) {
            return Err(bad("it contains a path separator or a NUL"));
        }
        Ok(self.dir.join(format!("{id}.jsonl")))
    }

    /// Takes the lease of the session file at `path` (any path, outside the store's
    /// directory too) and loads it: what `SessionLog` does with its `path` option.
    pub async fn open_path(
        &self,
        path: PathBuf,
    ) -> Result<(FileLease, Vec<Message>), SessionError> {
        let (sync, limits) = (self.sync, self.limits);
        let opened = path.clone();
        let (file, messages) = self
            .pool
            .run(
                move || {
                    let read = SessionFile::open_raw(&opened, sync, limits).and_then(
                        |(file, messages, created)| {
                            let spend = totals::read_sidecar(&opened)?;
                            Ok((file, (messages, spend), created))
                        },
                    );
                    match read {
                        // A new file's directory entry is made durable with the batch.
                        Ok((file, messages, true)) if sync => match file.dir_handle() {
                            Ok(dir) => (Ok((file, messages)), Some(dir)),
                            Err(e) => (Err(io_error(&opened, "open the directory")(e)), None),
                        },
                        Ok((file, messages, _)) => (Ok((file, messages)), None),
                        Err(e) => (Err(e), None),
                    }
                },
                |opened, synced| {
                    let (file, messages) = opened?;
                    synced.map_err(io_error(file.path(), "fsync the directory"))?;
                    Ok((file, messages))
                },
            )
            .await??;
        let (messages, spend) = messages;
        Ok((
            FileLease {
                file: Some(file),
                path,
                spend,
                pending: None,
            },
            messages,
        ))
    }

    /// A store whose sessions are given by path (with [`open_path`](Self::open_path)),
    /// for `SessionLog`'s `path` option.
    pub(crate) fn paths(sync: bool) -> JsonlStore {
        JsonlStore::new(PathBuf::new()).sync(sync)
    }
}

impl SessionStore for JsonlStore {
    type Lease = FileLease;

    async fn open(&self, id: &str) -> Result<(FileLease, Vec<Message>), SessionError> {
        self.open_path(self.path_of(id)?).await
    }

    async fn append(
        &self,
        lease: &mut FileLease,
        messages: &[Message],
    ) -> Result<(), SessionError> {
        let mut file = lease.take()?;
        let bytes = match file.serialize(messages) {
            Ok(bytes) if bytes.is_empty() => {
                file.recycle(bytes);
                lease.file = Some(file);
                return Ok(());
            }
            Ok(bytes) => bytes,
            Err(e) => {
                lease.file = Some(file);
                return Err(e);
            }
        };
        let (file, result) = self
            .pool
            .run(
                move || {
                    let before = file.write_bytes(&bytes);
                    file.recycle(bytes);
                    // Made durable with the batch's other writes: group commit.
                    let sync = match (&before, file.sync_handle()) {
                        (Ok(_), Some(handle)) => Some(handle),
                        _ => None,
                    };
                    match sync {
                        Some(Ok(handle)) => ((file, before), Some(handle)),
                        // No handle to share: fsync this file on its own.
                        Some(Err(_)) => {
                            let before = before.and_then(|b| file.flush().map(|()| b));
                            ((file, before), None)
                        }
                        None => ((file, before), None),
                    }
                },
                |(mut file, before), synced| match (before, synced) {
                    (Ok(_), Ok(())) => (file, Ok(())),
                    (Ok(before), Err(e)) => {
                        // Not durable: undone, so the next append starts clean.
                        file.undo(before);
                        let error = io_error(file.path(), "fsync the file")(e);
                        (file, Err(error))
                    }
                    (Err(e), _) => (file, Err(e)),
                },
            )
            .await?;
        lease.file = Some(file);
        result?;
        self.write_spend(lease).await
    }

    /// From position 0, the file is replaced through a temp file and a rename; from
    /// any other position it is cut at that message's line and the tail written
    /// there, behind a redo record that makes the cut crash-safe (the tail written
    /// twice and four fsyncs, whatever the length of the session: see `SessionFile`).
    async fn rewrite(
        &self,
        lease: &mut FileLease,
        from: usize,
        messages: &[Message],
    ) -> Result<(), SessionError> {
        let mut file = lease.take()?;
        let bytes = match file.serialize(messages) {
            Ok(bytes) => bytes,
            Err(e) => {
                lease.file = Some(file);
                return Err(e);
            }
        };
        let (file, result) = self
            .pool
            .run(
                move || {
                    let result = file.rewrite_from(from, bytes);
                    ((file, result), None)
                },
                |done, _| done,
            )
            .await?;
        lease.file = Some(file);
        result?;
        self.write_spend(lease).await
    }

    /// Writes on the calling thread (one write or cut, and one fsync: a dropped turn
    /// is rare) and unlocks the file, so the next turn finds the session whole and
    /// free.
    fn abandon(&self, mut lease: FileLease, ending: Abandoned) {
        let Some(mut file) = lease.file.take() else {
            return;
        };
        if let Some(spend) = lease.pending.take()
            && let Err(error) = totals::write_sidecar(&lease.path, &spend, self.sync)
        {
            tracing::warn!(brute.session.path = %lease.path.display(), "{error}");
        }
        let done = match ending {
            Abandoned::Append(messages) => file.append(&messages),
            Abandoned::RemoveLast(n) => file.cut_last(n),
            Abandoned::Nothing => Ok(()),
        };
        if let Err(error) = done {
            tracing::warn!(
                brute.session.path = %lease.path.display(),
                "the end of a dropped turn could not be written: {error}"
            );
        }
    }

    async fn release(&self, mut lease: FileLease) -> Result<(), SessionError> {
        let written = self.write_spend(&mut lease).await;
        // Unlocking and closing are system calls: on a writer thread too.
        if let Some(file) = lease.file.take() {
            self.pool.run_plain(move || drop(file)).await?;
        }
        written
    }

    async fn load(&self, id: &str) -> Result<Vec<Message>, SessionError> {
        let path = self.path_of(id)?;
        let limits = self.limits;
        self.pool
            .run_plain(move || SessionFile::read_limited(&path, limits))
            .await?
    }

    async fn list(&self) -> Result<Vec<String>, SessionError> {
        let dir = self.dir.clone();
        self.pool.run_plain(move || list(&dir)).await?
    }

    async fn delete(&self, id: &str) -> Result<(), SessionError> {
        let path = self.path_of(id)?;
        self.pool
            .run_plain(move || {
                let real = match resolve(&path) {
                    // A link to nothing: the link goes, never what it names.
                    Err(SessionError::DanglingLink { .. }) => {
                        return fs::remove_file(&path)
                            .map_err(io_error(&path, "delete the dangling link"));
                    }
                    real => real?,
                };
                if !real.exists() {
                    return Ok(());
                }
                // Removed while locked: a turn that opened it meanwhile sees it gone.
                let _lock = LockGuard::acquire(&path, &real)?;
                // A rewrite a crash interrupted must not reach a new session of this id.
                tail::discard(&real)?;
                match fs::remove_file(&real) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => {
                        Err(io_error(&real, "delete the file")(e))
                    }
                    _ => totals::remove_sidecar(&path),
                }
            })
            .await?
    }

    /// The file's lines and length, and its modification time.
    async fn size(&self, id: &str) -> Result<SessionSize, SessionError> {
        let path = self.path_of(id)?;
        let info = self.pool.run_plain(move || file_info(&path)).await?;
        Ok(info?.0)
    }

    async fn sessions(&self) -> Result<Vec<SessionInfo>, SessionError> {
        let store = self.clone();
        self.pool
            .run_plain(move || {
                let mut sessions = Vec::new();
                for id in list(&store.dir)? {
                    let (size, updated) = file_info(&store.path_of(&id)?)?;
                    sessions.push(SessionInfo { id, size, updated });
                }
                Ok(sessions)
            })
            .await?
    }

    /// The sessions' totals, and every file of the directory for `disk_bytes`.
    async fn store_size(&self) -> Result<StoreSize, SessionError> {
        let mut size = StoreSize::of(&self.sessions().await?);
        let dir = self.dir.clone();
        size.disk_bytes = Some(self.pool.run_plain(move || dir_bytes(&dir)).await??);
        Ok(size)
    }

    fn spend(&self, lease: &FileLease) -> Spend {
        lease.spend
    }

    fn set_spend(&self, lease: &mut FileLease, spend: Spend) {
        lease.spend = spend;
        lease.pending = Some(spend);
    }

    async fn load_spend(&self, id: &str) -> Result<Spend, SessionError> {
        let path = self.path_of(id)?;
        self.pool
            .run_plain(move || totals::read_sidecar(&path))
            .await?
    }
}

impl JsonlStore {
    /// Writes the running total set on `lease` since its last write, if any, beside
    /// the session file (on a writer thread): after the messages of the same step are
    /// durable (see `session/totals.rs`).
    async fn write_spend(&self, lease: &mut FileLease) -> Result<(), SessionError> {
        let Some(spend) = lease.pending.take() else {
            return Ok(());
        };
        let (path, sync) = (lease.path.clone(), self.sync);
        self.pool
            .run_plain(move || totals::write_sidecar(&path, &spend, sync))
            .await?
    }
}

/// The session ids in `dir`: the `*.jsonl` files not starting with a dot.
fn list(dir: &Path) -> Result<Vec<String>, SessionError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error(dir, "list the directory")(e)),
    };
    let mut ids = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io_error(dir, "list the directory"))?;
        let name = entry.file_name();
        if let Some(id) = name
            .to_str()
            .and_then(|n| n.strip_suffix(".jsonl"))
            .filter(|id| !id.is_empty() && !id.starts_with('.'))
        {
            ids.push(id.to_string());
        }
    }
    ids.sort();
    Ok(ids)
}

#[cfg(test)]
#[path = "jsonl_tests.rs"]
mod tests;
