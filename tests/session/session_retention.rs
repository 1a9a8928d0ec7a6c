//! Retention and size on every store (JSONL, SQLite, PostgreSQL): the size of a
//! session and of the store, deleting sessions past an age or a count (oldest first,
//! never one a turn holds), and pruning old history into an archive that sees what
//! goes. PostgreSQL runs for real (see `session_support`): these tests fail, never
//! skip, without it.

#![allow(clippy::unwrap_used)]

use crate::session_support;

use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use brute::session::{
    BoxStore, JsonlStore, PostgresStore, Retention, SessionError, SessionStore, SqliteStore,
};
use brute::session::{RetentionError, discard};
use brute::{BoxError, Message, ToolCall};
use serde_json::json;
use session_support::{postgres_database, sqlite_path, temp_dir};

/// Stores `messages` as session `id`.
async fn write<S: SessionStore>(store: &S, id: &str, messages: &[Message]) {
    let (mut lease, _) = store.open(id).await.unwrap();
    store.append(&mut lease, messages).await.unwrap();
    store.release(lease).await.unwrap();
}

fn exchange(n: usize) -> Vec<Message> {
    (0..n)
        .flat_map(|i| {
            [
                Message::user(format!("question {i}")),
                Message::assistant(format!("answer {i}")),
            ]
        })
        .collect()
}

fn is_refused(error: &SessionError) -> bool {
    matches!(
        error,
        SessionError::Locked { .. } | SessionError::Leased { .. }
    )
}

/// The promises of every store; `age` sets a session's last write.
async fn retention<S: SessionStore>(store: &S, age: impl Fn(&str, SystemTime)) {
    write(store, "a", &exchange(2)).await;
    write(store, "b", &exchange(1)).await;
    write(store, "c", &exchange(3)).await;

    // Sizes: messages exactly; bytes at least the JSON of the messages.
    let size = store.size("a").await.unwrap();
    assert_eq!(size.messages, 4);
    let json: u64 = exchange(2)
        .iter()
        .map(|m| serde_json::to_string(m).unwrap().len() as u64)
        .sum();
    assert!(
        (json..=json + 4).contains(&size.bytes),
        "{size:?} for {json} bytes of JSON"
    );
    assert_eq!(store.size("nobody").await.unwrap().messages, 0);
    let sessions = store.sessions().await.unwrap();
    let listed: Vec<(&str, u64)> = sessions
        .iter()
        .map(|s| (s.id.as_str(), s.size.messages))
        .collect();
    assert_eq!(listed, [("a", 4), ("b", 2), ("c", 6)]);
    assert!(sessions.iter().all(|s| s.updated.is_some()), "{sessions:?}");
    let total = store.store_size().await.unwrap();
    assert_eq!((total.sessions, total.messages), (3, 12));
    assert_eq!(
        total.bytes,
        sessions.iter().map(|s| s.size.bytes).sum::<u64>()
    );
    assert!(total.disk_bytes.unwrap() >= total.bytes, "{total:?}");

    // Ages: a three hours, b two, c one.
    let now = SystemTime::now();
    let hours = |h: u64| now - Duration::from_secs(h * 3600);
    age("a", hours(3));
    age("b", hours(2));
    age("c", hours(1));

    // Older than 90 minutes: a and b; b's lease is held, so it stays.
    let (held, _) = store.open("b").await.unwrap();
    let policy = Retention::new()
        .max_age(Duration::from_secs(90 * 60))
        .now(now);
    let report = store.retain(&policy).await.unwrap();
    assert_eq!(report.deleted, ["a"]);
    assert_eq!(report.skipped, ["b"]);
    assert_eq!(report.kept, 2);
    assert_eq!(store.list().await.unwrap(), ["b", "c"]);
    store.release(held).await.unwrap();

    // At most one session: the oldest (b) goes.
    let report = store
        .retain(&Retention::new().max_sessions(1).now(now))
        .await
        .unwrap();
    assert_eq!(report.deleted, ["b"]);
    assert_eq!(store.list().await.unwrap(), ["c"]);
    assert_eq!(store.store_size().await.unwrap().messages, 6);
    // A write makes a session new again (the file's time; the databases' triggers).
    age("c", hours(5));
    write(store, "c", &[Message::user("back")]).await;
    let c = store.sessions().await.unwrap();
    assert!(c[0].updated.unwrap() > hours(5), "{c:?}");
    // Nothing is past either limit now.
    let report = store
        .retain(
            &Retention::new()
                .max_sessions(1)
                .max_age(Duration::from_secs(90 * 60))
                .now(now),
        )
        .await
        .unwrap();
    assert!(report.deleted.is_empty(), "{report:?}");
}

/// A history with a tool call: pruning never splits it from its result.
fn with_tools() -> Vec<Message> {
    vec![
        Message::user("list the files"),
        Message::tool_calls("", vec![ToolCall::new("c1", "ls", json!({}))]),
        Message::tool_result("c1", "a.txt"),
        Message::assistant("one file"),
        Message::user("read it"),
        Message::tool_calls("", vec![ToolCall::new("c2", "read", json!({}))]),
        Message::tool_result("c2", "hello"),
        Message::assistant("it says hello"),
        Message::user("thanks"),
        Message::assistant("welcome"),
    ]
}

