//! The tiers of `cargo xtask test`, and the one summary printed after them.
//!
//! - **offline**: `cargo test --workspace`, what plain `cargo test` runs on a fresh
//!   clone: every test that needs no outside service.
//! - **services**: what the `services` feature adds in the packages that have it (the
//!   root package, brute-serve, brute-mcp): the test binaries declared with
//!   `required-features = ["services"]` (read from `cargo metadata`), and the single
//!   tests that other binaries ignore without the feature
//!   (`#[cfg_attr(not(feature = "services"), ignore = "needs ...")]`), which those
//!   binaries list themselves (`--list --ignored`) and which run by exact name, so that
//!   each test runs once, in its tier.
//!
//! Every tier runs with `--no-fail-fast` whatever the one before it did. Cargo's
//! output streams through unchanged while the summary reads it: the `Running` and
//! `Doc-tests` lines, the `test result:` lines, and cargo's `to rerun pass` line of
//! each binary that failed.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use crate::XtaskError;
use crate::json::Json;

/// The feature that adds the services tier, in each package with tests that need a
/// service.
const SERVICES: &str = "services";

/// Passed, failed and ignored tests.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Counts {
    passed: u64,
    failed: u64,
    ignored: u64,
}

impl Counts {
    /// The counts of a `test result: ...` line, `None` for any other line.
    fn of_result_line(line: &str) -> Option<Counts> {
        let rest = line.strip_prefix("test result: ")?;
        let mut counts = Counts::default();
        for part in rest.split(';') {
            let mut words = part.split_whitespace().rev();
            let (Some(what), Some(n)) = (words.next(), words.next()) else {
                continue;
            };
            let Ok(n) = n.parse() else { continue };
            match what {
                "passed" => counts.passed = n,
                "failed" => counts.failed = n,
                "ignored" => counts.ignored = n,
                _ => {}
            }
        }
        Some(counts)
    }

    fn add(&mut self, other: Counts) {
        self.passed += other.passed;
        self.failed += other.failed;
        self.ignored += other.ignored;
    }
}

/// What cargo's output said, read line by line.
#[derive(Debug, Default)]
struct Outcome {
    /// Test binaries (and doc-test runs) that ended with a `test result:` line.
    binaries: u64,
    /// The sum of their counts.
    counts: Counts,
    /// What failed, each once: the arguments cargo says rerun a failed binary
    /// (`-p brute-serve --test a2a`), a crate that did not compile, or a binary that
    /// ended without a result.
    failed: Vec<String>,
    /// The binary running now, until its result line (`tests/a2a.rs (target/..)`).
    running: Option<String>,
}

impl Outcome {
    /// Reads one line of cargo's merged stdout and stderr.
    fn line(&mut self, line: &str) {
        // Cargo's status words are right-aligned to 12 columns; a test's own output
        // (with --nocapture) is not read as cargo's.
        if let Some(binary) = line
            .strip_prefix("     Running ")
            .or_else(|| line.strip_prefix("   Doc-tests "))
        {
            self.unfinished();
            self.running = Some(binary.trim().to_string());
        } else if let Some(counts) = Counts::of_result_line(line) {
            self.binaries += 1;
            self.counts.add(counts);
            self.running = None;
        } else if let Some(error) = line.strip_prefix("error: ") {
            let rerun = [
                "test failed, to rerun pass `",
                "doctest failed, to rerun pass `",
            ]
            .iter()
            .find_map(|start| error.strip_prefix(start)?.strip_suffix('`'));
            if let Some(rerun) = rerun {
                // Says why the binary that ran last failed, also one without a result.
                self.running = None;
                self.fail(rerun);
            } else if error.starts_with("could not compile") {
                self.fail(error);
            }
        }
    }

    /// Notes a failure, once.
    fn fail(&mut self, what: &str) {
        if !self.failed.iter().any(|f| f == what) {
            self.failed.push(what.to_string());
        }
    }

    /// A binary that started and never gave its result (nor cargo a rerun line).
    fn unfinished(&mut self) {
        if let Some(binary) = self.running.take() {
            self.fail(&format!("{binary}: ended without a test result"));
        }
    }
}

