//! A private PostgreSQL server for the tests of one binary, started once (by the
//! repository's `.ci/postgres.sh start`) and stopped when the binary exits, and fresh
//! databases on it. Nothing here installs PostgreSQL: `cargo xtask test` (the README's
//! test command) does, before the tests run. Shared by the root
//! package's tests (through `session_support`) and brute-serve's.
//!
//! Tests that use it FAIL when PostgreSQL cannot be started: they never skip.

// `pub`: `session_support` re-exports it; brute-serve includes it privately.
#![allow(dead_code, clippy::unwrap_used, unreachable_pub)]

use std::net::TcpListener;
use std::path::Path;
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
        // The repository's script, found from whichever package's tests include this.
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .map(|dir| dir.join(".ci/postgres.sh"))
            .find(|script| script.is_file())
            .expect(".ci/postgres.sh in the repository, above the package");
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
        .unwrap_or_else(|e| {
            panic!("cannot run psql ({e}): run `cargo xtask test`, which installs PostgreSQL")
        });
    assert!(status.success(), "cannot create database {db}");
    format!("{server} dbname={db}")
}
