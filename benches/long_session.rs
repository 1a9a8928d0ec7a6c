//! One more turn on a long session: what the framework and each store pay per turn as
//! the history grows, at 10, 1,000, 10,000 and 100,000 stored messages.
//!
//! The turn is the default stack's (`SystemPrompt`, `Loop::ToolResult`,
//! `MaxIterations`, `DefaultToolPipeline` over a no-op tool, a zero-latency scripted
//! model that calls it twice and then answers: 3 model calls, 6 new messages).
//!
//! - **Instructions, in memory**: the conversation held across turns in the env (what
//!   a chat program or a server holding its sessions does), counted by callgrind over
//!   the turn alone (`one_turn`): nothing is loaded, so any growth is the framework's.
//! - **Instructions, JSONL**: the same stack under `SessionLog` on a session file,
//!   counted over the whole turn, and `SessionLog` over a terminal that answers at once
//!   (the session's own cost: its load, checks and saves); their difference is what
//!   the stack costs on a loaded session. Callgrind counts the bench's own thread: the
//!   store's writer thread (reading, `write` and `fsync`) is in neither count.
//! - **Time and bytes, every store**: the whole turn, the load alone, and how many
//!   bytes the session grew by (the JSONL file's length; the message bytes the
//!   database stores report with `SessionStore::size`).
//!
//! ```text
//! cargo bench --bench long_session                 # every row (PostgreSQL by .ci/postgres.sh)
//! BRUTE_BENCH_STORES=jsonl,sqlite cargo bench --bench long_session
//! cargo bench --bench long_session -- --no-callgrind
//! ```
//!
//! Without `--bench` (as `cargo test --benches` runs it) it plays one turn of each
//! measurement at the two smallest sizes, and checks what each turn stored.

#![allow(clippy::unwrap_used)]

#[path = "common/session_messages.rs"]
mod session_messages;

#[path = "../tests/kill_support/mod.rs"]
mod kill_support;
#[path = "../tests/postgres_support/mod.rs"]
mod postgres_support;
#[path = "../tests/session_support/mod.rs"]
mod session_support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use brute::session::{SessionId, SessionPath, SessionStore};
use brute::tools::{DefaultToolPipeline, ToolError};
use brute::{
    Agent, Env, Message, Role, ToolCall, brute_agent,
    middleware::{Loop, MaxIterations, SessionLog, SystemPrompt},
    providers::ScriptedModel,
};
use session_messages::message;
use session_support::{AnyStore, postgres_database};
use tokio::runtime::Runtime;

/// Does nothing.
#[brute::tool]
async fn noop() -> Result<String, ToolError> {
    Ok(String::new())
}

/// The sizes of the session before the measured turn.
const SIZES: [usize; 4] = [10, 1_000, 10_000, 100_000];

/// Tool calls per turn.
const CALLS: usize = 2;

/// Calls `noop` until this turn has `CALLS` results, then answers. Looks back over
/// the turn only (to its prompt), never over the history.
fn model() -> ScriptedModel {
    ScriptedModel::from_fn(|env| {
        let results = env
            .messages
            .iter()
            .rev()
            .take_while(|m| m.role != Role::User)
            .filter(|m| m.role == Role::Tool)
            .count();
        if results < CALLS {
            Message::tool_calls(
                "",
                vec![ToolCall::new(
                    format!("c{}", env.messages.len()),
                    "noop",
                    serde_json::json!({}),
                )],
            )
        } else {
            Message::assistant("done")
        }
    })
}

macro_rules! stack {
    ($root:expr $(, $session:ident { $($option:tt)* })?) => {
        brute_agent! {
            $(use $session { $($option)* };)?
            use SystemPrompt { prompt: "You are terse." };
            use Loop::ToolResult;
            use MaxIterations { max: 25 };
            use DefaultToolPipeline { tools: (Noop,), root: $root };
            run model();
        }
    };
}

/// One turn, the only code callgrind counts in the in-memory and JSONL modes.
#[inline(never)]
fn one_turn<A: AgentTurn>(runtime: &Runtime, agent: &A, env: Env) -> Env {
    runtime.block_on(agent.play(env))
}

/// An agent's turn with its outcome's env, whatever the stack.
trait AgentTurn {
    fn play(&self, env: Env) -> impl Future<Output = Env>;
}

impl<S> AgentTurn for Agent<S>
where
    S: brute::Handler<Env> + Send + Sync,
{
    async fn play(&self, mut env: Env) -> Env {
        env.messages.push(Message::user("One more."));
        // A held env carries the last turn's pass count and exit: a new turn starts
        // from neither (`MaxIterations` counts the passes of one turn).
        env.iteration = 0;
        env.should_exit = None;
        let outcome = self.turn(env).await.unwrap();
        assert_eq!(outcome.text(), Some("done"), "{:?}", outcome.stop);
        outcome.env
    }
}