/// One tier's runs: what they said, how long they took, and what else went wrong.
#[derive(Debug)]
struct Tier {
    name: &'static str,
    /// The cargo options that select this tier, for the rerun lines of the summary.
    options: &'static str,
    outcome: Outcome,
    took: Duration,
    /// Runs that failed without a failed binary to show for it (a build or listing
    /// error, a cargo that could not start): their commands.
    errors: Vec<String>,
    /// Lines the summary prints under the table.
    notes: Vec<String>,
}

impl Tier {
    fn new(name: &'static str, options: &'static str) -> Tier {
        Tier {
            name,
            options,
            outcome: Outcome::default(),
            took: Duration::ZERO,
            errors: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Runs `cargo ARGS`, its output streamed through and read into this tier.
    fn run(&mut self, args: &[String]) {
        let started = Instant::now();
        let shown = format!("cargo {}", args.join(" "));
        crate::step(&shown);
        let failed_before = self.outcome.failed.len();
        match stream(args, |line| {
            println!("{line}");
            self.outcome.line(line);
        }) {
            Ok(true) => {}
            Ok(false) => {
                // A failed binary says why cargo failed; else say which run did.
                if self.outcome.failed.len() == failed_before {
                    self.errors.push(format!("`{shown}` failed"));
                }
            }
            Err(error) => self.errors.push(error.to_string()),
        }
        self.outcome.unfinished();
        self.took += started.elapsed();
    }

    fn passed(&self) -> bool {
        self.errors.is_empty() && self.outcome.failed.is_empty() && self.outcome.counts.failed == 0
    }
}

/// Runs `cargo ARGS` with its stdout and stderr merged in one pipe (so that cargo's
/// `Running` lines and the tests' results stay in order), handing each line to
/// `each`. Whether cargo exited with 0.
fn stream(args: &[String], mut each: impl FnMut(&str)) -> Result<bool, XtaskError> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let spawn_error = |error| XtaskError::Spawn {
        program: "cargo".to_string(),
        error,
    };
    let (reader, writer) = std::io::pipe().map_err(spawn_error)?;
    let mut command = Command::new(cargo);
    command
        .current_dir(crate::root())
        .args(args)
        // Lines without colour codes, which the summary reads.
        .env("CARGO_TERM_COLOR", "never")
        .stdin(Stdio::null())
        .stdout(writer.try_clone().map_err(spawn_error)?)
        .stderr(writer);
    let mut child = command.spawn().map_err(spawn_error)?;
    // The command holds the pipe's writing ends: without dropping it the reader
    // would never see the end.
    drop(command);
    let mut reader = BufReader::new(reader);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                let text = String::from_utf8_lossy(&line);
                each(text.trim_end_matches(['\n', '\r']));
            }
        }
    }
    let _ = std::io::stdout().flush();
    let status = child.wait().map_err(spawn_error)?;
    Ok(status.success())
}

/// The integration-test targets of the workspace: each crate name (as in the file
/// names cargo prints, `-` made `_`) with its target name, and the targets that
/// require the services feature.
#[derive(Debug, Default, PartialEq)]
struct Targets {
    by_crate_name: BTreeMap<String, String>,
    services: Vec<String>,
}

impl Targets {
    /// Reads `cargo metadata --no-deps --format-version 1`.
    fn of_metadata(metadata: &Json) -> Result<Targets, String> {
        let mut targets = Targets::default();
        let packages = metadata
            .get("packages")
            .and_then(Json::as_array)
            .ok_or("cargo metadata: no `packages`")?;
        for package in packages {
            for target in package
                .get("targets")
                .and_then(Json::as_array)
                .unwrap_or_default()
            {
                let strings = |key| {
                    target
                        .get(key)
                        .and_then(Json::as_array)
                        .unwrap_or_default()
                        .iter()
                        .filter_map(Json::as_str)
                        .collect::<Vec<_>>()
                };
                if !strings("kind").contains(&"test") {
                    continue;
                }
                let name = target
                    .get("name")
                    .and_then(Json::as_str)
                    .ok_or("cargo metadata: a test target without a name")?;
                // `--workspace --test NAME` runs every target of that name.
                if targets
                    .by_crate_name
                    .insert(name.replace('-', "_"), name.to_string())
                    .is_some()
                {
                    return Err(format!(
                        "two packages have a test target `{name}`: the tiers select tests by name"
                    ));
                }
                if strings("required-features").contains(&SERVICES) {
                    targets.services.push(name.to_string());
                }
            }
        }
        Ok(targets)
    }
}

