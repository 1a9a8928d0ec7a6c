//! Load: 1,000 concurrent SSE turns over loopback against one server whose model
//! takes 20 ms. Reports each turn's latency (request sent to `end` event received)
//! against the ideal (the model's 20 ms), and the memory each open turn holds.
//!
//! `cargo bench -p brute-serve --bench serve_load`
//!
//! The client (reqwest, one connection per turn) runs in the same process as the
//! server, on the same 2-thread runtime: the figures include the client's work and
//! memory. Sessions are in a JSONL store (durable: fsync at every step, shared
//! between turns), one session per turn.

#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use brute::session::JsonlStore;
use brute::{Completion, Env, Message, Model, brute_agent, middleware::SessionLog};
use brute_serve::Server;
use tokio::sync::Semaphore;

const TURNS: usize = 1000;

const MODEL: Duration = Duration::from_millis(20);

/// Answers after 20 ms; with a gate, only once the gate lets it (to hold turns open).
struct Model20 {
    gate: Option<Arc<Semaphore>>,
}

impl Model for Model20 {
    async fn complete(&self, _env: &Env) -> Result<Completion, brute::Error> {
        if let Some(gate) = &self.gate {
            gate.acquire().await.unwrap().forget();
        }
        tokio::time::sleep(MODEL).await;
        Ok(Message::assistant("done").into())
    }
}

/// The resident set of this process, in bytes.
fn rss() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

async fn turn(
    client: &reqwest::Client,
    base: &str,
    session: &str,
    agent: &str,
) -> reqwest::Response {
    let response = client
        .post(format!("{base}/v1/sessions/{session}/turns"))
        .header("authorization", "Bearer bench")
        .header("content-type", "application/json")
        .body(format!(r#"{{"input":"go","agent":"{agent}"}}"#))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run());
}

async fn run() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(JsonlStore::new(dir.path()));
    let gate = Arc::new(Semaphore::new(0));
    let free = brute_agent! {
        use SessionLog { store: store.clone() };
        run Model20 { gate: None };
    };
    let held = brute_agent! {
        use SessionLog { store: store.clone() };
        run Model20 { gate: Some(gate.clone()) };
    };
    let bare = brute_agent! { run Model20 { gate: None }; };
    let server = Server::new(store)
        .agent("free", free)
        .agent("held", held)
        .agent("bare", bare)
        .bearer_token("bench");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(server.serve(listener, std::future::pending()));
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(TURNS)
        .build()
        .unwrap();

    held_open(&client, &base, &gate).await;

    // Warm up: connections, files, allocator.
    for round in 0..2 {
        let tasks: Vec<_> = (0..TURNS)
            .map(|i| {
                let (client, base) = (client.clone(), base.clone());
                tokio::spawn(async move {
                    turn(&client, &base, &format!("warm{round}-{i}"), "free")
                        .await
                        .text()
                        .await
                        .unwrap()
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
    }

    sequential(&client, &base).await;

    println!("| agent | run | wall | p50 | p99 | max | p50 / ideal | p99 / ideal |");
    println!("|---|---|---|---|---|---|---|---|");
    for (agent, run) in [
        ("free", 0),
        ("bare", 1),
        ("free", 2),
        ("bare", 3),
        ("free", 4),
        ("bare", 5),
    ] {
        let started = Instant::now();
        let tasks: Vec<_> = (0..TURNS)
            .map(|i| {
                let (client, base) = (client.clone(), base.clone());
                tokio::spawn(async move {
                    let t0 = Instant::now();
                    let body = turn(&client, &base, &format!("run{run}-{i}"), agent)
                        .await
                        .text()
                        .await
                        .unwrap();
                    assert!(body.contains(r#""status":"completed""#), "{body}");
                    t0.elapsed()
                })
            })
            .collect();
        let mut latencies = Vec::with_capacity(TURNS);
        for task in tasks {
            latencies.push(task.await.unwrap());
        }
        let wall = started.elapsed();
        latencies.sort();
        let (p50, p99, max) = (
            percentile(&latencies, 0.5),
            percentile(&latencies, 0.99),
            latencies[TURNS - 1],
        );
        let ratio = |d: Duration| d.as_secs_f64() / MODEL.as_secs_f64();
        println!(
            "| {} | {} | {:.0} ms | {:.1} ms | {:.1} ms | {:.1} ms | {:.1}x | {:.1}x |",
            if agent == "free" {
                "SessionLog + JSONL"
            } else {
                "no session store"
            },
            run / 2 + 1,
            wall.as_secs_f64() * 1e3,
            p50.as_secs_f64() * 1e3,
            p99.as_secs_f64() * 1e3,
            max.as_secs_f64() * 1e3,
            ratio(p50),
            ratio(p99)
        );
    }
}

/// Memory: 1,000 turns held open (headers received, the model waiting on a gate),
/// first thing after a 10-turn warm-up, so that the resident set grows with them
/// (later, memory the allocator kept from earlier runs would hide it).
async fn held_open(client: &reqwest::Client, base: &str, gate: &Semaphore) {
    for i in 0..10 {
        gate.add_permits(1);
        turn(client, base, &format!("first-{i}"), "held")
            .await
            .text()
            .await
            .unwrap();
    }
    // Memory: 1,000 turns held open (headers received, the model waiting on a gate).
    let before = rss();
    let open = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..TURNS)
        .map(|i| {
            let (client, base, open) = (client.clone(), base.to_owned(), open.clone());
            tokio::spawn(async move {
                let response = turn(&client, &base, &format!("held-{i}"), "held").await;
                open.fetch_add(1, Ordering::SeqCst);
                response.text().await.unwrap()
            })
        })
        .collect();
    while open.load(Ordering::SeqCst) < TURNS {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let during = rss();
    gate.add_permits(TURNS);
    for task in tasks {
        assert!(task.await.unwrap().contains(r#""status":"completed""#));
    }
    println!(
        "memory: {:.1} MiB resident before, {:.1} MiB with {TURNS} turns open: {:.1} KiB per open turn (server and client)\n",
        before as f64 / 1048576.0,
        during as f64 / 1048576.0,
        (during.saturating_sub(before)) as f64 / TURNS as f64 / 1024.0
    );
    println!();
}

/// One turn at a time (200 each): the overhead of a turn over its model's 20 ms when
/// nothing competes.
async fn sequential(client: &reqwest::Client, base: &str) {
    println!("| one turn at a time | p50 | p99 | p50 - ideal |");
    println!("|---|---|---|---|");
    for (agent, label) in [("free", "SessionLog + JSONL"), ("bare", "no session store")] {
        let mut latencies = Vec::new();
        for i in 0..200 {
            let t0 = Instant::now();
            let body = turn(client, base, &format!("seq-{agent}-{i}"), agent)
                .await
                .text()
                .await
                .unwrap();
            assert!(body.contains(r#""status":"completed""#), "{body}");
            latencies.push(t0.elapsed());
        }
        latencies.sort();
        let (p50, p99) = (percentile(&latencies, 0.5), percentile(&latencies, 0.99));
        println!(
            "| {label} | {:.2} ms | {:.2} ms | {:.2} ms |",
            p50.as_secs_f64() * 1e3,
            p99.as_secs_f64() * 1e3,
            (p50.as_secs_f64() - MODEL.as_secs_f64()) * 1e3
        );
    }
    println!();
}
