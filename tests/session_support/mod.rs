//! Test support for the session stores: a private PostgreSQL server, started once per
//! test binary (by `.ci/postgres.sh`, which installs PostgreSQL if it is missing) and
//! stopped when the binary exits, and fresh databases on it.
//!
//! Tests that use it FAIL when PostgreSQL cannot be started: they never skip.

#![allow(dead_code, clippy::unwrap_used)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The server of this test binary: `host=127.0.0.1 port=..`. Started on first use;
/// a watcher started with it stops it and removes its folder when this process exits.
pub fn postgres_server() -> &'static str {
    static SERVER: OnceLock<String> = OnceLock::new();
    SERVER.get_or_init(|| {
        if let Ok(url) = std::env::var("BRUTE_TEST_POSTGRES") {
            // A worker process of a test gets its parent's server.
            return url;
        }
        let dir = std::env::temp_dir().join(format!(
            "brute-pg-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/postgres.sh");
        let output = Command::new("bash")
            .arg(&script)
            .arg("start")
            .arg(&dir)
            .arg(port.to_string())
            .arg(std::process::id().to_string())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
        assert!(
            output.status.success(),
            "PostgreSQL could not be started by {} (the PostgreSQL tests need a real server):\n{}{}",
            script.display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        format!("host=127.0.0.1 port={port} user=postgres")
    })
}

/// A new, empty database on the test server, named after `name`: its connection
/// string.
pub fn postgres_database(name: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let server = postgres_server();
    let db = format!(
        "{}_{}_{}",
        name.replace(|c: char| !c.is_ascii_alphanumeric(), "_"),
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
    .to_lowercase();
    let port = server
        .rsplit("port=")
        .next()
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let status = Command::new("psql")
        .args([
            "-q",
            "-h",
            "127.0.0.1",
            "-p",
            port,
            "-U",
            "postgres",
            "-d",
            "postgres",
        ])
        .args(["-c", &format!("CREATE DATABASE {db}")])
        .status()
        .expect("psql runs (installed with PostgreSQL)");
    assert!(status.success(), "cannot create database {db}");
    format!("{server} dbname={db}")
}

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

#[path = "../kill_support/mod.rs"]
mod kill_support;
// Not every binary that includes this module kills children.
#[allow(unused_imports)]
pub use kill_support::{KillOnDrop, kill_after_acks};