/// The env a turn in memory starts from: `size` messages and the system prompt.
fn held(agent: &impl AgentTurn, runtime: &Runtime, size: usize) -> Env {
    let mut env = Env::new();
    env.messages.push(Message::system("You are terse."));
    env.messages.extend((0..size).map(message));
    // One turn played first: what every later turn of a held session finds.
    let mut env = runtime.block_on(agent.play(env));
    env.messages.truncate(size + 1);
    env
}

/// `turns` turns in memory on a session of `size` messages, cut back to that size
/// after each (outside `one_turn`).
fn in_memory(runtime: &Runtime, root: &Path, size: usize, turns: u32) {
    let agent = stack!(root);
    let mut env = held(&agent, runtime, size);
    for _ in 0..turns {
        env = one_turn(runtime, &agent, env);
        assert_eq!(env.messages.len(), size + 1 + 2 * CALLS + 2);
        env.messages.truncate(size + 1);
    }
}

/// Seeds the JSONL session `dir/s<size>.jsonl` with `size` messages.
fn seed_file(dir: &Path, size: usize) -> std::path::PathBuf {
    let path = dir.join(format!("s{size}.jsonl"));
    let mut text = String::new();
    for i in 0..size {
        text.push_str(&serde_json::to_string(&message(i)).unwrap());
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    path
}

/// `turns` JSONL turns on a session of `size` messages. With `load_only`, the stack
/// is `SessionLog` over a terminal that answers at once: what the turn costs for
/// loading, checking and saving the session, with nothing else in it.
fn jsonl(runtime: &Runtime, root: &Path, size: usize, turns: u32, load_only: bool) {
    let path = seed_file(root, size);
    let session = |path: &Path| {
        let mut env = Env::new();
        env.extensions.insert(SessionPath(path.to_path_buf()));
        env
    };
    if load_only {
        let agent = brute_agent! {
            use SessionLog { path: path.clone() };
            run |_env| async { Ok(Message::assistant("done")) };
        };
        for _ in 0..turns {
            one_turn(runtime, &agent, session(&path));
        }
        return;
    }
    let agent = stack!(root, SessionLog { path: path.clone() });
    // One turn first, not counted: it repairs the call the seeded history ends with
    // (at sizes that are not a multiple of 4), as a long session's first turn did.
    runtime.block_on(agent.play(session(&path)));
    for _ in 0..turns {
        one_turn(runtime, &agent, session(&path));
    }
}

/// Instructions per turn of `mode` at `size`: this binary under callgrind.
fn callgrind(mode: &str, size: usize, turns: u32) -> Option<f64> {
    let output = Command::new("valgrind")
        .args([
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            "--toggle-collect=*one_turn*",
        ])
        .arg(std::env::current_exe().ok()?)
        .args(["--row", mode, &size.to_string(), &turns.to_string()])
        .output()
        .ok()?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        eprintln!("callgrind of `{mode}` at {size} failed: {stderr}");
        return None;
    }
    let collected = stderr.lines().find_map(|l| {
        l.split_once("Collected :")
            .map(|(_, n)| n.trim().to_string())
    })?;
    Some(collected.parse::<f64>().ok()? / f64::from(turns))
}

/// One row, run under callgrind by `callgrind`.
fn row(runtime: &Runtime, args: &[String]) {
    let mode = args[0].as_str();
    let size: usize = args[1].parse().unwrap();
    let turns: u32 = args[2].parse().unwrap();
    let dir = tempfile::tempdir().unwrap();
    match mode {
        "memory" => in_memory(runtime, dir.path(), size, turns),
        "jsonl" => jsonl(runtime, dir.path(), size, turns, false),
        "jsonl-load" => jsonl(runtime, dir.path(), size, turns, true),
        other => panic!("unknown row {other}"),
    }
}

/// Stores `size` messages as session `id` of `store`.
async fn seed<S: SessionStore>(store: &S, id: &str, size: usize) {
    let messages: Vec<Message> = (0..size).map(message).collect();
    let (mut lease, _) = store.open(id).await.unwrap();
    for chunk in messages.chunks(10_000) {
        store.append(&mut lease, chunk).await.unwrap();
    }
    store.release(lease).await.unwrap();
}

