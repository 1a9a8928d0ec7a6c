//! Zero-cost, measured: one agent turn through brute's default stack against the same
//! layers written by hand, as `Box<dyn>` trait objects and on tower, side by side in
//! one run (issue 12).
//!
//! The scenario (`common/stacks/scenario.rs`): a system and a user message, a
//! zero-latency scripted model that calls a no-op tool once per reply N times and then
//! answers, for N = 5 and N = 20. Every row first runs one turn and must produce the
//! hand-written row's transcript, iteration count and advertised tools, and run the
//! tool N times; only then is it timed.
//!
//! ```text
//! cargo bench --bench stacks                            # the table (20,000 turns x 5 repeats)
//! cargo bench --bench stacks -- --turns=2000 --repeats=3
//! # instructions per turn of one row (see the commands the full run prints):
//! BIN=$(ls -t target/release/deps/stacks-* | grep -v '\.d$' | head -1)
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect='*count_turns*' \
//!     $BIN brute 5 2000 2>&1 | grep Collected          # then divide by 2000
//! ```
//!
//! Results, with the machine's load and what pays for the gap: `benches/stacks.md`.
//!
//! Without `--bench` and without a row (as `cargo test --benches` runs it) it checks
//! every row and times a few turns, so the target stays built and checked.

use std::future::Future;
use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use brute::{Env, Handler};
use tokio::runtime::Runtime;

#[path = "common/stacks/alloc.rs"]
mod alloc;
#[path = "common/stacks/boxed.rs"]
mod boxed;
#[path = "common/stacks/brute_rows.rs"]
mod brute_rows;
#[path = "common/stacks/hand.rs"]
mod hand;
#[path = "common/stacks/scenario.rs"]
mod scenario;
#[path = "common/stacks/tower_layers.rs"]
mod tower_layers;

#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The rows, in the order of the table: the command-line key and the label.
const ROWS: [(&str, &str); 9] = [
    ("hand", "the loop written by hand (the limit)"),
    ("boxed", "the same four layers as `Box<dyn>` trait objects"),
    ("tower", "the same four layers on tower's `ServiceBuilder`"),
    (
        "brute",
        "**brute**: `SystemPrompt`, `Loop::ToolResult`, `MaxIterations`, `DefaultToolPipeline`, `run model`",
    ),
    (
        "brute-no-snapshot",
        "brute, per-call pipeline without `Snapshot` (`Validate` → `Execute`)",
    ),
    ("brute-no-truncation", "brute, tool with `Truncation::None`"),
    ("brute-all-off", "brute, both of the above"),
    (
        "brute-minimal",
        "brute, a minimal tool layer over `ToolSet::prepare`/`run`",
    ),
    (
        "brute-direct",
        "brute, a minimal tool layer calling the tool's body directly",
    ),
];

/// Tool calls per turn of the two scenarios.
const CALLS: [usize; 2] = [5, 20];

/// A stack under test: runs one turn of the scenario.
trait Stack {
    fn run_turn(&mut self) -> impl Future<Output = Result<Env, BoxError>>;
}

impl Stack for hand::Hand {
    async fn run_turn(&mut self) -> Result<Env, BoxError> {
        Ok(self.turn().await?)
    }
}

impl Stack for boxed::Boxed {
    async fn run_turn(&mut self) -> Result<Env, BoxError> {
        Ok(self.turn().await?)
    }
}

impl Stack for tower_layers::Towered {
    fn run_turn(&mut self) -> impl Future<Output = Result<Env, BoxError>> {
        self.turn()
    }
}

impl<H: Handler<Env>> Stack for brute_rows::BruteRow<H> {
    async fn run_turn(&mut self) -> Result<Env, BoxError> {
        Ok(self.turn().await?)
    }
}

/// Runs `turns` turns of `stack`. Not inlined, so that callgrind can count exactly
/// this (`--toggle-collect='*count_turns*'`).
#[inline(never)]
fn count_turns<S: Stack>(stack: &mut S, runtime: &Runtime, turns: u32) {
    runtime.block_on(async {
        for _ in 0..turns {
            drop(black_box(stack.run_turn().await));
        }
    });
}

/// A stack behind one level of `dyn`, which is only crossed once per batch of turns.
trait Runner {
    fn once(&mut self, runtime: &Runtime) -> Result<Env, BoxError>;
    fn count(&mut self, runtime: &Runtime, turns: u32);
}

impl<S: Stack> Runner for S {
    fn once(&mut self, runtime: &Runtime) -> Result<Env, BoxError> {
        runtime.block_on(self.run_turn())
    }

    fn count(&mut self, runtime: &Runtime, turns: u32) {
        count_turns(self, runtime, turns);
    }
}

/// One row of the table: a stack and the tool body it runs.
struct Row {
    key: &'static str,
    tool: scenario::Noop,
    stack: Box<dyn Runner>,
}

