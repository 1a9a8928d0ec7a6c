//! Cost of the compaction size check that runs before every model call, at 1,000 and
//! 100,000 messages: the per-message token cache against estimating the whole history
//! each time.
//!
//! Run: `cargo bench --bench compaction`

use std::hint::black_box;
use std::time::{Duration, Instant};

use brute::compaction::{Heuristic, TokenEstimator, conversation_tokens};
use brute::{Env, Message, ToolCall};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

fn history(n: usize) -> Vec<Message> {
    (0..n)
        .map(|i| match i % 3 {
            0 => Message::user(format!("question {i} about the code in src/lib.rs")),
            1 => Message::tool_calls(
                "",
                vec![ToolCall::new(
                    format!("c{i}"),
                    "read",
                    serde_json::json!({"path": "src/lib.rs"}),
                )],
            ),
            _ => Message::tool_result(format!("c{}", i - 1), "fn main() {}\n".repeat(20)),
        })
        .collect()
}

fn size_check(c: &mut Criterion) {
    let mut group = c.benchmark_group("compaction size check per model call");
    for n in [1_000usize, 100_000] {
        let base = history(n);
        group.bench_with_input(BenchmarkId::new("cached (brute)", n), &n, |b, _| {
            b.iter_custom(|iters| {
                let mut env = Env::new();
                env.messages = base.clone().into();
                conversation_tokens(&mut env, &Heuristic);
                let mut spent = Duration::ZERO;
                for i in 0..iters {
                    // One new message per call, as a loop appends them.
                    env.messages.push(Message::assistant(format!("step {i}")));
                    let start = Instant::now();
                    black_box(conversation_tokens(&mut env, &Heuristic));
                    spent += start.elapsed();
                }
                spent
            })
        });
        group.bench_with_input(
            BenchmarkId::new("whole history each call", n),
            &n,
            |b, _| {
                b.iter_custom(|iters| {
                    let mut messages = base.clone();
                    let mut spent = Duration::ZERO;
                    for i in 0..iters {
                        messages.push(Message::assistant(format!("step {i}")));
                        let start = Instant::now();
                        black_box(
                            messages
                                .iter()
                                .map(|m| Heuristic.estimate(m))
                                .sum::<usize>(),
                        );
                        spent += start.elapsed();
                    }
                    spent
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, size_check);
criterion_main!(benches);
