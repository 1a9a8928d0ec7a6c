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

/// A PostgreSQL server of one test's own (not the binary's shared one), which the test
/// stops and starts again on the same port and data folder: what a database restart
/// or failover looks like to a client. Started by the repository's `.ci/postgres.sh`
/// like the shared one; stopped and removed when dropped (and, should the test
/// process die, by the script's watcher).
pub struct RestartableServer {
    script: std::path::PathBuf,
    dir: std::path::PathBuf,
    port: u16,
}

impl RestartableServer {
    /// Starts a new server on a free port of 127.0.0.1.
    pub fn start() -> RestartableServer {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "brute-pg-restart-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .map(|dir| dir.join(".ci/postgres.sh"))
            .find(|script| script.is_file())
            .expect(".ci/postgres.sh in the repository, above the package");
        let server = RestartableServer { script, dir, port };
        server.run_script(&[std::process::id().to_string()]);
        server
    }

    /// `.ci/postgres.sh start DIR PORT` with `extra` arguments; panics with its output
    /// when it fails.
    fn run_script(&self, extra: &[String]) {
        let output = Command::new("bash")
            .arg(&self.script)
            .arg("start")
            .arg(&self.dir)
            .arg(self.port.to_string())
            .args(extra)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.script.display()));
        assert!(
            output.status.success(),
            "PostgreSQL could not be started by {}:\n{}{}",
            self.script.display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// A new, empty database on this server: its connection string.
    pub fn database(&self, name: &str) -> String {
        let port = self.port.to_string();
        let status = Command::new("psql")
            .args(["-q", "-h", "127.0.0.1", "-p", &port, "-U", "postgres"])
            .args(["-d", "postgres", "-c", &format!("CREATE DATABASE {name}")])
            .status()
            .expect("psql runs (installed with PostgreSQL)");
        assert!(status.success(), "cannot create database {name}");
        format!("host=127.0.0.1 port={port} user=postgres dbname={name}")
    }

    /// Runs `sql` on database `db` of this server with psql.
    pub fn psql(&self, db: &str, sql: &str) {
        let port = self.port.to_string();
        let status = Command::new("psql")
            .args([
                "-q",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                "127.0.0.1",
                "-p",
                &port,
            ])
            .args(["-U", "postgres", "-d", db, "-c", sql])
            .status()
            .expect("psql runs (installed with PostgreSQL)");
        assert!(status.success(), "psql failed on {db}: {sql}");
    }

    /// Stops the server as a restart or a failover does (`pg_ctl stop -m fast`: every
    /// connection is cut at once, what was committed is kept), and returns when it
    /// is down. The data folder stays, for [`RestartableServer::start_again`].
    pub fn stop(&self) {
        self.pg_ctl(&["-m", "fast", "-w", "stop"]);
    }

    /// Starts the stopped server again on the same port and data folder (it recovers
    /// from its write-ahead log), and returns when it accepts connections.
    pub fn start_again(&self) {
        self.run_script(&[]);
    }

    /// Runs the server's `pg_ctl` on its data folder, as the server's user.
    fn pg_ctl(&self, args: &[&str]) {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .expect("PostgreSQL installed in /usr/lib/postgresql")
            .map(|e| e.unwrap().path().join("bin/pg_ctl"))
            .filter(|p| p.is_file())
            .max_by_key(|p| {
                let version = p.parent().unwrap().parent().unwrap().file_name().unwrap();
                version.to_string_lossy().parse::<u32>().unwrap_or(0)
            })
            .expect("pg_ctl under /usr/lib/postgresql/*/bin");
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.trim_ascii() == b"0");
        let data = self.dir.join("data");
        let mut command = if root {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&bin);
            c
        } else {
            Command::new(&bin)
        };
        let output = command
            .arg("-D")
            .arg(&data)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()));
        assert!(
            output.status.success(),
            "pg_ctl {args:?} failed:\n{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

impl Drop for RestartableServer {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(&self.script)
            .arg("stop")
            .arg(&self.dir)
            .output();
    }
}