fn build(key: &str, calls: usize, root: &Path) -> Option<Row> {
    let (key, _) = ROWS.into_iter().find(|(k, _)| *k == key)?;
    let model = scenario::model(calls);
    let tool = scenario::Noop::default();
    let body = tool.clone();
    let stack: Box<dyn Runner> = match key {
        "hand" => Box::new(hand::Hand::new(model, body)),
        "boxed" => Box::new(boxed::Boxed::new(model, body)),
        "tower" => Box::new(tower_layers::Towered::new(model, body)),
        "brute" => Box::new(brute_rows::default_stack(model, body, root.to_path_buf())),
        "brute-no-snapshot" => Box::new(brute_rows::no_snapshot(model, body, root.to_path_buf())),
        "brute-no-truncation" => {
            Box::new(brute_rows::no_truncation(model, body, root.to_path_buf()))
        }
        "brute-all-off" => Box::new(brute_rows::all_off(model, body, root.to_path_buf())),
        "brute-minimal" => Box::new(brute_rows::minimal(model, body, root.to_path_buf())),
        "brute-direct" => Box::new(brute_rows::direct(model, body)),
        _ => return None,
    };
    Some(Row { key, tool, stack })
}

/// Runs one turn of `row` and checks that it did the hand-written row's work: the
/// same transcript, passes, advertised tools and end, and `calls` tool runs.
fn check(row: &mut Row, expected: &Env, calls: usize, runtime: &Runtime) {
    let before = row.tool.runs();
    let env = row
        .stack
        .once(runtime)
        .unwrap_or_else(|e| panic!("row `{}` failed: {e}", row.key));
    let key = row.key;
    assert_eq!(
        &env.messages[..],
        &expected.messages[..],
        "row `{key}`: transcript"
    );
    assert_eq!(env.iteration, expected.iteration, "row `{key}`: passes");
    assert_eq!(env.tools, expected.tools, "row `{key}`: advertised tools");
    assert_eq!(env.should_exit, expected.should_exit, "row `{key}`: end");
    assert_eq!(
        row.tool.runs() - before,
        calls as u64,
        "row `{key}`: tool runs"
    );
}

/// The hand-written row's turn, checked against the scenario itself.
fn expected(calls: usize, root: &Path, runtime: &Runtime) -> Env {
    let mut hand = build("hand", calls, root).expect("the hand-written row");
    let env = hand.stack.once(runtime).expect("the hand-written turn");
    let roles: Vec<_> = env.messages.iter().map(|m| m.role.to_string()).collect();
    let mut want = vec!["system", "user"];
    for _ in 0..calls {
        want.extend(["assistant", "tool"]);
    }
    want.push("assistant");
    assert_eq!(roles, want, "the hand-written turn");
    assert_eq!(
        hand.tool.runs(),
        calls as u64,
        "the hand-written turn's tool runs"
    );
    assert_eq!(
        env.iteration as usize,
        calls + 1,
        "the hand-written turn's passes"
    );
    env
}

/// The figures of one row in one scenario.
#[derive(Clone, Copy, Default)]
struct Figures {
    /// Median, fastest and slowest time per turn over the repeats, in ns.
    median: f64,
    fastest: f64,
    slowest: f64,
    /// Allocator calls per turn.
    allocs: f64,
}

