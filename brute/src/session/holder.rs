//! Who holds a SQLite lease on this machine, and whether they are still alive.
//!
//! Each `SqliteStore::open` holds an OS lock (`flock`) on a file of its own beside the
//! database, `<db>-owners/<boot>.<token>.lock`, for as long as its writer thread runs;
//! the OS frees it the moment the process dies. Its lease owners start with
//! `<boot>/<token>/`, where `<boot>` is the kernel's boot id. A lease whose owner has
//! this boot id (the same running kernel, so the same locks) and whose lock file is
//! gone or can be locked belongs to a process that is gone: it may be taken at once.
//! Any other owner (another machine, an earlier boot, an older brute, a system without
//! a boot id) is left to the lease's expiry.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use super::rows::new_owner;

/// This store's identity on this machine: its locked file, and the prefix of its
/// lease owners. Dropped when the writer thread ends (the file is removed).
#[derive(Debug)]
pub(crate) struct Holder {
    /// The folder of the lock files.
    dir: PathBuf,
    /// The kernel's boot id, if known.
    boot: Option<String>,
    /// The locked file and its path, if one could be made.
    lock: Option<(File, PathBuf)>,
    /// What this store's owners start with (empty without a lock).
    prefix: String,
}

impl Holder {
    /// The holder of a store of the database at `db`. Without a boot id or a lock
    /// file (a read-only folder), its leases only expire, as before.
    pub(crate) fn new(db: &Path) -> Holder {
        let mut dir = db.as_os_str().to_owned();
        dir.push("-owners");
        let dir = PathBuf::from(dir);
        let boot = fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .ok()
            .map(|id| id.trim().to_string())
            .filter(|id| valid(id));
        let mut holder = Holder {
            dir,
            boot,
            lock: None,
            prefix: String::new(),
        };
        if let Some(boot) = holder.boot.clone() {
            sweep(&holder.dir, &boot);
            match lock_new(&holder.dir, &boot) {
                Ok((file, path, token)) => {
                    holder.prefix = format!("{boot}/{token}/");
                    holder.lock = Some((file, path));
                }
                Err(e) => tracing::warn!(
                    folder = %holder.dir.display(),
                    error = %e,
                    "cannot make a lock file for the SQLite store's leases: a crashed process's sessions stay leased until their lease expires"
                ),
            }
        }
        holder
    }

    /// A new lease owner of this store.
    pub(crate) fn owner(&self) -> String {
        format!("{}{}", self.prefix, new_owner())
    }

    /// Whether `owner` is provably gone: a store of this running kernel whose lock
    /// file is gone or free.
    pub(crate) fn gone(&self, owner: &str) -> bool {
        let Some(boot) = &self.boot else {
            return false;
        };
        let mut parts = owner.splitn(3, '/');
        let (Some(their_boot), Some(token), Some(_)) = (parts.next(), parts.next(), parts.next())
        else {
            return false;
        };
        if their_boot != boot
            || !valid(token)
            || (!self.prefix.is_empty() && owner.starts_with(&self.prefix))
        {
            return false;
        }
        let path = self.dir.join(format!("{boot}.{token}.lock"));
        match File::open(&path) {
            // A file is removed only once its holder has stopped or died.
            Err(e) => e.kind() == io::ErrorKind::NotFound,
            Ok(file) => match file.try_lock_shared() {
                Ok(()) => {
                    let _ = file.unlock();
                    true
                }
                Err(_) => false,
            },
        }
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        if let Some((file, path)) = self.lock.take() {
            let _ = fs::remove_file(&path);
            let _ = file.unlock();
        }
    }
}

/// Whether `text` may be part of a lock file's name: letters, digits and `-`.
fn valid(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// Creates and locks a lock file of a new token in `dir` (created if missing).
fn lock_new(dir: &Path, boot: &str) -> io::Result<(File, PathBuf, String)> {
    match fs::create_dir(dir) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
        _ => {}
    }
    for _ in 0..16 {
        let token = new_owner();
        let path = dir.join(format!("{boot}.{token}.lock"));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        if file.try_lock().is_ok() && same_file(&file, &path) {
            return Ok((file, path, token));
        }
        // A sweep took it between its creation and the lock: another token.
    }
    Err(io::Error::other("lock files were swept away 16 times"))
}

/// Removes the lock files of `boot` in `dir` whose holder is gone.
fn sweep(dir: &Path, boot: &str) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let start = format!("{boot}.");
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.starts_with(&start) || !name.ends_with(".lock") {
            continue;
        }
        let path = entry.path();
        let Ok(file) = OpenOptions::new().read(true).write(true).open(&path) else {
            continue;
        };
        if file.try_lock().is_ok() {
            if same_file(&file, &path) {
                let _ = fs::remove_file(&path);
            }
            let _ = file.unlock();
        }
    }
}

/// Whether `file` is still the file at `path`.
#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), fs::metadata(path)) {
        (Ok(open), Ok(named)) => open.ino() == named.ino() && open.dev() == named.dev(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_file: &File, path: &Path) -> bool {
    path.exists()
}
