//! The session log's costs: appending one message at 10 and 100,000 prior messages
//! (the real path: a message pushed, then the durability step `env.persist()` inside
//! `SessionLog`), loading a 100,000-message file, the atomic rewrite of one, and what
//! the terminal's spans and durability steps add to a model call when nothing listens.
//!
//! Run: `cargo bench --bench session_log`

#![allow(clippy::unwrap_used)]

#[path = "common/session_messages.rs"]
mod session_messages;

use std::hint::black_box;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use brute::{
    Completion, Env, Error, Event, Handler, Message, Model, middleware::SessionLog,
    model::Terminal, pipeline, session::SessionFile,
};
use criterion::{BenchmarkId, Criterion, SamplingMode, criterion_group};
use session_messages::message;

fn write_session(path: &Path, n: usize) {
    let (mut file, _) = SessionFile::open(path).unwrap();
    let messages: Vec<Message> = (0..n).map(message).collect();
    // `rewrite` writes the whole history in one go.
    file.rewrite(&messages).unwrap();
}

/// The body of the benchmarked stacks: `iters` durability steps, each after pushing
/// one message when `push`; the time they took goes to `out`, and with `times` each
/// step's time is kept.
struct Steps {
    iters: u64,
    push: bool,
    out: Arc<Mutex<Duration>>,
    times: Option<Arc<Mutex<Vec<Duration>>>>,
}

impl Handler<Env> for Steps {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        // Growing a 100,000-message Vec is not the session log's cost.
        env.messages.reserve(self.iters as usize);
        let mut times = Vec::with_capacity(if self.times.is_some() {
            self.iters as usize
        } else {
            0
        });
        let start = Instant::now();
        for i in 0..self.iters {
            let step = Instant::now();
            if self.push {
                env.messages.push(message(i as usize % 4 + 1));
            }
            env.persist().await?;
            if self.times.is_some() {
                times.push(step.elapsed());
            }
        }
        *self.out.lock().unwrap() = start.elapsed();
        if let Some(keep) = &self.times {
            *keep.lock().unwrap() = times;
        }
        Ok(())
    }
}

/// Times `iters` durability steps through `SessionLog`'s writer on a session that
/// holds what `path` holds; with `push`, one new message is appended before each.
fn checkpoints_through_session_log(path: &Path, sync: bool, push: bool, iters: u64) -> Duration {
    let elapsed = Arc::new(Mutex::new(Duration::ZERO));
    let stack = pipeline! {
        use SessionLog { path: path.to_path_buf(), sync: sync };
        run Steps { iters, push, out: elapsed.clone(), times: None };
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut env = Env::new();
    env.messages.push(Message::system("You are terse."));
    runtime.block_on(stack.call(&mut env)).unwrap();
    *elapsed.lock().unwrap()
}

fn append(c: &mut Criterion) {
    let mut group = c.benchmark_group("session_log/checkpoint");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8));
    for prior in [10usize, 100_000] {
        for (label, sync, push) in [
            ("append_one_fsync", true, true),
            ("append_one_no_fsync", false, true),
            ("nothing_new", true, false),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("s.jsonl");
            group.bench_with_input(BenchmarkId::new(label, prior), &prior, |b, &prior| {
                b.iter_custom(|iters| {
                    // Same starting size for every sample.
                    write_session(&path, prior);
                    checkpoints_through_session_log(&path, sync, push, iters)
                })
            });
        }
    }
    group.finish();
}

/// The terminal's body as it was before the spans and durability steps were added.
async fn old_terminal<M: Model>(model: &M, env: &mut Env) -> Result<(), brute::Error> {
    env.emit(Event::ModelRequest {
        messages: env.messages.len(),
        tools: env.tools.len(),
    });
    let Completion { message, usage } = model.complete(env).await?;
    if let Some(usage) = usage {
        env.add_usage(usage);
    }
    env.messages.push(message);
    if let Some(message) = env.messages.last() {
        env.emit(Event::ModelResponse {
            message,
            usage: usage.as_ref(),
            cost: None,
        });
    }
    Ok(())
}

