//! Instructions per turn of the `turn` benchmark's two versions (a 6-layer
//! `brute_agent!` stack and the same layers as nested async fns), under callgrind, so
//! that the machine's load cannot disturb the figure.
//!
//! ```text
//! cargo bench --bench turn_instructions         # both versions under callgrind, one table
//! # one version by hand:
//! BIN=$(ls -t target/release/deps/turn_instructions-* | grep -v '\.d$' | head -1)
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect='*count_turns*' \
//!     $BIN brute 2>&1 | grep Collected          # then divide by 100000
//! ```
//!
//! Without `--bench` (as `cargo test --benches` runs it) it checks that both versions
//! do the same work and runs a few turns of each, so the target stays built and checked.

#[path = "common/callgrind.rs"]
mod harness;
#[path = "common/turn_stack.rs"]
mod turn;

use harness::{count_turns, load};

/// Turns counted per callgrind run.
const TURNS: u32 = 100_000;

/// Instructions per turn of `version`, under callgrind.
fn callgrind(version: &str) -> Option<f64> {
    harness::instructions_per_turn(version, TURNS)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime");
    let agent = turn::agent();

    // Both versions must do the same work.
    let ours = runtime.block_on(agent.start("hi")).expect("brute turn");
    let theirs = runtime
        .block_on(turn::hand::turn("hi"))
        .expect("hand-written turn");
    assert_eq!(ours.env.messages, theirs.messages, "the transcripts");
    assert_eq!(ours.env.iteration, theirs.iteration, "the passes");

    match args
        .iter()
        .find(|a| !a.starts_with('-'))
        .map(String::as_str)
    {
        Some("hand") => count_turns(&runtime, TURNS, || turn::hand::turn("hi")),
        Some("brute") => count_turns(&runtime, TURNS, || agent.start("hi")),
        Some(other) => {
            eprintln!("unknown version `{other}`: hand or brute");
            std::process::exit(2);
        }
        None if args.iter().any(|a| a == "--bench") => {
            println!("load average at start: {}", load());
            let hand = callgrind("hand");
            let brute = callgrind("brute");
            println!("load average at end: {}\n", load());
            let (Some(hand), Some(brute)) = (hand, brute) else {
                println!("valgrind could not run: no instruction counts");
                return;
            };
            println!("| version | instructions per turn | × hand |");
            println!("|---|---|---|");
            println!("| hand-written nested async fns | {hand:.0} | 1.00 |");
            println!(
                "| `brute_agent!` (6 layers) | {brute:.0} | {:.2} |",
                brute / hand
            );
        }
        None => {
            count_turns(&runtime, 1_000, || turn::hand::turn("hi"));
            count_turns(&runtime, 1_000, || agent.start("hi"));
        }
    }
}
