//! Zero-cost, measured: one agent turn through brute's stacks against the same turn
//! written without brute (a hand-written loop, boxed `dyn` layers and tower
//! `ServiceBuilder` layers over their own message, conversation, model and tool
//! types), side by side in one run: time, allocations and bytes, and instructions
//! under callgrind.
//!
//! The scenario (`common/stacks/scenario.rs`): a system and a user message, a
//! zero-latency scripted model that calls a no-op tool once per reply N times and then
//! answers, for N = 5 and N = 20 (N + 1 model calls, N tool runs). Every row first
//! runs one turn and must produce the independent hand-written row's transcript,
//! advertised tools, passes and end, and run its tool N times; only then is it timed.
//!
//! ```text
//! cargo bench --bench stacks                      # every row: time, allocations, instructions
//! cargo bench --bench stacks -- --turns=2000 --repeats=3 --callgrind-turns=200
//! cargo bench --bench stacks -- --no-callgrind    # without valgrind
//! # one row under callgrind, by hand:
//! BIN=$(ls -t target/release/deps/stacks-* | grep -v '\.d$' | head -1)
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect='*count_turns*' \
//!     $BIN brute 5 1000 2>&1 | grep Collected          # then divide by 1000
//! ```
//!
//! Without `--bench` and without a row (as `cargo test --benches` runs it) it checks
//! every row, times a few turns, and checks the type sizes `BENCHMARKS.md` quotes.

use std::future::Future;
use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use brute::{Env, Handler};
use tokio::runtime::Runtime;

#[path = "common/stacks/alloc.rs"]
mod alloc;
#[path = "common/stacks/boxed.rs"]
mod boxed;
#[path = "common/stacks/brute_rows.rs"]
mod brute_rows;
#[path = "common/stacks/check.rs"]
mod check;
#[path = "common/stacks/hand.rs"]
mod hand;
#[path = "common/stacks/independent/mod.rs"]
mod independent;
#[path = "common/stacks/scenario.rs"]
mod scenario;
#[path = "common/stacks/tower_layers.rs"]
mod tower_layers;

use check::Summary;

#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The rows, in the order of the table: the command-line key and the label. The first
/// is the reference every ratio divides by.
const ROWS: [(&str, &str); 16] = [
    ("hand", "hand-written loop, own types (the limit)"),
    ("boxed", "boxed `dyn` layers, own types"),
    ("tower", "tower `ServiceBuilder` layers, own types"),
    ("brute", "**brute's default stack** (`DefaultToolPipeline`)"),
    (
        "brute-minimal",
        "brute, a minimal tool layer over `ToolSet::prepare`/`run`",
    ),
    (
        "brute-direct",
        "brute, a tool layer calling the tool's body directly",
    ),
    (
        "brute-no-snapshot",
        "brute, `DefaultToolPipeline` without `Snapshot` (`Validate` → `Execute`)",
    ),
    (
        "brute-no-truncation",
        "brute, `DefaultToolPipeline`, tool with `Truncation::None`",
    ),
    (
        "brute-all-off",
        "brute, `DefaultToolPipeline`, both of the above",
    ),
    (
        "brute-approval",
        "brute, default stack with an `Approval` policy (allows every call)",
    ),
    (
        "brute-no-timeout",
        "brute, default stack with `timeout: None`",
    ),
    (
        "brute-redact",
        "brute, default stack with one value to `redact` (not in the output)",
    ),
    (
        "brute-no-env-secrets",
        "brute, default stack with `env_secrets: false`",
    ),
    (
        "hand-on-brute",
        "hand-written loop on brute's `Env`, `Message` and `ScriptedModel`",
    ),
    ("boxed-on-brute", "boxed `dyn` layers on brute's types"),
    (
        "tower-on-brute",
        "tower layers on brute's types, the whole `Env` by value",
    ),
];

/// Tool calls per turn of the two scenarios.
const CALLS: [usize; 2] = [5, 20];