/// Times every row, `repeats` times `turns` turns, interleaved (each repeat starts at
/// another row), after a warm-up; and counts allocations per turn.
fn measure(rows: &mut [Row], runtime: &Runtime, turns: u32, repeats: usize) -> Vec<Figures> {
    for row in rows.iter_mut() {
        row.stack.count(runtime, (turns / 10).max(1));
    }
    let alloc_turns = 1_000;
    let allocs: Vec<f64> = rows
        .iter_mut()
        .map(|row| {
            alloc::counted(|| row.stack.count(runtime, alloc_turns)) as f64 / f64::from(alloc_turns)
        })
        .collect();
    let mut times = vec![Vec::with_capacity(repeats); rows.len()];
    for repeat in 0..repeats {
        for k in 0..rows.len() {
            let i = (k + repeat) % rows.len();
            let start = Instant::now();
            rows[i].stack.count(runtime, turns);
            times[i].push(start.elapsed().as_nanos() as f64 / f64::from(turns));
        }
    }
    times
        .into_iter()
        .zip(allocs)
        .map(|(mut t, allocs)| {
            t.sort_by(f64::total_cmp);
            Figures {
                median: t[t.len() / 2],
                fastest: t[0],
                slowest: t[t.len() - 1],
                allocs,
            }
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| {
        args.iter()
            .find_map(|a| a.strip_prefix(name)?.strip_prefix('=')?.parse::<u32>().ok())
    };
    let positional: Vec<&str> = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .map(String::as_str)
        .collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime with timers");
    let dir = tempfile::tempdir().expect("a temporary root for the tools");

    if let Some(key) = positional.first() {
        let calls = positional
            .get(1)
            .map_or(Ok(5), |n| n.parse())
            .expect("N: a number of tool calls");
        let turns = positional
            .get(2)
            .map_or(Ok(2_000), |n| n.parse())
            .expect("a number of turns");
        instructions(key, calls, turns, dir.path(), &runtime);
        return;
    }
    let full = args.iter().any(|a| a == "--bench");
    let turns = flag("--turns").unwrap_or(if full { 20_000 } else { 200 });
    let repeats = flag("--repeats").unwrap_or(if full { 5 } else { 1 }) as usize;
    table(turns, repeats, dir.path(), &runtime);
}

/// One row only, for callgrind: checks it, warms it up, then runs `turns` turns in
/// `count_turns`.
fn instructions(key: &str, calls: usize, turns: u32, root: &Path, runtime: &Runtime) {
    let keys: Vec<_> = ROWS.iter().map(|(k, _)| *k).collect();
    let Some(mut row) = build(key, calls, root) else {
        eprintln!("unknown row `{key}`; the rows are: {}", keys.join(", "));
        std::process::exit(2);
    };
    let expected = expected(calls, root, runtime);
    check(&mut row, &expected, calls, runtime);
    row.stack.count(runtime, 1);
    row.stack.count(runtime, turns);
    println!(
        "{key}: {turns} turns of {calls} tool calls in `count_turns`; instructions per turn = Collected / {turns}"
    );
}

fn table(turns: u32, repeats: usize, root: &Path, runtime: &Runtime) {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average at start: {}", load.trim());
    println!(
        "{turns} turns x {repeats} repeats per row, interleaved; current-thread runtime; \
         {} environment variables look like secrets to the redaction",
        secrets_in_env()
    );
    let mut figures = Vec::new();
    for calls in CALLS {
        let mut rows: Vec<Row> = ROWS
            .iter()
            .map(|(key, _)| build(key, calls, root).expect("every row builds"))
            .collect();
        let expected = expected(calls, root, runtime);
        for row in &mut rows {
            check(row, &expected, calls, runtime);
        }
        println!(
            "N = {calls}: every row produced the hand-written transcript ({} messages) and {calls} tool runs",
            expected.messages.len()
        );
        figures.push(measure(&mut rows, runtime, turns, repeats));
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average at end: {}\n", load.trim());
    print_table(&figures[0], &figures[1]);
    println!("\ninstructions per turn (callgrind, one row per run):\n");
    println!("cargo bench --bench stacks --no-run");
    println!("BIN=$(ls -t target/release/deps/stacks-* | grep -v '\\.d$' | head -1)");
    println!(
        "for row in {}; do for n in 5 20; do echo \"$row N=$n\"; valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect='*count_turns*' $BIN $row $n 2000 2>&1 | grep Collected; done; done   # divide by 2000",
        ROWS.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(" ")
    );
}

fn print_table(five: &[Figures], twenty: &[Figures]) {
    let extra = (CALLS[1] - CALLS[0]) as f64;
    let (hand5, hand20) = (five[0], twenty[0]);
    let hand_call = (hand20.median - hand5.median) / extra;
    let hand_call_allocs = (hand20.allocs - hand5.allocs) / extra;
    println!(
        "| implementation | µs per turn, N=5 (fastest–slowest) | × hand | allocations per turn | × hand \
         | µs per turn, N=20 | × hand | allocations | ns per extra tool call | × hand | allocations per extra call |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (i, (_, label)) in ROWS.iter().enumerate() {
        let (f5, f20) = (five[i], twenty[i]);
        let call = (f20.median - f5.median) / extra;
        let call_allocs = (f20.allocs - f5.allocs) / extra;
        println!(
            "| {label} | {:.2} ({:.2}–{:.2}) | {:.2} | {} | {:.2} | {:.2} | {:.2} | {} | {:.0} | {:.2} | {} |",
            f5.median / 1e3,
            f5.fastest / 1e3,
            f5.slowest / 1e3,
            f5.median / hand5.median,
            number(f5.allocs),
            f5.allocs / hand5.allocs,
            f20.median / 1e3,
            f20.median / hand20.median,
            number(f20.allocs),
            call,
            call / hand_call,
            number(call_allocs),
        );
    }
    println!(
        "\n(hand-written: {:.0} ns and {} allocations per extra tool call)",
        hand_call,
        number(hand_call_allocs)
    );
}

/// A count per turn: whole when it is whole.
fn number(x: f64) -> String {
    if (x - x.round()).abs() < 0.005 {
        format!("{}", x.round())
    } else {
        format!("{x:.2}")
    }
}

/// How many environment variables brute's redaction takes for secrets (its rule:
/// the name says key, token, secret, password or credential, and the value has 8
/// characters or more). Only the count is printed.
fn secrets_in_env() -> usize {
    std::env::vars()
        .filter(|(name, value)| {
            let upper = name.to_ascii_uppercase();
            value.len() >= 8
                && ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"]
                    .iter()
                    .any(|word| upper.contains(word))
        })
        .count()
}