/// What the tracing spans and the two durability steps cost per model call when no
/// subscriber and no session log are installed: the terminal against a hand-written
/// call of the same model, side by side.
fn terminal_overhead(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let model = |_env: &Env| async { Ok::<_, brute::Error>(Message::assistant("ok")) };
    let terminal = Terminal::new(model);
    let mut group = c.benchmark_group("per_model_call");
    group.bench_function("hand-written call + push", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let mut env = Env::new();
                env.messages.push(Message::user("hi"));
                let start = Instant::now();
                for _ in 0..iters {
                    let completion = Model::complete(&model, &env).await.unwrap();
                    env.messages.push(completion.message);
                    black_box(env.messages.pop());
                }
                start.elapsed()
            })
        })
    });
    group.bench_function(
        "Terminal before spans and durability steps (emit, call, push, emit)",
        |b| {
            b.iter_custom(|iters| {
                runtime.block_on(async {
                    let mut env = Env::new();
                    env.messages.push(Message::user("hi"));
                    let start = Instant::now();
                    for _ in 0..iters {
                        old_terminal(&model, &mut env).await.unwrap();
                        black_box(env.messages.pop());
                    }
                    start.elapsed()
                })
            })
        },
    );
    group.bench_function("Terminal (span + durability steps + events)", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let mut env = Env::new();
                env.messages.push(Message::user("hi"));
                let start = Instant::now();
                for _ in 0..iters {
                    terminal.call(&mut env).await.unwrap();
                    black_box(env.messages.pop());
                }
                start.elapsed()
            })
        })
    });
    group.finish();
}

fn load_and_rewrite(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.jsonl");
    write_session(&path, 100_000);
    let bytes = std::fs::metadata(&path).unwrap().len();
    eprintln!("100,000-message session: {:.1} MB", bytes as f64 / 1e6);

    let mut group = c.benchmark_group("session_log/100k_messages");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(8));
    group.bench_function("read", |b| {
        b.iter(|| black_box(SessionFile::read(&path).unwrap().len()))
    });
    group.bench_function("open (lock + load + repair scan)", |b| {
        b.iter(|| black_box(SessionFile::open(&path).unwrap().1.len()))
    });
    let messages = SessionFile::read(&path).unwrap();
    let (mut file, _) = SessionFile::open(&path).unwrap();
    group.bench_function("atomic rewrite", |b| {
        b.iter(|| file.rewrite(&messages).unwrap())
    });
    group.finish();
}

/// Latency percentiles of single appends (20,000 of them, one message each, through
/// `SessionLog`'s durability step, no fsync): the mean hides that almost every append is
/// fast and a few wait for the OS, so the distribution is printed too.
fn append_percentiles() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    for prior in [10usize, 100_000] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        write_session(&path, prior);
        const N: usize = 20_000;
        let times = Arc::new(Mutex::new(Vec::new()));
        let stack = pipeline! {
            use SessionLog { path: path.clone(), sync: false };
            run Steps {
                iters: N as u64,
                push: true,
                out: Arc::new(Mutex::new(Duration::ZERO)),
                times: Some(times.clone()),
            };
        };
        let mut env = Env::new();
        runtime.block_on(stack.call(&mut env)).unwrap();
        let mut times = std::mem::take(&mut *times.lock().unwrap());
        times.sort();
        let mean = times.iter().sum::<Duration>() / N as u32;
        eprintln!(
            "append_percentiles/no_fsync/{prior}: p50 {:?}  p90 {:?}  p99 {:?}  max {:?}  mean {mean:?}",
            times[N / 2],
            times[N * 9 / 10],
            times[N * 99 / 100],
            times[N - 1]
        );
    }
}

criterion_group!(benches, append, load_and_rewrite, terminal_overhead);

fn main() {
    append_percentiles();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