async fn pruning<S: SessionStore>(store: &S) {
    let history = with_tools();
    write(store, "p", &history).await;

    // The archive refuses: nothing goes.
    let refuse =
        |_: &str, _: &[Message]| -> Result<(), BoxError> { Err("the archive disk is full".into()) };
    let error = store.prune("p", 3, &refuse).await.unwrap_err();
    assert!(
        matches!(
            &error,
            SessionError::Retention(RetentionError::Archive { session, messages: 8, .. }) if session == "p"
        ),
        "{error:?}"
    );
    assert_eq!(store.load("p").await.unwrap(), history);

    // A turn holds the session: refused, nothing goes.
    let (held, _) = store.open("p").await.unwrap();
    let error = store.prune("p", 3, &discard).await.unwrap_err();
    assert!(is_refused(&error), "{error:?}");
    store.release(held).await.unwrap();

    // Keep at most 6: the cut falls before a user message ("read it"), so each call
    // stays with its result.
    let archived = Mutex::new(Vec::new());
    let archive = |session: &str, removed: &[Message]| {
        assert_eq!(session, "p");
        archived.lock().unwrap().extend_from_slice(removed);
        Ok(())
    };
    assert_eq!(store.prune("p", 6, &archive).await.unwrap(), 4);
    assert_eq!(*archived.lock().unwrap(), history[..4]);
    assert_eq!(store.load("p").await.unwrap(), history[4..]);
    // The session goes on after a prune.
    let (mut lease, loaded) = store.open("p").await.unwrap();
    assert_eq!(loaded, history[4..]);
    store
        .append(&mut lease, &[Message::user("more")])
        .await
        .unwrap();
    store.release(lease).await.unwrap();
    assert_eq!(store.size("p").await.unwrap().messages, 7);
    // Within the limit: nothing to prune, and the archive is not called.
    assert_eq!(store.prune("p", 100, &archive).await.unwrap(), 0);
    assert_eq!(archived.lock().unwrap().len(), 4);
    // Keep 0: the last exchange always stays.
    assert_eq!(store.prune("p", 0, &discard).await.unwrap(), 6);
    assert_eq!(store.load("p").await.unwrap(), [Message::user("more")]);
}

fn set_mtime(dir: &std::path::Path) -> impl Fn(&str, SystemTime) + '_ {
    move |id, at| {
        let file = std::fs::File::options()
            .write(true)
            .open(dir.join(format!("{id}.jsonl")))
            .unwrap();
        file.set_modified(at).unwrap();
    }
}

fn ms(at: SystemTime) -> i64 {
    i64::try_from(at.duration_since(UNIX_EPOCH).unwrap().as_millis()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsonl_sizes_retention_and_pruning() {
    let dir = temp_dir();
    let store = JsonlStore::new(dir.path());
    retention(&store, set_mtime(dir.path())).await;
    // A JSONL session's bytes are its file's.
    let on_disk = std::fs::metadata(dir.path().join("c.jsonl")).unwrap().len();
    assert_eq!(store.size("c").await.unwrap().bytes, on_disk);
    pruning(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_sizes_retention_and_pruning() {
    let dir = temp_dir();
    let path = sqlite_path(dir.path());
    let store = SqliteStore::open(&path).unwrap();
    let db = rusqlite::Connection::open(&path).unwrap();
    db.busy_timeout(Duration::from_secs(10)).unwrap();
    retention(&store, |id, at| {
        let rows = db
            .execute(
                "UPDATE brute_activity SET at = ?1 WHERE session = ?2",
                rusqlite::params![ms(at), id],
            )
            .unwrap();
        assert_eq!(rows, 1, "session {id} has its time");
    })
    .await;
    pruning(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(feature = "services"),
    ignore = "needs PostgreSQL: cargo xtask test"
)]
async fn postgres_sizes_retention_and_pruning() {
    let url = postgres_database("retention");
    let store = PostgresStore::connect(&url).await.unwrap();
    retention(&store, |id, at| {
        let sql = format!(
            "UPDATE brute_activity SET at = to_timestamp({} / 1000.0) WHERE session = '{id}'",
            ms(at)
        );
        let out = std::process::Command::new("psql")
            .args(["-q", "-t", &url, "-c", &sql])
            .output()
            .unwrap();
        assert!(
            out.status.success() && String::from_utf8_lossy(&out.stdout).trim().is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    })
    .await;
    pruning(&store).await;
    // A second connect finds the triggers in place.
    let again = PostgresStore::connect(&url).await.unwrap();
    assert_eq!(again.store_size().await.unwrap().sessions, 2);
}

/// A `BoxStore` reaches the store's own sizes and times (not the loading default).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_box_store_forwards_sizes_and_times() {
    let dir = temp_dir();
    let store = BoxStore::new(JsonlStore::new(dir.path()));
    write(&store, "x", &exchange(1)).await;
    let sessions = store.sessions().await.unwrap();
    assert!(sessions[0].updated.is_some(), "{sessions:?}");
    assert!(store.store_size().await.unwrap().disk_bytes.is_some());
}
