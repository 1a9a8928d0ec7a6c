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

use crate::session::lock::still_there;
use crate::session::sql::rows::new_owner;

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
        if file.try_lock().is_ok() && still_there(&file, &path) {
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
            if still_there(&file, &path) {
                let _ = fs::remove_file(&path);
            }
            let _ = file.unlock();
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a test fails at the first step that does
mod tests {
    use super::*;

    /// A holder of a database in `dir`, and its token (the middle of its owners).
    fn holder(dir: &Path) -> (Holder, String) {
        let holder = Holder::new(&dir.join("db.sqlite"));
        let token = holder
            .prefix
            .split('/')
            .nth(1)
            .expect("a boot id and a lock file on this machine")
            .to_string();
        (holder, token)
    }

    #[test]
    fn an_owner_is_gone_only_when_its_lock_file_is_gone_or_free() {
        let dir = tempfile::tempdir().unwrap();
        let (me, _) = holder(dir.path());
        let (other, token) = holder(dir.path());
        let boot = me.boot.clone().unwrap();
        let owner = other.owner();
        // A live store of this process (its file locked by another open file).
        assert!(!me.gone(&owner), "a live holder's owner is gone");
        // Its own owners are never gone, whatever its lock file says.
        assert!(!me.gone(&me.owner()));
        let left = dir
            .path()
            .join("db.sqlite-owners")
            .join(format!("{boot}.{token}.lock"));
        assert!(left.is_file());
        // Once it stops, its file is removed: gone.
        drop(other);
        assert!(!left.exists(), "a stopped holder left its lock file");
        assert!(me.gone(&owner), "a stopped holder's owner is not gone");
        // A lock file left behind by a process that died, and not locked: gone.
        File::create(&left).unwrap();
        assert!(me.gone(&owner), "an unlocked lock file's owner is not gone");
        // The same file locked again (its holder alive): not gone.
        let file = File::open(&left).unwrap();
        file.lock().unwrap();
        assert!(!me.gone(&owner), "a locked lock file's owner is gone");
    }

    #[test]
    fn owners_of_another_boot_or_of_no_form_are_left_to_expire() {
        let dir = tempfile::tempdir().unwrap();
        let (me, token) = holder(dir.path());
        let boot = me.boot.clone().unwrap();
        // No lock file for these, so only the checks before it can say no.
        for owner in [
            format!("0000-other-boot/{token}x/1"),
            format!("{boot}/{token}x"),
            boot.clone(),
            format!("{boot}/../x/1"),
            format!("{boot}//1"),
            "an-older-brute-owner".to_string(),
        ] {
            assert!(!me.gone(&owner), "{owner} is gone");
        }
        // The same token under this boot is gone (its file is missing).
        assert!(me.gone(&format!("{boot}/{token}x/1")));
        // A holder without a boot id says no to everything.
        let blind = Holder {
            dir: me.dir.clone(),
            boot: None,
            lock: None,
            prefix: String::new(),
        };
        assert!(!blind.gone(&format!("{boot}/{token}x/1")));
    }

    #[test]
    fn a_holder_without_a_lock_file_still_sees_other_owners() {
        let dir = tempfile::tempdir().unwrap();
        let (me, token) = holder(dir.path());
        let boot = me.boot.clone().unwrap();
        // A store whose lock file could not be made has no prefix: no owner is its own.
        let unlocked = Holder {
            dir: me.dir.clone(),
            boot: Some(boot.clone()),
            lock: None,
            prefix: String::new(),
        };
        assert!(unlocked.gone(&format!("{boot}/{token}x/1")));
        assert!(!unlocked.gone(&me.owner()));
    }

    #[test]
    fn a_new_holder_sweeps_only_the_free_lock_files_of_this_boot() {
        let dir = tempfile::tempdir().unwrap();
        let (live, token) = holder(dir.path());
        let boot = live.boot.clone().unwrap();
        let owners = dir.path().join("db.sqlite-owners");
        let at = |name: &str| owners.join(name);
        // A free lock file of this boot (its process died), one of another boot, one
        // of this boot that is not a lock file, and the live holder's.
        for name in [
            format!("{boot}.dead-1.lock"),
            "0000-other-boot.dead-2.lock".to_string(),
            format!("{boot}.dead-3.txt"),
        ] {
            File::create(at(&name)).unwrap();
        }
        let (_next, _) = holder(dir.path());
        assert!(!at(&format!("{boot}.dead-1.lock")).exists(), "not swept");
        assert!(at("0000-other-boot.dead-2.lock").exists());
        assert!(at(&format!("{boot}.dead-3.txt")).exists());
        assert!(
            at(&format!("{boot}.{token}.lock")).exists(),
            "a live file swept"
        );
        assert!(!live.gone(&live.owner()));
    }
}
