//! A private PostgreSQL server for the tests of this binary, started by the
//! repository's `.ci/postgres.sh` (which installs PostgreSQL if it is missing) and
//! stopped when the binary exits; a fresh database on it. Tests that use it FAIL when
//! PostgreSQL cannot be started: they never skip.

use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

/// `host=127.0.0.1 port=.. user=postgres`, the server started on first use.
fn server() -> &'static str {
    static SERVER: OnceLock<String> = OnceLock::new();
    SERVER.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir =
            std::env::temp_dir().join(format!("brute-serve-pg-{}-{nanos}", std::process::id()));
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci/postgres.sh");
        let output = Command::new("bash")
            .arg(&script)
            .args([
                "start",
                &dir.display().to_string(),
                &port.to_string(),
                &std::process::id().to_string(),
            ])
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
        assert!(
            output.status.success(),
            "PostgreSQL could not be started by {} (these tests need a real server):\n{}{}",
            script.display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        format!("host=127.0.0.1 port={port} user=postgres")
    })
}

/// A new, empty database named after `name`: its connection string.
pub(crate) fn database(name: &str) -> String {
    let server = server();
    let port = server
        .split("port=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let db = format!("{name}_{}", std::process::id());
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
