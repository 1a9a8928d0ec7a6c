//! The JSONL store's lease: an OS lock on the session file itself, which the OS frees
//! when the holder dies. No lock file: creating and removing one per turn costs the
//! file system far more than the turn's appends (ext4 scans its recently deleted
//! inodes on every create).

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use crate::session::error::{SessionError, io_error};

/// The open session file, locked. Released by an explicit unlock on drop rather than
/// by closing: a child process spawned by another thread holds a copy of every
/// descriptor between its fork and its exec, and a lock released only by closing
/// would stay held until that exec (a spurious "session is locked" for the next turn).
#[derive(Debug)]
pub(crate) struct LockGuard(File);

impl LockGuard {
    /// Opens (creating it if missing) and locks the session file `real` (the file
    /// `session` leads to), or fails with [`SessionError::Locked`] when another holder
    /// has it. Also says whether the file was created.
    pub(crate) fn acquire(session: &Path, real: &Path) -> Result<(LockGuard, bool), SessionError> {
        // An atomic rewrite replaces the file: a lock taken on the file it replaced
        // protects nothing, so take it again on the new one.
        for _ in 0..64 {
            let (file, created) = open(real)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(fs::TryLockError::WouldBlock) => {
                    return Err(SessionError::Locked {
                        path: session.to_path_buf(),
                        lock: real.to_path_buf(),
                    });
                }
                Err(fs::TryLockError::Error(e)) => {
                    return Err(io_error(real, "lock the session")(e));
                }
            }
            if still_there(&file, real) {
                return Ok((LockGuard(file), created));
            }
            let _ = file.unlock();
        }
        Err(SessionError::Locked {
            path: session.to_path_buf(),
            lock: real.to_path_buf(),
        })
    }

    /// Takes over `file`, already locked by this process (the new file of a rewrite).
    pub(crate) fn adopt(file: File) -> LockGuard {
        LockGuard(file)
    }

    /// The locked file, open for reading and appending.
    pub(crate) fn file(&self) -> &File {
        &self.0
    }
}

/// Opens `real` for reading and appending, creating it if missing.
fn open(real: &Path) -> Result<(File, bool), SessionError> {
    let mut options = OpenOptions::new();
    options.read(true).append(true);
    match options.clone().create_new(true).open(real) {
        Ok(file) => return Ok((file, true)),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io_error(real, "create the file")(e)),
    }
    options
        .open(real)
        .map(|file| (file, false))
        .map_err(io_error(real, "open the file"))
}

/// Whether `file` is still the file at `path` (not removed or replaced since it was
/// opened): also what the SQLite store's lock files are checked with.
#[cfg(unix)]
pub(super) fn still_there(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), fs::metadata(path)) {
        (Ok(open), Ok(named)) => open.ino() == named.ino() && open.dev() == named.dev(),
        _ => false,
    }
}

#[cfg(not(unix))]
pub(super) fn still_there(_file: &File, path: &Path) -> bool {
    path.exists()
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

// The paths beside a session file, and making changes to them durable.

/// Makes a rename or a new file in `dir` durable. Opening a directory fails on some
/// platforms; the change itself has happened by then.
pub(super) fn sync_dir(dir: &Path) -> Result<(), SessionError> {
    if let Ok(d) = File::open(dir) {
        d.sync_all().map_err(io_error(dir, "fsync the directory"))?;
    }
    Ok(())
}

/// The directory of `path` (`.` for a bare name).
pub(super) fn parent(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The regular file that `path` leads to, following symlinks to files that exist; a
/// path that does not exist is the file the first open creates. A symlink to nothing
/// is refused ([`SessionError::DanglingLink`]): what it names is never created, nor its
/// folder. Anything else that exists at the end (a FIFO, a directory, a device) is
/// refused before it is opened.
pub(crate) fn resolve(path: &Path) -> Result<PathBuf, SessionError> {
    let mut current = path.to_path_buf();
    for hop in 0..40 {
        let meta = match fs::symlink_metadata(&current) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound && hop == 0 => return Ok(current),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(SessionError::DanglingLink {
                    path: path.to_path_buf(),
                    target: current,
                });
            }
            Err(e) => return Err(io_error(path, "look at the session path")(e)),
        };
        let kind = meta.file_type();
        if kind.is_symlink() {
            let target = fs::read_link(&current).map_err(io_error(path, "read the symlink"))?;
            current = parent(&current).join(target);
            continue;
        }
        if kind.is_file() {
            return Ok(current);
        }
        return Err(SessionError::NotAFile {
            path: path.to_path_buf(),
            kind: kind_name(&kind),
        });
    }
    Err(io_error(path, "follow the symlinks")(io::Error::other(
        "more than 40 levels of symlinks",
    )))
}

