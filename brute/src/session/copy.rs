//! `copy_sessions`: moves sessions from one store to another (JSONL → SQLite →
//! PostgreSQL, or back).

use crate::session::error::SessionError;
use crate::session::store::SessionStore;

/// Copies every session of `from` into `to`, replacing a session of the same id
/// there, and returns how many were copied. Each session is copied under the lease of
/// both stores, so a turn running meanwhile waits for neither and is never half
/// copied: it fails with [`SessionError::Locked`] or [`SessionError::Leased`] (and so
/// does the copy, if it comes first).
///
/// ```
/// use brute::session::{copy_sessions, JsonlStore, SessionStore};
/// use brute::Message;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// # let base = std::env::temp_dir().join(format!("brute-doc-copy-{}", std::process::id()));
/// let old = JsonlStore::new(base.join("old"));
/// let (mut lease, _) = old.open("alice").await?;
/// old.append(&mut lease, &[Message::user("hi"), Message::assistant("hello")]).await?;
/// old.release(lease).await?;
///
/// let new = JsonlStore::new(base.join("new"));
/// assert_eq!(copy_sessions(&old, &new).await?, 1);
/// assert_eq!(new.load("alice").await?.len(), 2);
/// # std::fs::remove_dir_all(&base).ok();
/// # Ok::<(), brute::session::SessionError>(()) }).unwrap();
/// ```
pub async fn copy_sessions<F: SessionStore, T: SessionStore>(
    from: &F,
    to: &T,
) -> Result<usize, SessionError> {
    let ids = from.list().await?;
    for id in &ids {
        let (source, messages) = from.open(id).await?;
        let copied = async {
            let (mut target, _) = to.open(id).await?;
            let replaced = to.replace(&mut target, &messages).await;
            let released = to.release(target).await;
            replaced.and(released)
        }
        .await;
        let released = from.release(source).await;
        copied.and(released)?;
    }
    Ok(ids.len())
}
