//! Scale-out under faults: nginx on 127.0.0.1 in front of three brute-serve
//! processes (this binary re-executed) on one PostgreSQL, a scripted model, and
//! clients that retry with idempotency keys, while servers are killed, stopped past
//! their lease, or lose the database. After each run a checker reads every session
//! through the PostgreSQL store and every server's tool ledger and fails the run on
//! a lost acknowledged message, a duplicate, a tool run twice, an approval decided
//! other than once, or a session that does not validate. With the store's fence
//! broken on purpose, the stale-holder run must fail the checker.
//!
//! Sized for CI (`BRUTE_SCALE_SESSIONS` sessions per run, 60 by default, and more
//! while a fault waits for the workload to progress: it never ends before the last
//! fault); the
//! figures of BENCHMARKS.md come from `scale_figures` (ignored by default) with
//! 1,000 sessions.

#![cfg(unix)]
#![allow(clippy::unwrap_used, dead_code, unreachable_pub)]

use crate::scale;
use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use brute::session::PostgresStore;
use scale::faults::{Fault, Injected, inject};
use scale::topology::{Config, Topology};
use scale::workload::{Outcome, Progress, Record, Shape};
use scale::{checker, server, workload};

/// The lease of every server: short, so that takeovers happen within a run.
const TTL: Duration = Duration::from_secs(2);

/// The sessions of one run: `BRUTE_SCALE_SESSIONS`, else `default`.
fn sessions(default: usize) -> usize {
    std::env::var("BRUTE_SCALE_SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What a run measured and found.
struct Run {
    records: Vec<Record>,
    injected: Vec<Injected>,
    violations: Vec<String>,
    cross_server_approvals: usize,
    elapsed: Duration,
}

/// Serves when this process is a re-executed server; otherwise runs the workload of
/// `shape` through a fresh topology, injecting `faults` (fault, server) one after the
/// other, and checks the result.
fn run(test: &'static str, shape: Shape, faults: &[(Fault, usize)], config: Config) -> Run {
    if let Ok(name) = std::env::var(server::SERVER) {
        server::serve(name);
    }
    // reqwest's rustls (turned on by another crate of the build) needs a provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    // One topology at a time, and no other test of this binary beside it: the runs
    // share two cores, and each measures itself.
    let _alone = crate::ALONE.blocking_write();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let faults = faults.to_vec();
    runtime.block_on(async move {
        let exact = support::harness_name(module_path!(), test);
        let mut topology = Topology::start(test, &exact, config).await;
        let client = reqwest::Client::new();
        topology.ready(&client).await;
        let progress = Arc::new(Progress::default());
        let started = Instant::now();
        let clients = tokio::spawn(workload::run(
            topology.base.clone(),
            shape,
            progress.clone(),
        ));
        let mut injected = Vec::new();
        for (fault, n) in faults {
            injected.push(inject(&mut topology, &progress, fault, n).await);
        }
        progress.faults_over();
        let records = clients.await.unwrap();
        let elapsed = started.elapsed();
        let deaths = topology.deaths();
        assert!(deaths.is_empty(), "servers died on their own: {deaths:#?}");
        let store = PostgresStore::connect(&topology.database).await.unwrap();
        let violations = checker::check(&store, &records, &topology.ledgers()).await;
        let cross_server_approvals = cross_server_approvals(&records);
        let run = Run {
            records,
            injected,
            violations,
            cross_server_approvals,
            elapsed,
        };
        report(test, &run);
        run
    })
}

/// The configuration of a run on 127.0.0.1 with the fence intact.
const PLAIN: Config = Config {
    ttl: TTL,
    unfenced: false,
    netns: false,
    netem: false,
};

/// Approvals answered by another server than the one whose turn paused.
fn cross_server_approvals(records: &[Record]) -> usize {
    records
        .iter()
        .filter(|r| r.kind == "approval")
        .filter(|a| {
            records.iter().any(|t| {
                t.kind == "turn"
                    && t.session == a.session
                    && t.prompt == a.prompt
                    && !t.upstream.is_empty()
                    && t.upstream != a.upstream
            })
        })
        .count()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at]
}

/// Prints the run's figures (the source of BENCHMARKS.md's table).
fn report(test: &str, run: &Run) {
    let turns = run.records.iter().filter(|r| r.kind == "turn").count();
    let mut latencies: Vec<Duration> = run
        .records
        .iter()
        .map(|r| r.done.saturating_duration_since(r.sent))
        .collect();
    latencies.sort();
    let retries: u32 = run.records.iter().map(|r| r.retries).sum();
    let failed = run
        .records
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Failed(_)))
        .count();
    let mut takeovers: Vec<Duration> = run.injected.iter().filter_map(|i| i.takeover).collect();
    takeovers.sort();
    println!(
        "scale {test}: {turns} turns + {} approvals in {:.1} s = {:.1} turns/s; p50 {} ms, p99 {} ms; \
         {retries} client retries; {failed} failed turns; takeover p50 {} ms, p99 {} ms, max {} ms ({} takeovers); \
         {} cross-server approvals; {} violations",
        run.records.len() - turns,
        run.elapsed.as_secs_f64(),
        turns as f64 / run.elapsed.as_secs_f64(),
        percentile(&latencies, 0.5).as_millis(),
        percentile(&latencies, 0.99).as_millis(),
        percentile(&takeovers, 0.5).as_millis(),
        percentile(&takeovers, 0.99).as_millis(),
        takeovers.last().copied().unwrap_or_default().as_millis(),
        takeovers.len(),
        run.cross_server_approvals,
        run.violations.len(),
    );
}

/// The bound on a takeover beyond the lease: nginx's read timeout (a stalled stream
/// is cut after it), the client's backoff and a loaded machine's slack.
fn takeover_bound() -> Duration {
    TTL + scale::topology::read_timeout(TTL) + Duration::from_secs(10)
}

