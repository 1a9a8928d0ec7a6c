//! Fork and rewind on every store (JSONL, SQLite, PostgreSQL): a session copied up to
//! a message into a new one, or cut back to one under its lease; a point between a
//! tool call and its result is refused with the position and the call id.
//! PostgreSQL runs for real (see `session_support`): these tests fail, never skip,
//! without it.

#![allow(clippy::unwrap_used)]

use crate::session_support;

use brute::session::{
    BoxStore, ForkError, JsonlStore, PostgresStore, SessionError, SessionStore, SqliteStore,
};
use brute::{Message, ToolCall};
use serde_json::json;
use session_support::{postgres_database, sqlite_path, temp_dir};

fn history() -> Vec<Message> {
    vec![
        Message::user("list the files"),
        Message::tool_calls(
            "",
            vec![
                ToolCall::new("c1", "ls", json!({})),
                ToolCall::new("c2", "pwd", json!({})),
            ],
        ),
        Message::tool_result("c1", "a.txt"),
        Message::tool_result("c2", "/src"),
        Message::assistant("one file in /src"),
        Message::user("thanks"),
        Message::assistant("welcome"),
    ]
}

fn is_refused(error: &SessionError) -> bool {
    matches!(
        error,
        SessionError::Locked { .. } | SessionError::Leased { .. }
    )
}

async fn fork_and_rewind<S: SessionStore>(store: &S) {
    let history = history();
    let (mut lease, _) = store.open("main").await.unwrap();
    store.append(&mut lease, &history).await.unwrap();
    store.release(lease).await.unwrap();

    // Between the call and its results, or between the two results: refused, with
    // the position and the call whose result would be cut off.
    for (at, call) in [(2, "c1"), (3, "c2")] {
        let error = store.fork("main", at, "side").await.unwrap_err();
        match &error {
            SessionError::Fork(ForkError::SplitsToolCall {
                session,
                position,
                call_id,
            }) => assert_eq!(
                (session.as_str(), *position, call_id.as_str()),
                ("main", at, call)
            ),
            other => panic!("{other:?}"),
        }
        let text = error.to_string();
        assert!(
            text.contains(&format!("position {at}")) && text.contains(call),
            "{text}"
        );
        assert!(
            store.load("side").await.unwrap().is_empty(),
            "nothing forked"
        );
    }
    let error = store.fork("main", 8, "side").await.unwrap_err();
    assert!(
        matches!(
            error,
            SessionError::Fork(ForkError::PastEnd {
                position: 8,
                len: 7,
                ..
            })
        ),
        "{error:?}"
    );
    let error = store.fork("main", 2, "main").await.unwrap_err();
    assert!(
        matches!(error, SessionError::Fork(ForkError::SameSession { .. })),
        "{error:?}"
    );

    // A fork after the results copies them, and leaves the session as it was; it
    // works while a turn holds the session.
    let (held, _) = store.open("main").await.unwrap();
    assert_eq!(store.fork("main", 5, "side").await.unwrap(), 5);
    store.release(held).await.unwrap();
    assert_eq!(store.load("side").await.unwrap(), history[..5]);
    assert_eq!(store.load("main").await.unwrap(), history);
    assert!(store.list().await.unwrap().contains(&"side".to_string()));
    // A fork never overwrites a session.
    let error = store.fork("main", 1, "side").await.unwrap_err();
    assert!(
        matches!(
            error,
            SessionError::Fork(ForkError::TargetExists { len: 5, .. })
        ),
        "{error:?}"
    );
    assert_eq!(store.load("side").await.unwrap(), history[..5]);
    // The fork goes its own way.
    let (mut lease, loaded) = store.open("side").await.unwrap();
    assert_eq!(loaded, history[..5]);
    store
        .append(&mut lease, &[Message::user("and in /tmp?")])
        .await
        .unwrap();
    store.release(lease).await.unwrap();
    assert_eq!(store.load("main").await.unwrap(), history);

    // Rewind: refused mid-call, refused while a turn holds the session.
    let error = store.rewind("main", 2).await.unwrap_err();
    assert!(
        matches!(&error, SessionError::Fork(ForkError::SplitsToolCall { position: 2, call_id, .. }) if call_id == "c1"),
        "{error:?}"
    );
    let (held, _) = store.open("main").await.unwrap();
    let error = store.rewind("main", 5).await.unwrap_err();
    assert!(is_refused(&error), "{error:?}");
    store.release(held).await.unwrap();
    assert_eq!(store.load("main").await.unwrap(), history);

    // Rewind to 5: the last exchange goes, and comes back to the caller.
    let removed = store.rewind("main", 5).await.unwrap();
    assert_eq!(removed, history[5..]);
    assert_eq!(store.load("main").await.unwrap(), history[..5]);
    // The session goes on from there.
    let (mut lease, loaded) = store.open("main").await.unwrap();
    assert_eq!(loaded, history[..5]);
    store
        .append(&mut lease, &[Message::user("again")])
        .await
        .unwrap();
    store.release(lease).await.unwrap();
    let mut expected = history[..5].to_vec();
    expected.push(Message::user("again"));
    assert_eq!(store.load("main").await.unwrap(), expected);
    // Rewind to 0 empties it; to the end changes nothing.
    assert_eq!(store.rewind("side", 6).await.unwrap(), []);
    assert_eq!(store.load("side").await.unwrap().len(), 6);
    assert_eq!(store.rewind("main", 0).await.unwrap(), expected);
    assert!(store.load("main").await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsonl_fork_and_rewind() {
    let dir = temp_dir();
    fork_and_rewind(&JsonlStore::new(dir.path())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_fork_and_rewind() {
    let dir = temp_dir();
    fork_and_rewind(&SqliteStore::open(sqlite_path(dir.path())).unwrap()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(feature = "services"),
    ignore = "needs PostgreSQL: cargo xtask test"
)]
async fn postgres_fork_and_rewind() {
    let url = postgres_database("fork");
    fork_and_rewind(&PostgresStore::connect(&url).await.unwrap()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_box_store_forks_and_rewinds() {
    let dir = temp_dir();
    fork_and_rewind(&BoxStore::new(JsonlStore::new(dir.path()))).await;
}
