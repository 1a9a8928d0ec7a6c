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

use std::process::Command;

#[path = "common/turn_stack.rs"]
mod turn;

/// Turns counted per callgrind run.
const TURNS: u32 = 100_000;

/// Runs `turns` turns, each the future `turn` makes. Not inlined, so that callgrind
/// counts exactly this (`--toggle-collect='*count_turns*'`).
#[inline(never)]
fn count_turns<F: Future>(
    runtime: &tokio::runtime::Runtime,
    turns: u32,
    mut turn: impl FnMut() -> F,
) {
    runtime.block_on(async {
        for _ in 0..turns {
            drop(std::hint::black_box(turn().await));
        }
    });
}

/// Instructions per turn of `version`: this binary under callgrind.
fn callgrind(version: &str) -> Option<f64> {
    let exe = std::env::current_exe().ok()?;
    let output = Command::new("valgrind")
        .args([
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            "--toggle-collect=*count_turns*",
        ])
        .arg(exe)
        .arg(version)
        .output()
        .ok()?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let collected = stderr.lines().find_map(|l| {
        l.split_once("Collected :")
            .map(|(_, n)| n.trim().to_string())
    })?;
    Some(collected.parse::<f64>().ok()? / f64::from(TURNS))
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_string())
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
