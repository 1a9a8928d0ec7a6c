//! The brute-serve process of the scale-out runs: this test binary re-executed with
//! [`SERVER`] set. It serves one agent (a scripted OpenAI-compatible model in the
//! parent, two ledger tools, `gated` needing approval) on a `PostgresStore`, and
//! talks to the parent through its standard streams: it prints `listening PORT`,
//! `ledger KEY` after each tool execution is durable, `held HOLD KEY` when a held
//! execution waits, `stopped` at the end; it reads `hold HOLD` (the next execution waits
//! after recording itself), `unhold` (no longer) and `release` (a held execution
//! returns).

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use brute::brute_agent;
use brute::middleware::{Loop, MaxIterations, SessionLog};
use brute::providers::OpenAi;
use brute::session::PostgresStore;
use brute::tools::{Approval, DefaultToolPipeline, ToolContext, ToolError};
use brute_serve::Server;
use tokio::sync::Notify;

/// The variable that makes this binary a server: its name (`s0`, `s1`, ..).
pub const SERVER: &str = "BRUTE_SCALE_SERVER";
/// The PostgreSQL connection string.
pub const DATABASE: &str = "BRUTE_SCALE_DATABASE";
/// The scripted model's API root (`http://127.0.0.1:PORT/v1`).
pub const MODEL: &str = "BRUTE_SCALE_MODEL";
/// The folder of the ledgers (one file per server).
pub const LEDGERS: &str = "BRUTE_SCALE_LEDGERS";
/// The port to listen on (0: any).
pub const PORT: &str = "BRUTE_SCALE_PORT";
/// The address to listen on.
pub const HOST: &str = "BRUTE_SCALE_HOST";
/// The lease length in milliseconds.
pub const TTL_MS: &str = "BRUTE_SCALE_TTL_MS";
/// Set: the store's writes skip the lease fence (the broken fence).
pub const UNFENCED: &str = "BRUTE_SCALE_UNFENCED";

/// What starts each line a server says to the parent.
pub const MARK: &str = "@scale ";

/// The bearer token of the servers.
pub const TOKEN: &str = "scale-token";

/// This process's server name, set once at start.
static NAME: OnceLock<String> = OnceLock::new();
/// The hold armed for the next tool execution (0: none): it waits for `release`
/// after recording itself, and names the hold in its `held` line.
static HOLD: AtomicU64 = AtomicU64::new(0);
/// Wakes the held execution.
static RELEASE: OnceLock<Notify> = OnceLock::new();

/// The ledger file of server `name` in `dir`.
pub fn ledger_file(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("ledger-{name}.log"))
}

/// Records one execution of call `key`: a line `SERVER KEY` appended to this server's
/// ledger (opened O_APPEND), synced to disk before the tool returns; then announces it
/// and, when a hold is armed, waits for `release`.
async fn record(key: &str, cx: &ToolContext) -> Result<String, ToolError> {
    let name = NAME.get().map_or("unnamed", String::as_str);
    let path = ledger_file(cx.sandbox().root(), name);
    let line = format!("{name} {key}\n");
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut file| {
            file.write_all(line.as_bytes())?;
            file.sync_data()
        });
    written.map_err(|e| ToolError::failed(format!("ledger {}: {e}", path.display())))?;
    say(&format!("ledger {key}"));
    // Waiting before the hold is taken: a `release` right after it is not missed.
    let release = RELEASE.get_or_init(Notify::new).notified();
    let hold = HOLD.swap(0, Ordering::SeqCst);
    if hold != 0 {
        say(&format!("held {hold} {key}"));
        release.await;
    }
    Ok(format!("recorded {key}"))
}

/// Prints one line to the parent, flushed.
fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    // On a line of its own: the test harness may have left its own unfinished.
    let _ = writeln!(out, "\n{MARK}{line}");
    let _ = out.flush();
}

/// Records a side effect in the ledger (runs without approval).
#[brute::tool]
pub async fn ledger(
    /// The call's id, as the model gave it.
    key: String,
    cx: &ToolContext,
) -> Result<String, ToolError> {
    record(&key, cx).await
}

/// Records a side effect that needs a person's approval.
#[brute::tool]
pub async fn gated(
    /// The call's id, as the model gave it.
    key: String,
    cx: &ToolContext,
) -> Result<String, ToolError> {
    record(&key, cx).await
}

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"))
}

/// Runs the server until SIGTERM; never returns to the test harness.
pub fn serve(name: String) -> ! {
    let _ = NAME.set(name.clone());
    RELEASE.get_or_init(Notify::new);
    std::thread::spawn(|| {
        for line in std::io::stdin().lock().lines() {
            match line.as_deref().map(str::trim) {
                Ok(hold) if hold.starts_with("hold ") => {
                    HOLD.store(hold[5..].parse().unwrap_or(0), Ordering::SeqCst);
                }
                Ok("unhold") => HOLD.store(0, Ordering::SeqCst),
                Ok("release") => RELEASE.get_or_init(Notify::new).notify_waiters(),
                Ok(_) => {}
                Err(_) => break,
            }
        }
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let ttl = Duration::from_millis(var(TTL_MS).parse().unwrap());
        let mut store = PostgresStore::connect(&var(DATABASE))
            .await
            .unwrap()
            .lease_ttl(ttl);
        if std::env::var_os(UNFENCED).is_some() {
            store = store.__unfenced_writes_for_fault_tests_only();
        }
        let store = Arc::new(store);
        let dir = PathBuf::from(var(LEDGERS));
        let model = OpenAi::compatible(var(MODEL), "scripted")
            // Not the bare name: brute redacts its API key wherever it appears.
            .api_key(format!("key-of-{name}"))
            .stream(false);
        let agent = brute_agent! {
            use SessionLog { store: store.clone() };
            use Loop::ToolResult;
            use MaxIterations { max: 8 };
            use DefaultToolPipeline {
                tools: (Ledger, Gated),
                root: dir.as_path(),
                approval: Approval::ask(["gated"]),
            };
            run model;
        };
        let port: u16 = var(PORT).parse().unwrap();
        let host: std::net::IpAddr = std::env::var(HOST)
            .unwrap_or_else(|_| "127.0.0.1".to_owned())
            .parse()
            .unwrap();
        let listener = tokio::net::TcpListener::bind((host, port)).await.unwrap();
        say(&format!(
            "listening {}",
            listener.local_addr().unwrap().port()
        ));
        let server = Server::new(store)
            .agent("scale", agent)
            .bearer_token(TOKEN)
            .timeout(Duration::from_secs(60))
            .drain(Duration::from_secs(10));
        let stop = async {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).unwrap();
            term.recv().await;
        };
        server.serve(listener, stop).await.unwrap();
        say("stopped");
    });
    std::process::exit(0)
}