/// The median of `times`.
fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// Whole turn, load alone and bytes per turn of `store` at `size`, the median of
/// `turns` turns.
async fn store_row<S: SessionStore>(
    kind: &str,
    any: &AnyStore,
    store: &S,
    root: &Path,
    size: usize,
    turns: usize,
) {
    let id = format!("long{size}");
    seed(store, &id, size).await;
    let agent = stack!(root, SessionLog { store: any.store() });
    // One turn first, not measured (see `jsonl`).
    let mut env = Env::new();
    env.extensions.insert(SessionId::from(id.as_str()));
    agent.play(env).await;
    let (mut whole, mut load, mut bytes) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..turns {
        let before = store.size(&id).await.unwrap();
        let started = Instant::now();
        let mut env = Env::new();
        env.extensions.insert(SessionId::from(id.as_str()));
        agent.play(env).await;
        whole.push(started.elapsed());
        let after = store.size(&id).await.unwrap();
        assert_eq!(after.messages, before.messages + 2 + 2 * CALLS as u64);
        bytes.push(after.bytes - before.bytes);
        let started = Instant::now();
        let (lease, _) = store.open(&id).await.unwrap();
        store.release(lease).await.unwrap();
        load.push(started.elapsed());
    }
    let (whole, load) = (median(whole), median(load));
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    bytes.sort_unstable();
    println!(
        "| {kind} | {size} | {:.2} ms | {:.2} ms | {:.2} ms | {} |",
        ms(whole),
        ms(load),
        ms(whole.saturating_sub(load)),
        bytes[bytes.len() / 2],
    );
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_string())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    if let Some(at) = args.iter().position(|a| a == "--row") {
        row(&runtime, &args[at + 1..]);
        return;
    }
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this once, quickly.
    let full = args.iter().any(|a| a == "--bench");
    let sizes: &[usize] = if full { &SIZES } else { &SIZES[..2] };
    let dir = tempfile::tempdir().unwrap();
    println!("load average at start: {}", load_average());
    if full && !args.iter().any(|a| a == "--no-callgrind") {
        println!(
            "\n| turn | {} |",
            sizes.map_join(" | ", |s| format!("{s} messages"))
        );
        println!("|---|{}|", sizes.map_join("|", |_| "---:".to_string()));
        let counts = |mode: &str, turns: u32| -> Vec<Option<f64>> {
            sizes.iter().map(|&s| callgrind(mode, s, turns)).collect()
        };
        let memory = counts("memory", 20);
        let turn = counts("jsonl", 5);
        let load = counts("jsonl-load", 5);
        let show = |v: &Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0}"));
        println!(
            "| in memory | {} |",
            memory.iter().map(show).collect::<Vec<_>>().join(" | ")
        );
        println!(
            "| JSONL, the default stack's turn | {} |",
            turn.iter().map(show).collect::<Vec<_>>().join(" | ")
        );
        println!(
            "| JSONL, `SessionLog` over a terminal that answers at once | {} |",
            load.iter().map(show).collect::<Vec<_>>().join(" | ")
        );
        let without: Vec<Option<f64>> = turn
            .iter()
            .zip(&load)
            .map(|(t, l)| Some(t.as_ref()? - l.as_ref()?))
            .collect();
        println!(
            "| JSONL, the default stack's turn less the session's own cost | {} |",
            without.iter().map(show).collect::<Vec<_>>().join(" | ")
        );
        println!("load average after callgrind: {}", load_average());
    } else {
        // The modes callgrind runs, played once here so that `cargo test --benches`
        // checks them.
        for &size in sizes {
            in_memory(&runtime, dir.path(), size, 2);
            jsonl(&runtime, dir.path(), size, 2, false);
            jsonl(&runtime, dir.path(), size, 2, true);
        }
    }
    let stores: Vec<String> = std::env::var("BRUTE_BENCH_STORES")
        .unwrap_or_else(|_| "jsonl,sqlite,postgres".to_string())
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    println!(
        "\n| store | stored messages | whole turn (p50) | load alone (p50) | turn without its load | bytes stored by the turn |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    runtime.block_on(async {
        for kind in &stores {
            let target = match kind.as_str() {
                "jsonl" => dir.path().join("jsonl").to_string_lossy().into_owned(),
                "sqlite" => dir.path().join("bench.db").to_string_lossy().into_owned(),
                "postgres" => postgres_database("bench_long"),
                other => panic!("unknown store {other}"),
            };
            let any = AnyStore::open(kind, &target, Duration::from_secs(60)).await;
            for &size in sizes {
                let turns = if full { 20 } else { 2 };
                match &any {
                    AnyStore::Jsonl(s) => {
                        store_row(kind, &any, &**s, dir.path(), size, turns).await
                    }
                    AnyStore::Sqlite(s) => {
                        store_row(kind, &any, &**s, dir.path(), size, turns).await
                    }
                    AnyStore::Postgres(s) => {
                        store_row(kind, &any, &**s, dir.path(), size, turns).await
                    }
                }
            }
        }
    });
    println!("load average at the end: {}", load_average());
}

/// Joins the sizes' labels.
trait MapJoin {
    fn map_join(&self, sep: &str, f: impl Fn(&usize) -> String) -> String;
}

impl MapJoin for [usize] {
    fn map_join(&self, sep: &str, f: impl Fn(&usize) -> String) -> String {
        self.iter().map(f).collect::<Vec<_>>().join(sep)
    }
}