/// Fails the test on any violation, on no cross-server approval, and on a takeover
/// slower than the lease plus [`takeover_bound`].
fn assert_clean(run: &Run) {
    assert!(
        run.violations.is_empty(),
        "{} violations, the first: {:#?}",
        run.violations.len(),
        &run.violations[..run.violations.len().min(20)]
    );
    assert!(
        run.cross_server_approvals >= 1,
        "no approval was decided through another server than the one that paused"
    );
    for injected in &run.injected {
        if let Some(takeover) = injected.takeover {
            assert!(
                takeover <= takeover_bound(),
                "{:?}: {:?} was taken over after {takeover:?}, over the bound {:?}",
                injected.fault,
                injected.call,
                takeover_bound()
            );
        }
    }
}

fn shape(default: usize) -> Shape {
    Shape {
        sessions: sessions(default),
        turns: 3,
        concurrency: 24,
        deadline: Duration::from_secs(if sessions(default) > 100 { 3600 } else { 150 }),
    }
}

#[test]
fn scale_no_faults() {
    let run = run("scale_no_faults", shape(60), &[], PLAIN);
    assert_clean(&run);
}

#[test]
fn scale_sigkill_mid_stream_and_mid_tool_call() {
    let run = run(
        "scale_sigkill_mid_stream_and_mid_tool_call",
        shape(60),
        &[
            (Fault::Kill, 0),
            (Fault::KillMidStream, 1),
            (Fault::Kill, 1),
        ],
        PLAIN,
    );
    assert_clean(&run);
}

#[test]
fn scale_sigstop_past_the_lease_is_fenced() {
    let run = run(
        "scale_sigstop_past_the_lease_is_fenced",
        shape(60),
        &[(Fault::Stop, 1)],
        PLAIN,
    );
    assert_clean(&run);
}

#[test]
fn scale_postgres_restart_mid_turn() {
    let run = run(
        "scale_postgres_restart_mid_turn",
        shape(60),
        &[(Fault::PgRestart, 0)],
        PLAIN,
    );
    assert_clean(&run);
}

#[test]
fn scale_mixed_faults() {
    let run = run(
        "scale_mixed_faults",
        shape(60),
        &[
            (Fault::Kill, 2),
            (Fault::Stop, 0),
            (Fault::PgRestart, 0),
            (Fault::Partition, 1),
        ],
        Config {
            netns: true,
            ..PLAIN
        },
    );
    assert_clean(&run);
}

#[test]
fn scale_partition_from_postgres_past_the_lease_is_fenced() {
    let run = run(
        "scale_partition_from_postgres_past_the_lease_is_fenced",
        shape(60),
        &[(Fault::Partition, 2)],
        Config {
            netns: true,
            ..PLAIN
        },
    );
    assert_clean(&run);
}

#[test]
fn scale_netem_delay_and_loss_to_postgres() {
    let run = run(
        "scale_netem_delay_and_loss_to_postgres",
        shape(12),
        &[],
        Config {
            netns: true,
            netem: true,
            ..PLAIN
        },
    );
    assert_clean(&run);
}

/// The broken fence: the same stale-holder fault with the store's writes unfenced
/// must make the checker report what the stale holder wrote over.
#[test]
fn scale_a_broken_fence_fails_the_checker() {
    let run = run(
        "scale_a_broken_fence_fails_the_checker",
        shape(60),
        &[(Fault::Stop, 1)],
        Config {
            unfenced: true,
            ..PLAIN
        },
    );
    println!(
        "the broken fence's violations: {:#?}",
        &run.violations[..run.violations.len().min(8)]
    );
    assert!(
        run.violations.iter().any(|v| v.starts_with(checker::LOST)),
        "the stale holder wrote over the new holder's turn with its fence broken, \
         and the checker saw no lost message: {:#?}",
        run.violations
    );
}

/// A case of the figures: its name, its faults, its configuration.
type Case = (&'static str, &'static [(Fault, usize)], Config);

/// The figures of BENCHMARKS.md: 1,000 sessions per run (`BRUTE_SCALE_SESSIONS`).
#[test]
#[ignore = "long: the figures of BENCHMARKS.md (cargo test -p brute-serve --features services --test serve_services scale_out::scale_figures -- --ignored)"]
fn scale_figures() {
    let shape = shape(1000);
    let netns = Config {
        netns: true,
        ..PLAIN
    };
    let cases: [Case; 5] = [
        ("none", &[], PLAIN),
        (
            "sigkill",
            &[(Fault::Kill, 0), (Fault::Kill, 1), (Fault::Kill, 2)],
            PLAIN,
        ),
        (
            "sigstop",
            &[(Fault::Stop, 0), (Fault::Stop, 1), (Fault::Stop, 2)],
            PLAIN,
        ),
        (
            "postgres restart",
            &[(Fault::PgRestart, 0), (Fault::PgRestart, 0)],
            PLAIN,
        ),
        (
            "partition",
            &[(Fault::Partition, 0), (Fault::Partition, 1)],
            netns,
        ),
    ];
    // `BRUTE_SCALE_FIGURES=sigkill,partition` runs only those cases.
    let only = std::env::var("BRUTE_SCALE_FIGURES").ok();
    let chosen = |name: &str| {
        only.as_deref()
            .is_none_or(|o| o.split(',').any(|c| c == name))
    };
    for (name, faults, config) in cases.into_iter().filter(|c| chosen(c.0)) {
        println!(
            "figures: {name} (load {})",
            std::fs::read_to_string("/proc/loadavg")
                .unwrap_or_default()
                .trim()
        );
        let run = run("scale_figures", shape, faults, config);
        assert_clean(&run);
    }
}
