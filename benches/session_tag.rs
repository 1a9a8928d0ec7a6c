//! What a turn costs the store when a middleware edits the last message on the way up
//! (the `Tag` example of `brute`'s crate docs), side by side with an append-only turn,
//! at 12 and 100,000 stored messages, for every store.
//!
//! Each row is one `SessionLog` turn on a session seeded with `prior` messages, inside
//! which a hand-written handler plays `turns` turns the way a real stack stores them:
//! the prompt pushed and made durable (the terminal's step before the model call), the
//! reply pushed and made durable (its step after), and for the `Tag` rows the reply
//! edited with `env.messages.last_mut()` and made durable (`SessionLog`'s step on the way
//! up): a rewrite from the last position. The `whole rewrite` row edits the same message
//! through `env.messages.edit(..)`, which the transcript records as a rewrite from 0:
//! what every edit cost before rewrites carried their position. Every write is durable
//! (fsync on; SQLite `synchronous = FULL`).
//!
//! Run: `cargo bench --bench session_tag` (PostgreSQL is started by `.ci/postgres.sh`).
//! Choose with `BRUTE_BENCH_STORES=jsonl,sqlite,postgres`.

#![allow(clippy::unwrap_used)]

#[path = "common/session_messages.rs"]
mod session_messages;

#[path = "../tests/kill_support/mod.rs"]
mod kill_support;
#[path = "../tests/postgres_support/mod.rs"]
mod postgres_support;
#[path = "../tests/session_support/mod.rs"]
mod session_support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use brute::session::{SessionId, SessionStore};
use brute::{Env, Error, Handler, Message, middleware::SessionLog, pipeline};
use session_messages::message;
use session_support::{AnyStore, postgres_database};

/// How a played turn changes the record on the way up.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// Prompt and reply appended.
    Append,
    /// Then the reply tagged with `last_mut`: a rewrite from the last position.
    Tag,
    /// Then the reply tagged through `edit`: a rewrite from position 0.
    WholeRewrite,
}

impl Mode {
    fn label(self) -> &'static str {
        match self {
            Mode::Append => "append-only turn",
            Mode::Tag => "`Tag` turn (rewrite from the last message)",
            Mode::WholeRewrite => "`Tag` turn as a whole rewrite (before)",
        }
    }
}

/// Plays `turns` turns inside one `SessionLog` turn, timing each.
struct Turns {
    turns: usize,
    mode: Mode,
    times: Arc<Mutex<Vec<Duration>>>,
}

impl Handler<Env> for Turns {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        env.messages.reserve(self.turns * 2);
        let mut times = Vec::with_capacity(self.turns);
        for i in 0..self.turns {
            let start = Instant::now();
            env.messages.push(Message::user(format!("prompt {i}")));
            env.persist().await?;
            env.messages.push(Message::assistant(format!("reply {i}")));
            env.persist().await?;
            match self.mode {
                Mode::Append => {}
                Mode::Tag => {
                    if let Some(last) = env.messages.last_mut() {
                        last.content.push_str(" [tagged]");
                    }
                    env.persist().await?;
                }
                Mode::WholeRewrite => {
                    env.messages.edit(|messages| {
                        if let Some(last) = messages.last_mut() {
                            last.content.push_str(" [tagged]");
                        }
                    });
                    env.persist().await?;
                }
            }
            times.push(start.elapsed());
        }
        *self.times.lock().unwrap() = times;
        Ok(())
    }
}

/// Stores `prior` messages as session `id` of `store`.
async fn seed(store: &AnyStore, id: &str, prior: usize) {
    let messages: Vec<Message> = (0..prior).map(message).collect();
    async fn put<S: SessionStore>(store: &S, id: &str, messages: &[Message]) {
        let (mut lease, _) = store.open(id).await.unwrap();
        for chunk in messages.chunks(10_000) {
            store.append(&mut lease, chunk).await.unwrap();
        }
        store.release(lease).await.unwrap();
    }
    match store {
        AnyStore::Jsonl(s) => put(&**s, id, &messages).await,
        AnyStore::Sqlite(s) => put(&**s, id, &messages).await,
        AnyStore::Postgres(s) => put(&**s, id, &messages).await,
    }
}

/// The per-turn times of `turns` turns of `mode` on session `id`.
async fn play(store: &AnyStore, id: &str, mode: Mode, turns: usize) -> Vec<Duration> {
    let times = Arc::new(Mutex::new(Vec::new()));
    let stack = pipeline! {
        use SessionLog { store: store.store() };
        run Turns { turns, mode, times: times.clone() };
    };
    let mut env = Env::new();
    env.extensions.insert(SessionId::from(id));
    stack.call(&mut env).await.unwrap();
    let mut times = std::mem::take(&mut *times.lock().unwrap());
    times.sort();
    times
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this once, quickly.
    let quick = !std::env::args().any(|a| a == "--bench");
    let stores: Vec<String> = std::env::var("BRUTE_BENCH_STORES")
        .unwrap_or_else(|_| "jsonl,sqlite,postgres".to_string())
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    println!("| store | stored messages | turn | turns | mean / turn | p50 | p90 |");
    println!("|---|---:|---|---:|---:|---:|---:|");
    runtime.block_on(async {
        for kind in &stores {
            let target = match kind.as_str() {
                "jsonl" => dir.path().join("jsonl").to_string_lossy().into_owned(),
                "sqlite" => dir.path().join("bench.db").to_string_lossy().into_owned(),
                "postgres" => postgres_database("bench_tag"),
                other => panic!("unknown store {other}"),
            };
            let store = AnyStore::open(kind, &target, Duration::from_secs(60)).await;
            for prior in [12usize, 100_000] {
                for mode in [Mode::Append, Mode::Tag, Mode::WholeRewrite] {
                    let turns = match (quick, mode, prior) {
                        (true, _, _) => 3,
                        (false, Mode::WholeRewrite, 100_000) => 10,
                        (false, _, _) => 200,
                    };
                    let id = format!("s{prior}-{}", mode as u8);
                    seed(&store, &id, prior).await;
                    let times = play(&store, &id, mode, turns).await;
                    let mean = times.iter().sum::<Duration>() / times.len() as u32;
                    let ms = |d: Duration| d.as_secs_f64() * 1e3;
                    println!(
                        "| {kind} | {prior} | {} | {turns} | {:.2} ms | {:.2} ms | {:.2} ms |",
                        mode.label(),
                        ms(mean),
                        ms(times[times.len() / 2]),
                        ms(times[times.len() * 9 / 10]),
                    );
                }
            }
        }
    });
}
