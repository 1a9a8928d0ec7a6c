//! Per-file locks: calls that change the same file run one after the other.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// One async mutex per file path, removed when nobody holds or waits for it.
#[derive(Default, Debug)]
pub(crate) struct PathLocks {
    map: Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
}

/// Holds the lock of one path.
pub(crate) struct PathGuard<'a> {
    guard: Option<tokio::sync::OwnedMutexGuard<()>>,
    locks: &'a PathLocks,
    path: PathBuf,
}

impl PathLocks {
    /// Waits for the lock of `path` (first come, first served).
    pub(crate) async fn lock(&self, path: &Path) -> PathGuard<'_> {
        let mutex = self
            .map
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(path.to_path_buf())
            .or_default()
            .clone();
        PathGuard {
            guard: Some(mutex.lock_owned().await),
            locks: self,
            path: path.to_path_buf(),
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.map
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

impl Drop for PathGuard<'_> {
    fn drop(&mut self) {
        drop(self.guard.take());
        let mut map = self
            .locks
            .map
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if map
            .get(&self.path)
            .is_some_and(|m| Arc::strong_count(m) == 1)
        {
            map.remove(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn locks_serialise_and_clean_up() {
        let locks = PathLocks::default();
        let a = Path::new("/x/a");
        {
            let _g = locks.lock(a).await;
            assert_eq!(locks.len(), 1);
            let _b = locks.lock(Path::new("/x/b")).await;
            assert_eq!(locks.len(), 2);
        }
        assert_eq!(locks.len(), 0);
    }
}