/// A stack under test: runs one turn of the scenario.
trait Stack {
    /// What a turn returns: the env or conversation.
    type Out;
    fn run_turn(&mut self) -> impl Future<Output = Result<Self::Out, BoxError>>;
    fn summary(out: &Self::Out) -> Summary;
}

impl Stack for independent::hand::Hand {
    type Out = independent::Conv;
    async fn run_turn(&mut self) -> Result<independent::Conv, BoxError> {
        Ok(self.turn().await?)
    }
    fn summary(out: &independent::Conv) -> Summary {
        out.summary()
    }
}

impl Stack for independent::boxed::Boxed {
    type Out = independent::Conv;
    async fn run_turn(&mut self) -> Result<independent::Conv, BoxError> {
        Ok(self.turn().await?)
    }
    fn summary(out: &independent::Conv) -> Summary {
        out.summary()
    }
}

impl Stack for independent::tower::Towered {
    type Out = independent::Conv;
    fn run_turn(&mut self) -> impl Future<Output = Result<independent::Conv, BoxError>> {
        self.turn()
    }
    fn summary(out: &independent::Conv) -> Summary {
        out.summary()
    }
}

impl Stack for hand::Hand {
    type Out = Env;
    async fn run_turn(&mut self) -> Result<Env, BoxError> {
        Ok(self.turn().await?)
    }
    fn summary(out: &Env) -> Summary {
        Summary::of_env(out)
    }
}

impl Stack for boxed::Boxed {
    type Out = Env;
    async fn run_turn(&mut self) -> Result<Env, BoxError> {
        Ok(self.turn().await?)
    }
    fn summary(out: &Env) -> Summary {
        Summary::of_env(out)
    }
}

impl Stack for tower_layers::Towered {
    type Out = Env;
    fn run_turn(&mut self) -> impl Future<Output = Result<Env, BoxError>> {
        self.turn()
    }
    fn summary(out: &Env) -> Summary {
        Summary::of_env(out)
    }
}

impl<H: Handler<Env>> Stack for brute_rows::BruteRow<H> {
    type Out = Env;
    async fn run_turn(&mut self) -> Result<Env, BoxError> {
        Ok(self.turn().await?)
    }
    fn summary(out: &Env) -> Summary {
        Summary::of_env(out)
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
    /// One turn outside `count_turns`, summarised.
    fn once(&mut self, runtime: &Runtime) -> Result<Summary, BoxError>;
    fn count(&mut self, runtime: &Runtime, turns: u32);
}

impl<S: Stack> Runner for S {
    fn once(&mut self, runtime: &Runtime) -> Result<Summary, BoxError> {
        let out = runtime.block_on(self.run_turn())?;
        Ok(S::summary(&out))
    }

