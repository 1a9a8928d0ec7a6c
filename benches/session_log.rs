//! The session log's costs: appending one message at 10 and 100,000 prior messages
//! (the real path: a message pushed, then `env.checkpoint()` inside `SessionLog`),
//! loading a 100,000-message file, and the atomic rewrite of one.
//!
//! Run: `cargo bench --bench session_log`

#![allow(clippy::unwrap_used)]

use std::hint::black_box;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use brute::{Env, Handler, Message, SessionFile, SessionLog, ToolCall, handler_fn, pipeline};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

/// A realistic mix: user prompts, tool calls, tool results of some length, answers.
fn message(i: usize) -> Message {
    match i % 4 {
        0 => Message::user(format!(
            "Please look at file number {i} and tell me what it does."
        )),
        1 => Message::tool_calls(
            "",
            vec![ToolCall::new(
                format!("call_{i}"),
                "read",
                serde_json::json!({ "path": format!("src/file_{i}.rs") }),
            )],
        ),
        2 => Message::tool_result(
            format!("call_{}", i - 1),
            "fn main() {\n    println!(\"hello\");\n}\n".repeat(8),
        ),
        _ => Message::assistant(format!(
            "File {i} prints a greeting eight times; nothing else happens there."
        )),
    }
}

fn write_session(path: &Path, n: usize) {
    let (mut file, _) = SessionFile::open(path).unwrap();
    let messages: Vec<Message> = (0..n).map(message).collect();
    // `rewrite` writes the whole history in one go.
    file.rewrite(&messages).unwrap();
}

/// Times `iters` appends of one message each through `SessionLog`'s checkpoint, on a
/// session that holds `prior` messages.
fn append_through_session_log(path: &Path, sync: bool, iters: u64) -> Duration {
    let elapsed = Arc::new(Mutex::new(Duration::ZERO));
    let out = elapsed.clone();
    let stack = pipeline! {
        use SessionLog { path: path.to_path_buf(), sync: sync };
        run handler_fn(move |env: &mut Env| {
            let start = Instant::now();
            for i in 0..iters {
                env.messages.push(message(i as usize % 4 + 1));
                env.checkpoint().unwrap();
            }
            *out.lock().unwrap() = start.elapsed();
            async { Ok(()) }
        });
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut env = Env::new();
    runtime.block_on(stack.call(&mut env)).unwrap();
    *elapsed.lock().unwrap()
}

fn append(c: &mut Criterion) {
    let mut group = c.benchmark_group("session_log/append_one_message");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(4));
    for prior in [10usize, 100_000] {
        for sync in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("s.jsonl");
            let label = if sync { "fsync" } else { "no_fsync" };
            group.bench_with_input(BenchmarkId::new(label, prior), &prior, |b, &prior| {
                b.iter_custom(|iters| {
                    // Same starting size for every sample.
                    write_session(&path, prior);
                    append_through_session_log(&path, sync, iters)
                })
            });
        }
    }
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

criterion_group!(benches, append, load_and_rewrite);
criterion_main!(benches);
