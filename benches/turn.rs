//! Per-turn overhead of a 6-layer `brute_agent!` stack against the same layers written
//! by hand as nested async functions, measured side by side in one run.
//!
//! Each turn: a fresh env with one user message, a system prompt layer, a loop making
//! three passes, an iteration guard, three pass-through layers, and a terminal that
//! appends a fixed assistant message (no model latency).
//!
//! Run: `cargo bench --bench turn`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};

#[path = "common/turn_stack.rs"]
mod stack;
use stack::hand;

fn turn(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime");
    let agent = stack::agent();

    // Both versions must do the same work.
    let ours = runtime.block_on(agent.start("hi")).expect("brute turn");
    let theirs = runtime
        .block_on(hand::turn("hi"))
        .expect("hand-written turn");
    assert_eq!(ours.env.messages, theirs.messages);
    assert_eq!(ours.env.iteration, theirs.iteration);

    let mut group = c.benchmark_group("turn/6 layers, 3 passes");
    group.bench_function("hand-written nested async fns", |b| {
        b.to_async(&runtime)
            .iter(|| async { black_box(hand::turn(black_box("hi")).await) })
    });
    group.bench_function("brute_agent!", |b| {
        b.to_async(&runtime)
            .iter(|| async { black_box(agent.start(black_box("hi")).await) })
    });
    group.finish();
}

criterion_group!(benches, turn);
criterion_main!(benches);
