//! A SQLite session is free as soon as the process that held it is gone: a worker
//! process (this test binary, re-executed) is killed with SIGKILL in the middle of a
//! turn, and the next turn on its session succeeds at once, although the lease lasts
//! an hour; a lease of a live holder (another process, another store value of this
//! one) is still refused.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

use crate::kill_support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use brute::session::{SessionStore, SqliteStore};
use brute::{
    Env, Error, Message, Model, brute_agent, middleware::SessionLog, session::SessionError,
};
use kill_support::spawn_until;

const CHILD: &str = "BRUTE_TEST_SQLITE_CRASH_CHILD";
/// Long enough that only the holder's death can free a lease within the test.
const HOUR: Duration = Duration::from_secs(3600);
const HOLDING: &str = "holding the lease";

/// A model that says it is mid-turn (the lease held, the prompt stored) and never
/// answers.
struct Stuck;

impl Model for Stuck {
    async fn complete(&self, _env: &Env) -> Result<brute::Completion, Error> {
        println!("{HOLDING}");
        std::future::pending().await
    }
}

/// The worker: one turn on session `s` of the database at `db` that never ends.
fn child(db: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = SqliteStore::open(db).unwrap().lease_ttl(HOUR);
        let agent = brute_agent! {
            use SessionLog { store: store, session: "s" };
            run Stuck;
        };
        let _ = agent.start("killed mid-turn").await;
    });
}

/// A worker holding session `s` of `db` mid-turn.
fn worker(test: &str, db: &Path) -> kill_support::KillOnDrop {
    spawn_until(
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                crate::kill_support::test_name(module_path!(), test).as_str(),
                "--nocapture",
            ])
            .env(CHILD, db),
        HOLDING,
    )
}

fn leased(result: Result<impl Sized, SessionError>) -> bool {
    matches!(result, Err(SessionError::Leased { .. }))
}

#[test]
fn a_killed_process_frees_its_sqlite_session_at_once_and_a_live_one_keeps_it() {
    if let Ok(db) = std::env::var(CHILD) {
        return child(&db);
    }
    let test = "a_killed_process_frees_its_sqlite_session_at_once_and_a_live_one_keeps_it";
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = SqliteStore::open(&db).unwrap().lease_ttl(HOUR);
        let mut holder = worker(test, &db);
        // Alive: refused, for the turn and for a delete.
        assert!(leased(store.open("s").await));
        assert!(leased(store.delete("s").await));
        holder.kill(); // SIGKILL, reaped
        // Gone: the next turn succeeds on its first try.
        let agent = brute_agent! {
            use SessionLog { store: store.clone(), session: "s" };
            run |_env| async { Ok(Message::assistant("after the crash")) };
        };
        let outcome = agent.start("next").await.unwrap();
        assert_eq!(outcome.text(), Some("after the crash"));
        let stored = store.load("s").await.unwrap();
        assert_eq!(stored.last(), Some(&Message::assistant("after the crash")));
        // A second crash, then a delete: free as well.
        let mut holder = worker(test, &db);
        holder.kill();
        store.delete("s").await.unwrap();
        assert_eq!(store.load("s").await.unwrap(), []);
    });
}

#[test]
fn another_store_of_this_process_keeps_its_sqlite_lease() {
    if std::env::var(CHILD).is_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let first = SqliteStore::open(&db).unwrap().lease_ttl(HOUR);
        let second = SqliteStore::open(&db).unwrap().lease_ttl(HOUR);
        let (lease, _) = first.open("s").await.unwrap();
        assert!(leased(second.open("s").await));
        assert!(leased(second.delete("s").await));
        first.release(lease).await.unwrap();
        let (lease, _) = second.open("s").await.unwrap();
        second.release(lease).await.unwrap();
    });
}