fn kind_name(kind: &fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "FIFO";
        }
        if kind.is_socket() {
            return "socket";
        }
        if kind.is_block_device() || kind.is_char_device() {
            return "device";
        }
    }
    if kind.is_dir() {
        "directory"
    } else {
        "special file"
    }
}

/// `<prefix><name><suffix>` beside `path`.
pub(super) fn sibling(path: &Path, prefix: &str, suffix: &str) -> PathBuf {
    let mut name = std::ffi::OsString::from(prefix);
    name.push(path.file_name().unwrap_or_default());
    name.push(suffix);
    path.with_file_name(name)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a test fails at the first step that does
mod tests {
    use super::*;

    #[test]
    fn a_locked_file_is_the_same_only_while_its_path_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let file = File::create(&path).unwrap();
        assert!(still_there(&file, &path));
        fs::remove_file(&path).unwrap();
        assert!(!still_there(&file, &path), "a removed file is still there");
        // A rewrite's new file at the path: another inode while this one is open.
        File::create(&path).unwrap();
        assert!(!still_there(&file, &path), "a replaced file is still there");
    }

    #[test]
    fn paths_resolve_to_regular_files_and_say_why_not() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.jsonl");
        File::create(&file).unwrap();
        assert_eq!(parent(Path::new("s.jsonl")), Path::new("."));
        assert_eq!(parent(&file), dir.path());
        // Below a regular file: not "missing", an error naming what failed.
        let below = resolve(&file.join("x")).err().map(|e| e.to_string());
        assert!(
            below
                .as_deref()
                .is_some_and(|e| e.contains("look at the session path")),
            "{below:?}"
        );
        let device = resolve(Path::new("/dev/null")).err();
        assert!(
            matches!(device, Some(SessionError::NotAFile { kind: "device", .. })),
            "{device:?}"
        );
        let folder = resolve(dir.path()).err();
        assert!(
            matches!(
                folder,
                Some(SessionError::NotAFile {
                    kind: "directory",
                    ..
                })
            ),
            "{folder:?}"
        );
        // A symlink to nothing is not followed: neither its target nor the target's
        // folder is created.
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(dir.path().join("away/target.jsonl"), &link).unwrap();
        let dangling = resolve(&link).err();
        assert!(
            matches!(dangling, Some(SessionError::DanglingLink { ref target, .. }) if target.ends_with("away/target.jsonl")),
            "{dangling:?}"
        );
        // Through a second link too.
        let twice = dir.path().join("twice.jsonl");
        std::os::unix::fs::symlink(&link, &twice).unwrap();
        assert!(matches!(
            resolve(&twice),
            Err(SessionError::DanglingLink { .. })
        ));
        assert!(!dir.path().join("away").exists());
        // A link to a file that exists leads to it.
        let good = dir.path().join("good.jsonl");
        std::os::unix::fs::symlink(&file, &good).unwrap();
        assert_eq!(resolve(&good).unwrap(), file);
        // A file in a folder that does not exist cannot be created.
        let missing = open(&dir.path().join("nope/s.jsonl"))
            .err()
            .map(|e| e.to_string());
        assert!(
            missing
                .as_deref()
                .is_some_and(|e| e.contains("create the file")),
            "{missing:?}"
        );
    }
}
