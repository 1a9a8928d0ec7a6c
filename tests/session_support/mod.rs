//! Test support for the session stores: the private PostgreSQL server of
//! `postgres_support` (started once per test binary by `.ci/postgres.sh`, and stopped
//! when the binary exits; `cargo xtask test` installs PostgreSQL before the tests run), fresh databases on
//! it, and stores of each kind.
//!
//! Tests that use it FAIL when PostgreSQL cannot be started: they never skip.

#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};

/// A fresh temporary folder path (for SQLite databases and JSONL stores).
pub fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// The path of a SQLite database in `dir`.
pub fn sqlite_path(dir: &Path) -> PathBuf {
    dir.join("sessions.db")
}

/// One of brute's stores, chosen by name (`jsonl`, `sqlite`, `postgres`) in a test and
/// in the worker processes it starts.
#[derive(Clone)]
pub enum AnyStore {
    /// `JsonlStore` in a folder.
    Jsonl(std::sync::Arc<brute::session::JsonlStore>),
    /// `SqliteStore` in a database file.
    Sqlite(std::sync::Arc<brute::session::SqliteStore>),
    /// `PostgresStore` on a database.
    Postgres(std::sync::Arc<brute::session::PostgresStore>),
}

impl AnyStore {
    /// The store `kind` at `target` (a folder, a database file, a connection string),
    /// with leases of `ttl` for the database stores.
    pub async fn open(kind: &str, target: &str, ttl: std::time::Duration) -> AnyStore {
        use brute::session::{JsonlStore, PostgresStore, SqliteStore};
        use std::sync::Arc;
        match kind {
            "jsonl" => AnyStore::Jsonl(Arc::new(JsonlStore::new(target))),
            "sqlite" => {
                AnyStore::Sqlite(Arc::new(SqliteStore::open(target).unwrap().lease_ttl(ttl)))
            }
            "postgres" => AnyStore::Postgres(Arc::new(
                PostgresStore::connect(target).await.unwrap().lease_ttl(ttl),
            )),
            other => panic!("unknown store {other}"),
        }
    }

    /// A handle for `SessionLog`.
    pub fn store(&self) -> brute::session::Store {
        match self {
            AnyStore::Jsonl(s) => s.clone().into(),
            AnyStore::Sqlite(s) => s.clone().into(),
            AnyStore::Postgres(s) => s.clone().into(),
        }
    }

    /// The stored messages of `id`, as they are (no lease, no repair).
    pub async fn load(&self, id: &str) -> Vec<brute::Message> {
        use brute::session::SessionStore;
        match self {
            AnyStore::Jsonl(s) => s.load(id).await,
            AnyStore::Sqlite(s) => s.load(id).await,
            AnyStore::Postgres(s) => s.load(id).await,
        }
        .unwrap()
    }
}

/// Starts turns with `start` until one is not refused because its session is held by
/// another worker (the lease or lock of a worker killed a moment ago, freed when the
/// store sees it dead or its lease expires), and returns that turn's result. Between
/// tries it waits a short poll interval, not a limit: on a busy machine it only tries
/// fewer times, and the caller's own deadline catches a session that never frees.
pub async fn start_when_free<T, F, Fut>(mut start: F) -> Result<T, brute::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, brute::Error>>,
{
    use brute::session::SessionError;
    loop {
        match start().await {
            Err(e)
                if matches!(
                    e.downcast_ref(),
                    Some(SessionError::Leased { .. } | SessionError::Locked { .. })
                ) =>
            {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            other => return other,
        }
    }
}

// The binaries that include this module declare these two beside it (once each, so that
// one PostgreSQL server serves the whole binary).
// Not every binary that includes this module names the server itself.
#[allow(unused_imports)]
pub use crate::postgres_support::{postgres_database, postgres_server};
// Not every binary that includes this module kills children.
#[allow(unused_imports)]
pub use crate::kill_support::{KillOnDrop, kill_after_acks};
