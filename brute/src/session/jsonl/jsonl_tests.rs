//! The unit tests of the JSONL store's files other than its lines: sizes read from
//! the file (`retention_fs.rs`) and the running total beside it (`totals.rs`), when a
//! file is not what it should be.
#![allow(clippy::unwrap_used)] // a test fails at the first step that does

use super::*;

/// Fails unless `outcome` is an error whose text says `what`.
fn refused<T: std::fmt::Debug>(outcome: Result<T, SessionError>, what: &str) {
    let text = outcome.as_ref().err().map(ToString::to_string);
    assert!(
        text.as_ref().is_some_and(|e| e.contains(what)),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn a_session_file_that_cannot_be_read_is_an_error_not_a_size() {
    // A directory where the session's file should be: it opens, and reading it
    // fails (EISDIR) each time it is tried.
    let dir = tempfile::tempdir().unwrap();
    let store = JsonlStore::new(dir.path());
    std::fs::create_dir(store.path_of("s").unwrap()).unwrap();
    refused(store.size("s").await, "read the file to measure it");
}

#[tokio::test]
async fn an_unterminated_last_line_counts_as_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let store = JsonlStore::new(dir.path());
    let line = |m: &Message| serde_json::to_string(m).unwrap();
    let text = format!(
        "{}\n{}",
        line(&Message::user("a")),
        line(&Message::user("b"))
    );
    std::fs::write(store.path_of("s").unwrap(), &text).unwrap();
    let size = store.size("s").await.unwrap();
    assert_eq!((size.messages, size.bytes), (2, text.len() as u64));
}

#[tokio::test]
async fn a_store_whose_directory_is_not_there_yet_takes_no_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let store = JsonlStore::new(dir.path().join("not yet"));
    let size = store.store_size().await.unwrap();
    assert_eq!(
        size,
        StoreSize {
            disk_bytes: Some(0),
            ..StoreSize::default()
        }
    );
}

#[tokio::test]
async fn a_session_path_that_cannot_be_opened_is_an_error_not_a_size() {
    // A socket where the session's file should be: it exists, and opening it fails
    // (ENXIO), which no permission bit decides (root opens any file).
    let dir = tempfile::tempdir().unwrap();
    let store = JsonlStore::new(dir.path());
    let _socket = std::os::unix::net::UnixListener::bind(store.path_of("s").unwrap()).unwrap();
    refused(store.size("s").await, "open the file to measure it");
}

#[tokio::test]
async fn a_running_total_that_cannot_be_read_or_removed_is_an_error() {
    // A directory where the running total's file should be: reading it and removing
    // it as a file fail (EISDIR).
    let dir = tempfile::tempdir().unwrap();
    let store = JsonlStore::new(dir.path());
    let (mut lease, _) = store.open("s").await.unwrap();
    store
        .append(&mut lease, &[Message::user("hi")])
        .await
        .unwrap();
    store.release(lease).await.unwrap();
    let path = store.path_of("s").unwrap();
    std::fs::create_dir(totals::sidecar(&path)).unwrap();
    refused(
        store.load_spend("s").await,
        "read the session's running total",
    );
    refused(
        store.delete("s").await,
        "delete the session's running total",
    );
}

#[cfg(unix)]
#[tokio::test]
async fn a_session_that_is_a_symlink_to_nothing_is_refused_and_nothing_is_created() {
    use crate::middleware::SessionLog;
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("elsewhere/deep/target.jsonl");
    let store = JsonlStore::new(dir.path().join("sessions"));
    std::fs::create_dir_all(store.dir()).unwrap();
    std::os::unix::fs::symlink(&outside, store.path_of("s").unwrap()).unwrap();
    refused(store.open("s").await, "a symlink to");
    refused(store.load("s").await, "refusing to follow it");
    // A turn through `SessionLog`'s path is refused the same way, before anything runs.
    let agent = crate::brute_agent! {
        use SessionLog { path: store.path_of("s").unwrap() };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
    let error = agent.start("hello").await.err();
    assert!(
        matches!(
            error
                .as_ref()
                .and_then(|e| e.downcast_ref::<SessionError>()),
            Some(SessionError::DanglingLink { .. })
        ),
        "{error:?}"
    );
    assert!(
        !dir.path().join("elsewhere").exists(),
        "the target's folder was created"
    );
    // Deleting the session removes the link, never what it names.
    store.delete("s").await.unwrap();
    assert!(std::fs::symlink_metadata(store.path_of("s").unwrap()).is_err());
    assert!(!dir.path().join("elsewhere").exists());
}