    fn count(&mut self, runtime: &Runtime, turns: u32) {
        count_turns(self, runtime, turns);
    }
}

/// One row of the table: a stack and its tool's run counter.
struct Row {
    key: &'static str,
    runs: Box<dyn Fn() -> u64>,
    stack: Box<dyn Runner>,
}

fn build(key: &str, calls: usize, root: &Path) -> Option<Row> {
    let (key, _) = ROWS.into_iter().find(|(k, _)| *k == key)?;
    if matches!(key, "hand" | "boxed" | "tower") {
        let model = independent::Script::new(calls);
        let tool = independent::Tool::default();
        let body = tool.clone();
        let stack: Box<dyn Runner> = match key {
            "hand" => Box::new(independent::hand::Hand::new(model, body)),
            "boxed" => Box::new(independent::boxed::Boxed::new(model, body)),
            _ => Box::new(independent::tower::Towered::new(model, body)),
        };
        let runs = Box::new(move || tool.runs());
        return Some(Row { key, runs, stack });
    }
    let model = scenario::model(calls);
    let tool = scenario::Noop::default();
    let body = tool.clone();
    let root = root.to_path_buf();
    let stack: Box<dyn Runner> = match key {
        "hand-on-brute" => Box::new(hand::Hand::new(model, body)),
        "boxed-on-brute" => Box::new(boxed::Boxed::new(model, body)),
        "tower-on-brute" => Box::new(tower_layers::Towered::new(model, body)),
        "brute" => Box::new(brute_rows::default_stack(model, body, root)),
        "brute-no-snapshot" => Box::new(brute_rows::no_snapshot(model, body, root)),
        "brute-no-truncation" => Box::new(brute_rows::no_truncation(model, body, root)),
        "brute-all-off" => Box::new(brute_rows::all_off(model, body, root)),
        "brute-approval" => Box::new(brute_rows::with_approval(model, body, root)),
        "brute-no-timeout" => Box::new(brute_rows::no_timeout(model, body, root)),
        "brute-redact" => Box::new(brute_rows::redact_one(model, body, root)),
        "brute-no-env-secrets" => Box::new(brute_rows::no_env_secrets(model, body, root)),
        "brute-minimal" => Box::new(brute_rows::minimal(model, body, root)),
        "brute-direct" => Box::new(brute_rows::direct(model, body)),
        _ => return None,
    };
    let runs = Box::new(move || tool.runs());
    Some(Row { key, runs, stack })
}

/// Runs one turn of `row` and checks that it did the reference's work: the same
/// transcript, advertised tools, passes and end, and `calls` tool runs.
fn check(row: &mut Row, expected: &Summary, calls: usize, runtime: &Runtime) {
    let before = (row.runs)();
    let got = row
        .stack
        .once(runtime)
        .unwrap_or_else(|e| panic!("row `{}` failed: {e}", row.key));
    let key = row.key;
    assert_eq!(got.messages, expected.messages, "row `{key}`: transcript");
    assert_eq!(got.tools, expected.tools, "row `{key}`: advertised tools");
    assert_eq!(got.passes, expected.passes, "row `{key}`: passes");
    assert_eq!(got.limited, expected.limited, "row `{key}`: end");
    assert_eq!(
        (row.runs)() - before,
        calls as u64,
        "row `{key}`: tool runs"
    );
}

/// The reference row's turn, checked against the scenario itself: system + user
/// message, `calls` tool calls and results, the answer; `calls + 1` model calls.
fn expected(calls: usize, root: &Path, runtime: &Runtime) -> Summary {
    let mut reference = build(ROWS[0].0, calls, root).expect("the reference row");
    let got = reference.stack.once(runtime).expect("the reference turn");
    let roles: Vec<&str> = got.messages.iter().map(|m| m.role.as_str()).collect();
    let mut want = vec!["system", "user"];
    for _ in 0..calls {
        want.extend(["assistant", "tool"]);
    }
    want.push("assistant");
    assert_eq!(roles, want, "the reference turn");
    assert_eq!(
        got.model_calls(),
        calls + 1,
        "the reference turn's model calls"
    );
    assert_eq!(
        (reference.runs)(),
        calls as u64,
        "the reference turn's tool runs"
    );
    assert_eq!(
        got.passes as usize,
        calls + 1,
        "the reference turn's passes"
    );
    assert!(!got.limited, "the reference turn ended by itself");
    got
}

/// The figures of one row in one scenario.
#[derive(Clone, Copy, Default)]
struct Figures {
    /// Median, fastest and slowest time per turn over the repeats, in ns.
    median: f64,
    fastest: f64,
    slowest: f64,
    /// Allocator calls and bytes per turn.
    allocs: f64,
    bytes: f64,
    /// Instructions per turn under callgrind, when measured.
    instructions: Option<f64>,
}

/// Times every row, `repeats` times `turns` turns, interleaved (each repeat starts at
/// another row), after a warm-up; and counts allocations per turn.
fn measure(rows: &mut [Row], runtime: &Runtime, turns: u32, repeats: usize) -> Vec<Figures> {
    for row in rows.iter_mut() {
        row.stack.count(runtime, (turns / 10).max(1));
    }
    let alloc_turns = 1_000;
    let allocs: Vec<(f64, f64)> = rows
        .iter_mut()
        .map(|row| {
            let (calls, bytes) = alloc::counted(|| row.stack.count(runtime, alloc_turns));
            (
                calls as f64 / f64::from(alloc_turns),
                bytes as f64 / f64::from(alloc_turns),
            )
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
        .map(|(mut t, (allocs, bytes))| {
            t.sort_by(f64::total_cmp);
            Figures {
                median: t[t.len() / 2],
                fastest: t[0],
                slowest: t[t.len() - 1],
                allocs,
                bytes,
                instructions: None,
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
            .map_or(Ok(1_000), |n| n.parse())
            .expect("a number of turns");
        instructions(key, calls, turns, dir.path(), &runtime);
        return;
    }
    let full = args.iter().any(|a| a == "--bench");
    let turns = flag("--turns").unwrap_or(if full { 20_000 } else { 200 });
    let repeats = flag("--repeats").unwrap_or(if full { 5 } else { 1 }) as usize;
    let callgrind_turns = (full && !args.iter().any(|a| a == "--no-callgrind"))
        .then(|| flag("--callgrind-turns").unwrap_or(1_000));
    if !full {
        check_quoted_sizes();
    }
    table(turns, repeats, callgrind_turns, dir.path(), &runtime);
}

/// One row only, for callgrind: checks it and warms it up outside `count_turns`, then
/// runs exactly `turns` turns in `count_turns`.
fn instructions(key: &str, calls: usize, turns: u32, root: &Path, runtime: &Runtime) {
    let keys: Vec<_> = ROWS.iter().map(|(k, _)| *k).collect();
    let Some(mut row) = build(key, calls, root) else {
        eprintln!("unknown row `{key}`; the rows are: {}", keys.join(", "));
        std::process::exit(2);
    };
    let expected = expected(calls, root, runtime);
    check(&mut row, &expected, calls, runtime);
    drop(row.stack.once(runtime));
    row.stack.count(runtime, turns);
    println!(
        "{key}: {turns} turns of {calls} tool calls in `count_turns`; instructions per turn = Collected / {turns}"
    );
}

/// Instructions per turn of one row: this binary under callgrind, counting only
/// `count_turns`. `None` when valgrind cannot run.
fn callgrind(key: &str, calls: usize, turns: u32) -> Option<f64> {
    let exe = std::env::current_exe().ok()?;
    let output = Command::new("valgrind")
        .args([
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            "--toggle-collect=*count_turns*",
        ])
        .arg(exe)
        .args([key.to_string(), calls.to_string(), turns.to_string()])
        .output()
        .ok()?;
    if !output.status.success() {
        eprintln!(
            "callgrind of `{key}` failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        return None;
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let collected = stderr.lines().find_map(|l| {
        l.split_once("Collected :")
            .map(|(_, n)| n.trim().to_string())
    })?;
    Some(collected.parse::<f64>().ok()? / f64::from(turns))
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_string())
}

fn table(turns: u32, repeats: usize, callgrind_turns: Option<u32>, root: &Path, runtime: &Runtime) {
    println!("load average at start: {}", load());
    println!(
        "{turns} turns x {repeats} repeats per row, interleaved; current-thread runtime; \
         {} environment variables look like secrets to the redaction",
        secrets_in_env()
    );
    println!(
        "sizes: brute `Message` {} bytes, `Env` {} bytes; the independent rows' message {} bytes, conversation {} bytes",
        std::mem::size_of::<brute::Message>(),
        std::mem::size_of::<Env>(),
        std::mem::size_of::<independent::Msg>(),
        std::mem::size_of::<independent::Conv>(),
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
            "N = {calls}: every row produced the reference transcript ({} messages), {} model calls and {calls} tool runs",
            expected.messages.len(),
            expected.model_calls(),
        );
        figures.push(measure(&mut rows, runtime, turns, repeats));
    }
    println!("load average after the timings: {}", load());
    if let Some(turns) = callgrind_turns {
        let available = Command::new("valgrind")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if available {
            println!("callgrind: {turns} turns per row and scenario, one valgrind run each");
            for (n, calls) in CALLS.into_iter().enumerate() {
                for (i, (key, _)) in ROWS.iter().enumerate() {
                    figures[n][i].instructions = callgrind(key, calls, turns);
                }
            }
            println!("load average after callgrind: {}", load());
        } else {
            println!("valgrind not found: no instruction counts");
        }
    }
    println!();
    for (n, calls) in CALLS.into_iter().enumerate() {
        print_scenario(calls, &figures[n]);
    }
    print_per_call(&figures[0], &figures[1]);
}

fn ratio(x: Option<f64>, reference: Option<f64>) -> String {
    match (x, reference) {
        (Some(x), Some(r)) => format!("{:.2}", x / r),
        _ => "–".to_string(),
    }
}

fn count(x: Option<f64>) -> String {
    x.map_or("–".to_string(), |x| thousands(x.round()))
}

fn print_scenario(calls: usize, figures: &[Figures]) {
    let reference = figures[0];
    println!("N = {calls} tool calls ({} model calls):\n", calls + 1);
    println!(
        "| row | µs per turn (fastest–slowest) | × hand | instructions per turn | × hand | allocations | bytes | × hand (bytes) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (f, (_, label)) in figures.iter().zip(ROWS) {
        println!(
            "| {label} | {:.2} ({:.2}–{:.2}) | {:.2} | {} | {} | {} | {} | {:.2} |",
            f.median / 1e3,
            f.fastest / 1e3,
            f.slowest / 1e3,
            f.median / reference.median,
            count(f.instructions),
            ratio(f.instructions, reference.instructions),
            number(f.allocs),
            thousands(f.bytes.round()),
            f.bytes / reference.bytes,
        );
    }
    println!();
}

fn print_per_call(five: &[Figures], twenty: &[Figures]) {
    let extra = (CALLS[1] - CALLS[0]) as f64;
    let per_call = |i: usize| {
        let (f5, f20) = (five[i], twenty[i]);
        (
            (f20.median - f5.median) / extra,
            f20.instructions
                .zip(f5.instructions)
                .map(|(a, b)| (a - b) / extra),
            (f20.allocs - f5.allocs) / extra,
            (f20.bytes - f5.bytes) / extra,
        )
    };
    let (ns0, instr0, _, bytes0) = per_call(0);
    println!(
        "Each extra tool call (N = {} against N = {}):\n",
        CALLS[1], CALLS[0]
    );
    println!(
        "| row | instructions | × hand | ns | × hand | allocations | bytes | × hand (bytes) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (i, (_, label)) in ROWS.iter().enumerate() {
        let (ns, instr, allocs, bytes) = per_call(i);
        println!(
            "| {label} | {} | {} | {:.0} | {:.2} | {} | {} | {:.2} |",
            count(instr),
            ratio(instr, instr0),
            ns,
            ns / ns0,
            number(allocs),
            thousands(bytes.round()),
            bytes / bytes0,
        );
    }
}

/// A count per turn: whole when it is whole.
fn number(x: f64) -> String {
    if (x - x.round()).abs() < 0.005 {
        format!("{}", x.round())
    } else {
        format!("{x:.2}")
    }
}

/// A whole number with thousands separators.
fn thousands(x: f64) -> String {
    let digits = format!("{}", x.abs() as u64);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if x < 0.0 { format!("-{out}") } else { out }
}

/// Checks the type sizes `BENCHMARKS.md` quotes (written there as
/// "`size_of::<brute::Message>()` = 152") against the code, so that the document
/// cannot drift from it.
fn check_quoted_sizes() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/BENCHMARKS.md");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let sizes = [
        ("brute::Message", std::mem::size_of::<brute::Message>()),
        ("brute::Env", std::mem::size_of::<Env>()),
    ];
    for (name, size) in sizes {
        let quote = format!("`size_of::<{name}>()` = ");
        let quoted: Vec<&str> = text
            .match_indices(&quote)
            .map(|(at, _)| {
                let rest = &text[at + quote.len()..];
                &rest[..rest
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(rest.len())]
            })
            .collect();
        assert!(!quoted.is_empty(), "{path} quotes no {quote}…");
        for q in quoted {
            assert_eq!(
                q,
                size.to_string(),
                "{path} quotes {quote}{q}, the code says {size}: update BENCHMARKS.md"
            );
        }
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