/// The ignored tests of each integration-test binary, from the output of
/// `cargo test -- --list --ignored` (cargo's `Running` lines, then the binary's
/// `NAME: test` lines).
fn ignored_tests(listing: &str, targets: &Targets) -> BTreeMap<String, Vec<String>> {
    let mut ignored: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut binary = None;
    for line in listing.lines() {
        if let Some(running) = line.strip_prefix("     Running ") {
            // `tests/a2a.rs (target/debug/deps/a2a-0123abcd)`: the crate name is the
            // file name up to its hash.
            binary = running
                .rsplit(['/', '\\'])
                .next()
                .and_then(|file| file.trim_end_matches(')').rsplit_once('-'))
                .and_then(|(crate_name, _)| targets.by_crate_name.get(crate_name))
                .cloned();
        } else if line.starts_with("   Doc-tests ") {
            binary = None;
        } else if let (Some(binary), Some(test)) = (&binary, line.strip_suffix(": test")) {
            ignored
                .entry(binary.clone())
                .or_default()
                .push(test.to_string());
        }
    }
    ignored
}

/// Splits `cargo xtask test`'s arguments into cargo's and the test harness's (after
/// `--`).
fn split_args(extra: &[String]) -> (Vec<String>, Vec<String>) {
    match extra.iter().position(|a| a == "--") {
        Some(at) => (extra[..at].to_vec(), extra[at + 1..].to_vec()),
        None => (extra.to_vec(), Vec::new()),
    }
}

/// `--test A --test B ..`.
fn selection<'a>(binaries: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    binaries
        .into_iter()
        .flat_map(|b| ["--test".to_string(), b.clone()])
        .collect()
}

fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// Runs both tiers and prints the summary; fails if anything failed.
pub(crate) fn run(extra: &[String]) -> Result<ExitCode, XtaskError> {
    let started = Instant::now();
    let (cargo_args, harness_args) = split_args(extra);
    let with = |mut args: Vec<String>, harness: &[String]| {
        args.extend(cargo_args.iter().cloned());
        if !harness.is_empty() {
            args.push("--".to_string());
            args.extend(harness.iter().cloned());
        }
        args
    };

    let mut offline = Tier::new("offline", "");
    offline.run(&with(
        strings(&["test", "--workspace", "--no-fail-fast"]),
        &harness_args,
    ));

    let mut services = Tier::new("services", "--features services ");
    let started_services = Instant::now();
    // Which binaries, and which tests of the others, need a service.
    let metadata = capture(&strings(&[
        "metadata",
        "--no-deps",
        "--format-version",
        "1",
    ]))
    .and_then(|text| crate::json::parse(&text).map_err(|e| format!("cargo metadata: {e}")))
    .and_then(|json| Targets::of_metadata(&json));
    let listing_args = with(
        strings(&["test", "--workspace", "--tests"]),
        &strings(&["--list", "--ignored"]),
    );
    crate::step(&format!(
        "cargo {} (the tests the offline tier ignored)",
        listing_args.join(" ")
    ));
    let listing = capture(&listing_args);
    let (targets, listing) = match (metadata, listing) {
        (Ok(targets), Ok(listing)) => (targets, listing),
        (Err(error), _) | (_, Err(error)) => {
            services.errors.push(error);
            (Targets::default(), String::new())
        }
    };
    let single = ignored_tests(&listing, &targets);
    let services_ignored_offline: usize = single.values().map(Vec::len).sum();
    for (binary, tests) in &single {
        println!("{binary}: {}", tests.join(" "));
    }

    let features = strings(&["test", "--workspace", "--features", SERVICES]);
    let everything = selection(targets.services.iter().chain(single.keys()));
    if !everything.is_empty() {
        // One build of every binary of the tier, so that cargo links them side by side.
        let mut build = features.clone();
        build.push("--no-run".to_string());
        build.extend(everything);
        services.run(&with(build, &[]));
        if !targets.services.is_empty() {
            let mut whole = features.clone();
            whole.push("--no-fail-fast".to_string());
            whole.extend(selection(&targets.services));
            services.run(&with(whole, &harness_args));
        }
        for (binary, tests) in &single {
            let mut args = features.clone();
            args.extend(strings(&["--no-fail-fast", "--test", binary]));
            let mut harness = harness_args.clone();
            harness.push("--exact".to_string());
            harness.extend(tests.iter().cloned());
            services.run(&with(args, &harness));
        }
    }
    services.took = started_services.elapsed();
    services.notes.push(format!(
        "{} binaries need a service ({}); {} single tests of {} other binaries do",
        targets.services.len(),
        targets.services.join(", "),
        services_ignored_offline,
        single.len()
    ));
    let other_ignored =
        (offline.outcome.counts.ignored as usize).saturating_sub(services_ignored_offline);
    offline.notes.push(format!(
        "{services_ignored_offline} ignored need a service and ran in the services tier; {other_ignored} ignored otherwise (doc examples marked `ignore`, or `#[ignore]` with its reason above)"
    ));

    let tiers = [offline, services];
    print!("{}", summary(&tiers, started.elapsed()));
    Ok(if tiers.iter().all(Tier::passed) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Runs `cargo ARGS` quietly: its merged output, or why it failed (with that output).
fn capture(args: &[String]) -> Result<String, String> {
    let mut text = String::new();
    match stream(args, |line| {
        text.push_str(line);
        text.push('\n');
    }) {
        Ok(true) => Ok(text),
        Ok(false) => {
            // Its last lines say why (a crate that did not compile, a failed binary).
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(20)..].join("\n    ");
            Err(format!("`cargo {}` failed:\n    {tail}", args.join(" ")))
        }
        Err(error) => Err(error.to_string()),
    }
}

/// `1m 05s`.
fn minutes(took: Duration) -> String {
    let s = took.as_secs();
    format!("{}m {:02}s", s / 60, s % 60)
}

/// The table of the tiers, their notes, and everything that failed.
fn summary(tiers: &[Tier], took: Duration) -> String {
    let mut out = format!(
        "\n==> summary of cargo xtask test: {} after {}\n",
        if tiers.iter().all(Tier::passed) {
            "passed"
        } else {
            "FAILED"
        },
        minutes(took)
    );
    out += &format!(
        "{:<10} {:>9} {:>7} {:>7} {:>8} {:>9}\n",
        "tier", "binaries", "passed", "failed", "ignored", "time"
    );
    let mut total = Counts::default();
    let mut binaries = 0;
    for tier in tiers {
        let c = tier.outcome.counts;
        total.add(c);
        binaries += tier.outcome.binaries;
        out += &format!(
            "{:<10} {:>9} {:>7} {:>7} {:>8} {:>9}\n",
            tier.name,
            tier.outcome.binaries,
            c.passed,
            c.failed,
            c.ignored,
            minutes(tier.took)
        );
    }
    out += &format!(
        "{:<10} {:>9} {:>7} {:>7} {:>8}\n",
        "all", binaries, total.passed, total.failed, total.ignored
    );
    for tier in tiers {
        for note in &tier.notes {
            out += &format!("{}: {note}\n", tier.name);
        }
    }
    let failures: Vec<String> = tiers
        .iter()
        .flat_map(|tier| {
            let binaries = tier.outcome.failed.iter().map(move |f| {
                if f.starts_with('-') {
                    format!("{}: cargo test {}{f}", tier.name, tier.options)
                } else {
                    format!("{}: {f}", tier.name)
                }
            });
            let errors = tier
                .errors
                .iter()
                .map(move |e| format!("{}: {e}", tier.name));
            binaries.chain(errors)
        })
        .collect();
    if !failures.is_empty() {
        out += &format!("FAILED ({}):\n", failures.len());
        for failure in failures {
            out += &format!("  {failure}\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(output: &str) -> Outcome {
        let mut outcome = Outcome::default();
        for line in output.lines() {
            outcome.line(line);
        }
        outcome.unfinished();
        outcome
    }

    #[test]
    fn the_results_of_every_binary_are_summed_and_failures_named_as_cargo_reruns_them() {
        let outcome = read(
            "   Compiling brute v0.1.0
     Running unittests src/lib.rs (target/debug/deps/brute-0123)

running 2 tests
test a ... ok
test b ... ignored, needs PostgreSQL: cargo xtask test

test result: ok. 1 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s

     Running tests/a2a.rs (target/debug/deps/a2a-4567)
test result: FAILED. 3 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.00s

error: test failed, to rerun pass `-p brute-serve --test a2a`
     Running tests/crash.rs (target/debug/deps/crash-89ab)
error: test failed, to rerun pass `--test crash`

Caused by:
  process didn't exit successfully: `/x/crash-89ab` (signal: 9, SIGKILL: kill)
   Doc-tests brute
test result: ok. 4 passed; 0 failed; 5 ignored; 0 measured; 0 filtered out; finished in 2.00s
   Doc-tests brute_serve
test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 2.00s
error: doctest failed, to rerun pass `-p brute-serve --doc`
error: 2 targets failed:
    `-p brute-serve --test a2a`
    `--test crash`
",
        );
        assert_eq!(outcome.binaries, 4);
        assert_eq!(
            outcome.counts,
            Counts {
                passed: 8,
                failed: 3,
                ignored: 6
            }
        );
        assert_eq!(
            outcome.failed,
            [
                "-p brute-serve --test a2a",
                "--test crash",
                "-p brute-serve --doc"
            ]
        );
    }

    #[test]
    fn a_binary_without_a_result_and_a_crate_that_did_not_compile_are_failures() {
        let outcome = read(
            "error: could not compile `brute-serve` (test \"a2a\") due to 1 previous error
     Running tests/gone.rs (target/debug/deps/gone-0123)
     Running tests/next.rs (target/debug/deps/next-4567)
test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
     Running tests/last.rs (target/debug/deps/last-89ab)
",
        );
        assert_eq!(
            outcome.failed,
            [
                "could not compile `brute-serve` (test \"a2a\") due to 1 previous error",
                "tests/gone.rs (target/debug/deps/gone-0123): ended without a test result",
                "tests/last.rs (target/debug/deps/last-89ab): ended without a test result",
            ]
        );
        assert_eq!(outcome.binaries, 1);
    }

    #[test]
    fn a_tests_own_output_is_not_read_as_cargos() {
        let outcome = read(
            "     Running tests/a.rs (target/debug/deps/a-0123)
Running tests/b.rs (printed by a test)
  error: test failed, to rerun pass `--test b`
error: a test's own message, to rerun pass `--test b` but not cargo's
test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
",
        );
        assert!(outcome.failed.is_empty(), "{:?}", outcome.failed);
        assert_eq!(outcome.binaries, 1);
    }

    fn targets() -> Targets {
        let metadata = crate::json::parse(
            r#"{"packages": [
                {"name": "brute-suite", "targets": [
                    {"name": "brute_suite", "kind": ["lib"]},
                    {"name": "session_store", "kind": ["test"]},
                    {"name": "session_workers", "kind": ["test"], "required-features": ["services"]}
                ]},
                {"name": "brute-serve", "targets": [
                    {"name": "web-chat", "kind": ["test"], "required-features": ["services"]},
                    {"name": "serve_load", "kind": ["bench"], "required-features": ["services"]}
                ]}
            ]}"#,
        )
        .expect("valid JSON");
        Targets::of_metadata(&metadata).expect("targets")
    }

    #[test]
    fn the_binaries_that_need_a_service_are_the_test_targets_that_require_the_feature() {
        let targets = targets();
        assert_eq!(targets.services, ["session_workers", "web-chat"]);
        assert_eq!(targets.by_crate_name["web_chat"], "web-chat");
        assert!(!targets.by_crate_name.contains_key("brute_suite"));

        let twice = crate::json::parse(
            r#"{"packages": [{"targets": [{"name": "a", "kind": ["test"]}]},
                             {"targets": [{"name": "a", "kind": ["test"]}]}]}"#,
        )
        .expect("valid JSON");
        let error = Targets::of_metadata(&twice).expect_err("a name twice");
        assert!(error.contains("`a`"), "{error}");
    }

    #[test]
    fn the_single_service_tests_are_read_per_binary_from_the_listing() {
        let listing = "    Finished `test` profile [unoptimized] target(s) in 0.5s
     Running unittests src/lib.rs (target/debug/deps/brute-0123)
0 tests, 0 benchmarks
     Running tests/session_store.rs (target/debug/deps/session_store-4567)
the_postgres_store_keeps_the_promises: test
leases::on_postgres: test

2 tests, 0 benchmarks
     Running tests/web_chat.rs (target/debug/deps/web_chat-89ab)
opens: test
     Running tests/unknown.rs (target/debug/deps/unknown-cdef)
x: test
";
        let ignored = ignored_tests(listing, &targets());
        assert_eq!(
            ignored.into_iter().collect::<Vec<_>>(),
            [
                (
                    "session_store".to_string(),
                    strings(&[
                        "the_postgres_store_keeps_the_promises",
                        "leases::on_postgres"
                    ])
                ),
                ("web-chat".to_string(), strings(&["opens"])),
            ]
        );
    }

    #[test]
    fn cargos_stdout_and_stderr_both_reach_the_reader_and_its_status_is_kept() {
        let mut lines = Vec::new();
        let ok =
            stream(&strings(&["--version"]), |l| lines.push(l.to_string())).expect("cargo runs");
        assert!(ok);
        assert!(lines.iter().any(|l| l.starts_with("cargo ")), "{lines:?}");
        // Cargo writes its errors to stderr.
        let mut lines = Vec::new();
        let ok = stream(&strings(&["no-such-subcommand-of-xtask"]), |l| {
            lines.push(l.to_string())
        })
        .expect("cargo runs");
        assert!(!ok);
        assert!(
            lines
                .iter()
                .any(|l| l.contains("no-such-subcommand-of-xtask")),
            "{lines:?}"
        );
    }

    #[test]
    fn arguments_after_the_double_dash_go_to_the_test_harness() {
        assert_eq!(
            split_args(&strings(&["-j1", "--", "--nocapture"])),
            (strings(&["-j1"]), strings(&["--nocapture"]))
        );
        assert_eq!(split_args(&strings(&["-j1"])), (strings(&["-j1"]), vec![]));
    }

    #[test]
    fn the_summary_has_a_row_per_tier_and_names_every_failure_with_its_tier() {
        let mut offline = Tier::new("offline", "");
        offline.outcome = read(
            "test result: ok. 10 passed; 0 failed; 2 ignored; 0 measured; 0 filtered out; finished in 0.00s\n",
        );
        offline.took = Duration::from_secs(65);
        let mut services = Tier::new("services", "--features services ");
        services.outcome = read(
            "test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
error: test failed, to rerun pass `-p brute-serve --test a2a`
",
        );
        services.errors.push("`cargo metadata` failed".to_string());
        let text = summary(&[offline, services], Duration::from_secs(125));
        assert!(text.contains("FAILED after 2m 05s"), "{text}");
        assert!(
            text.contains("offline            1      10       0        2    1m 05s"),
            "{text}"
        );
        assert!(
            text.contains("all                2      11       1        2"),
            "{text}"
        );
        assert!(
            text.contains("services: cargo test --features services -p brute-serve --test a2a"),
            "{text}"
        );
        assert!(text.contains("services: `cargo metadata` failed"), "{text}");
        assert!(text.contains("FAILED (2):"), "{text}");
    }

    #[test]
    fn a_tier_with_a_failed_test_but_no_rerun_line_still_fails() {
        let mut tier = Tier::new("offline", "");
        tier.outcome = read(
            "test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n",
        );
        assert!(!tier.passed());
        let passing = Tier::new("offline", "");
        assert!(passing.passed());
    }
}
