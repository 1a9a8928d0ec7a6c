//! The session stores under concurrency: N = 1, 100, 1,000, 5,000 concurrent turns,
//! each on its own session, with a scripted model of 20 ms latency (three model calls
//! per turn: two passes calling a tool, then the answer), fsync on, on a 2-thread
//! runtime. For each store and N: the wall time against the ideal (three model
//! latencies, 60 ms), the p99 lateness of a 1 ms timer running beside the turns (how
//! much the runtime was blocked), and the memory per turn (peak RSS growth / N).
//!
//! Run: `cargo bench --bench session_store` (PostgreSQL is started by
//! `.ci/postgres.sh`; `cargo xtask setup` installs it). Choose with
//! `BRUTE_BENCH_STORES=jsonl,sqlite,postgres` and `BRUTE_BENCH_N=1,100,1000,5000`.

#![allow(clippy::unwrap_used)]

#[path = "../tests/kill_support/mod.rs"]
mod kill_support;
#[path = "../tests/postgres_support/mod.rs"]
mod postgres_support;
#[path = "../tests/session_support/mod.rs"]
mod session_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use brute::session::SessionId;
use brute::{
    Env, Error, Handler, Message, Model, ToolCall, brute_agent,
    middleware::{Loop, MaxIterations, SessionLog},
};
use session_support::{AnyStore, postgres_database};

const LATENCY: Duration = Duration::from_millis(20);
const PASSES: u32 = 3;

/// 20 ms per call; a tool call on the first two passes, then the answer.
struct SlowModel;

impl Model for SlowModel {
    async fn complete(&self, env: &Env) -> Result<brute::Completion, Error> {
        tokio::time::sleep(LATENCY).await;
        Ok(if env.iteration < PASSES {
            Message::tool_calls(
                "",
                vec![ToolCall::new(
                    format!("call-{}", env.iteration),
                    "echo",
                    serde_json::json!({"text": "hi"}),
                )],
            )
        } else {
            Message::assistant("done")
        }
        .into())
    }
}

/// Answers each call at once, durable before the next model call.
#[derive(brute::Middleware)]
#[middleware(provides = brute::kind::ToolPipeline)]
struct Echo<A> {
    app: A,
}

impl<A: Handler<Env>> Handler<Env> for Echo<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        self.app.call(env).await?;
        let calls = match env.messages.last() {
            Some(m) if m.has_tool_calls() => m.tool_calls.clone(),
            _ => return Ok(()),
        };
        for call in calls {
            env.messages.push(Message::tool_result(call.id, "hi"));
            env.persist().await?;
        }
        Ok(())
    }
}

/// Resident memory, in bytes.
fn rss() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

struct Row {
    wall: Duration,
    p99: Duration,
    max: Duration,
    per_turn: u64,
}

/// N concurrent turns on `store`, sessions `<run>-<i>`.
async fn run(store: &AnyStore, run: &str, n: usize) -> Row {
    let agent = Arc::new(brute_agent! {
        use SessionLog { store: store.store() };
        use Loop::ToolResult;
        use MaxIterations { max: 10 };
        use Echo;
        run SlowModel;
    });
    let done = Arc::new(AtomicBool::new(false));
    let base = rss();
    // The 1 ms timer: how late each tick is, and the peak memory meanwhile.
    let ticker = {
        let done = done.clone();
        tokio::spawn(async move {
            let mut late = Vec::new();
            let mut peak = 0;
            while !done.load(Ordering::Relaxed) {
                let start = Instant::now();
                tokio::time::sleep(Duration::from_millis(1)).await;
                late.push(start.elapsed().saturating_sub(Duration::from_millis(1)));
                peak = peak.max(rss());
            }
            (late, peak)
        })
    };
    let start = Instant::now();
    let turns: Vec<_> = (0..n)
        .map(|i| {
            let agent = agent.clone();
            let id = format!("{run}-{i}");
            tokio::spawn(async move {
                let mut env = agent.env();
                env.extensions.insert(SessionId(id));
                env.messages.push(Message::user("go"));
                let outcome = agent.turn(env).await.unwrap();
                assert_eq!(outcome.text(), Some("done"));
            })
        })
        .collect();
    for turn in turns {
        turn.await.unwrap();
    }
    let wall = start.elapsed();
    done.store(true, Ordering::Relaxed);
    let (mut late, peak) = ticker.await.unwrap();
    late.sort();
    let p99 = late[(late.len() * 99 / 100).min(late.len() - 1)];
    Row {
        wall,
        p99,
        max: late.last().copied().unwrap_or_default(),
        per_turn: peak.saturating_sub(base) / n as u64,
    }
}

fn list(var: &str, default: &str) -> Vec<String> {
    std::env::var(var)
        .unwrap_or_else(|_| default.to_string())
        .split(',')
        .map(str::to_string)
        .collect()
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this once, quickly.
    let quick = !std::env::args().any(|a| a == "--bench");
    let stores = list("BRUTE_BENCH_STORES", "jsonl,sqlite,postgres");
    let counts: Vec<usize> = list(
        "BRUTE_BENCH_N",
        if quick { "1,10" } else { "1,100,1000,5000" },
    )
    .iter()
    .map(|n| n.parse().unwrap())
    .collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ideal = LATENCY * PASSES;
    println!(
        "| store | N | wall | ideal | wall / ideal | timer p99 late | timer max late | memory / turn |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    runtime.block_on(async {
        for kind in &stores {
            let target = match kind.as_str() {
                "jsonl" => dir.path().join("jsonl").to_string_lossy().into_owned(),
                "sqlite" => dir.path().join("bench.db").to_string_lossy().into_owned(),
                "postgres" => postgres_database("bench"),
                other => panic!("unknown store {other}"),
            };
            let store = AnyStore::open(kind, &target, Duration::from_secs(60)).await;
            // Warm up (threads, connections, tables).
            run(&store, "warm", 10).await;
            for &n in &counts {
                let row = run(&store, &format!("n{n}"), n).await;
                println!(
                    "| {kind} | {n} | {:.3} s | {:.3} s | {:.1}x | {:.1} ms | {:.1} ms | {:.1} KiB |",
                    row.wall.as_secs_f64(),
                    ideal.as_secs_f64(),
                    row.wall.as_secs_f64() / ideal.as_secs_f64(),
                    row.p99.as_secs_f64() * 1e3,
                    row.max.as_secs_f64() * 1e3,
                    row.per_turn as f64 / 1024.0,
                );
            }
        }
    });
}
