//! The undo store: prior states of the files tools changed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use super::sandbox::Sandbox;

/// Snapshots kept per file; older ones are dropped.
const MAX_SNAPSHOTS: usize = 50;

/// The prior states of changed files, newest last per file, for `undo` (the last 50
/// per file). Files are read beneath the sandbox's root handle, so a snapshot never
/// holds a file from outside the root.
#[derive(Default, Debug)]
pub struct SnapshotStore {
    stacks: Mutex<HashMap<PathBuf, Vec<Option<Vec<u8>>>>>,
}

impl SnapshotStore {
    /// Records the current state of the file at `path` (absolute inside the root, as
    /// [`Sandbox::resolve`] gives it; `None` if it does not exist). Directories, and
    /// files that cannot be read beneath the root, are not recorded; returns whether a
    /// snapshot was taken.
    pub fn save(&self, sandbox: &Sandbox, path: &Path) -> bool {
        let state = match sandbox.is_dir(path) {
            Ok(Some(false)) => match sandbox.read(path) {
                Ok(bytes) => Some(bytes),
                Err(_) => return false,
            },
            Ok(None) => None,
            Ok(Some(true)) | Err(_) => return false,
        };
        let mut stacks = self.lock();
        let stack = stacks.entry(path.to_path_buf()).or_default();
        if stack.len() == MAX_SNAPSHOTS {
            stack.remove(0);
        }
        stack.push(state);
        true
    }

    /// Takes the newest snapshot of `path`: `Some(None)` if the file did not exist.
    pub fn pop(&self, path: &Path) -> Option<Option<Vec<u8>>> {
        let mut stacks = self.lock();
        let stack = stacks.get_mut(path)?;
        let state = stack.pop();
        if stack.is_empty() {
            stacks.remove(path);
        }
        state
    }

    /// How many snapshots of `path` there are.
    pub fn depth(&self, path: &Path) -> usize {
        self.lock().get(path).map_or(0, Vec::len)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Vec<Option<Vec<u8>>>>> {
        self.stacks.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn snapshots_stack_per_file() {
        let dir = tempfile::tempdir().unwrap();
        let sandbox = Sandbox::new(dir.path()).unwrap();
        let file = sandbox.root().join("f.txt");
        let store = SnapshotStore::default();
        assert!(store.save(&sandbox, &file));
        std::fs::write(&file, "one").unwrap();
        assert!(store.save(&sandbox, &file));
        assert!(!store.save(&sandbox, sandbox.root()));
        assert_eq!(store.depth(&file), 2);
        assert_eq!(store.pop(&file), Some(Some(b"one".to_vec())));
        assert_eq!(store.pop(&file), Some(None));
        assert_eq!(store.pop(&file), None);
        for _ in 0..MAX_SNAPSHOTS + 5 {
            store.save(&sandbox, &file);
        }
        assert_eq!(store.depth(&file), MAX_SNAPSHOTS);
    }
}
