//! The JSONL store's lease: an OS lock on `<session>.lock`, which exists only while a
//! turn holds the session, and which the OS frees when the holder dies.

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};

use super::error::{SessionError, io_error};

/// The session's OS lock. Released by an explicit unlock on drop rather than by
/// closing: a child process spawned by another thread holds a copy of every descriptor
/// between its fork and its exec, and a lock released only by closing would stay held
/// until that exec (a spurious "session is locked" for the next turn). The lock file is
/// removed on release, before the unlock, so no lock file stays behind.
#[derive(Debug)]
pub(crate) struct LockGuard {
    file: File,
    path: PathBuf,
}

impl LockGuard {
    /// Locks `lock` (the lock file of `session`), or fails with
    /// [`SessionError::Locked`] when another holder has it.
    pub(crate) fn acquire(session: &Path, lock: &Path) -> Result<LockGuard, SessionError> {
        // A holder releasing removes the file and then unlocks: a lock taken on a file
        // that was removed meanwhile protects nothing, so take it again on the new one.
        for _ in 0..64 {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(lock)
                .map_err(io_error(lock, "open the lock file"))?;
            match file.try_lock() {
                Ok(()) => {}
                Err(fs::TryLockError::WouldBlock) => {
                    return Err(SessionError::Locked {
                        path: session.to_path_buf(),
                        lock: lock.to_path_buf(),
                    });
                }
                Err(fs::TryLockError::Error(e)) => {
                    return Err(io_error(lock, "lock the session")(e));
                }
            }
            if still_there(&file, lock) {
                return Ok(LockGuard {
                    file,
                    path: lock.to_path_buf(),
                });
            }
            let _ = file.unlock();
        }
        Err(SessionError::Locked {
            path: session.to_path_buf(),
            lock: lock.to_path_buf(),
        })
    }
}

/// Whether `file` is still the file at `path` (not removed or replaced since it was
/// opened).
#[cfg(unix)]
fn still_there(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), fs::metadata(path)) {
        (Ok(open), Ok(named)) => open.ino() == named.ino() && open.dev() == named.dev(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn still_there(_file: &File, path: &Path) -> bool {
    path.exists()
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        // Removed while still locked: whoever opens the path next gets a new file.
        #[cfg(unix)]
        let _ = fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}
