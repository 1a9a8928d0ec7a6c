//! Instruction counts of the `turn` benchmark, for a measurement that machine load
//! cannot disturb: run each variant under callgrind and compare the totals.
//!
//! ```text
//! cargo bench --bench turn_instructions --no-run
//! BIN=$(ls -t target/release/deps/turn_instructions-* | grep -v '\.d$' | head -1)
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null $BIN hand  2>&1 | grep Collected
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null $BIN brute 2>&1 | grep Collected
//! ```
//!
//! Without an argument (as `cargo bench` runs it) it does a short run of both, so the
//! target stays built and checked.

#[path = "common/turn_stack.rs"]
mod turn;

fn main() {
    let variant = std::env::args().nth(1);
    let turns = if variant.is_some() { 100_000 } else { 1_000 };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime");
    let agent = turn::agent();
    runtime.block_on(async {
        for _ in 0..turns {
            match variant.as_deref() {
                Some("hand") => drop(std::hint::black_box(turn::hand::turn("hi").await)),
                Some("brute") => drop(std::hint::black_box(agent.start("hi").await)),
                _ => {
                    drop(std::hint::black_box(turn::hand::turn("hi").await));
                    drop(std::hint::black_box(agent.start("hi").await));
                }
            }
        }
    });
}
