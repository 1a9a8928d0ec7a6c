//! Kill safety on every store: a worker process (this test binary, re-executed) runs
//! turns with a slow model and slow tools on one session; the test kills it with
//! SIGKILL at 50 points of the turn per store (during model calls, during tools, right
//! after writes) and checks after each kill that every acknowledged message is stored,
//! in order, and that the only damage is what a crash may leave (tool calls without a
//! result at the end), which the next turn repairs. The tools run in the real
//! `DefaultToolPipeline`, so its durability step after each result is what is killed.

#![cfg(unix)]
#![allow(clippy::unwrap_used)]

use crate::scripted_tools;
use crate::session_support;

use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use brute::session::{Problem, check_history};
use brute::tools::{DefaultToolPipeline, ToolError};
use brute::{
    Env, Error, EventKind, Message, Model, Role, brute_agent,
    middleware::{Loop, MaxIterations, SessionLog, SystemPrompt},
};
use scripted_tools::echo_calls;
use session_support::{
    AnyStore, kill_after_acks, postgres_database, sqlite_path, start_when_free, temp_dir,
};

const CHILD: &str = "BRUTE_TEST_STORE_CRASH_CHILD";
const LEASE: Duration = Duration::from_millis(400);
const ROUNDS: usize = 50;

/// Returns its text after a while (7 ms), so that kills land while tools run.
#[brute::tool]
async fn echo(
    /// The text.
    text: String,
) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(7)).await;
    Ok(text)
}

/// A model that takes a while and calls tools three passes in a row, then answers.
struct SlowModel;

impl Model for SlowModel {
    async fn complete(&self, env: &Env) -> Result<brute::Completion, Error> {
        tokio::time::sleep(Duration::from_millis(15)).await;
        let turn = env.messages.iter().filter(|m| m.role == Role::User).count();
        let pass = env.iteration;
        Ok(if pass <= 3 {
            echo_calls(&format!("t{turn}p{pass}"), &["a", "b", "c"])
        } else {
            Message::assistant(format!("turn {turn} done"))
        }
        .into())
    }
}

/// Prints every message of `env` not printed yet: called from event handlers that fire
/// right after a durability step, so everything printed is stored.
fn ack(printed: &Mutex<usize>, env: &Env) {
    let durable: Vec<&Message> = env
        .messages
        .iter()
        .filter(|m| m.role != Role::System)
        .collect();
    let mut printed = printed.lock().unwrap();
    for message in &durable[*printed..] {
        println!("ack {}", serde_json::to_string(message).unwrap());
    }
    *printed = durable.len();
}

/// The worker: turns forever on session `crash` of the store, acknowledging every
/// message once it is durable. A lease still held by the killed worker before it is
/// waited out.
fn crash_child(spec: &str) {
    let (kind, rest) = spec.split_once(':').unwrap();
    let (root, target) = rest.split_once('|').unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = AnyStore::open(kind, target, LEASE).await;
        let printed = Arc::new(Mutex::new(0usize));
        let mut agent = brute_agent! {
            use SessionLog { store: store.store(), session: "crash" };
            use SystemPrompt { prompt: "sys" };
            use Loop::ToolResult;
            use MaxIterations { max: 10 };
            use DefaultToolPipeline { tools: (Echo,), root: root };
            run SlowModel;
        };
        for kind in [
            EventKind::ModelRequest,
            EventKind::ModelResponse,
            EventKind::ToolResult,
        ] {
            let printed = printed.clone();
            agent.on(kind, move |env, _event| ack(&printed, env));
        }
        for n in 0u64.. {
            if let Err(e) = start_when_free(|| agent.start(format!("task {n}"))).await {
                panic!("{e}");
            }
        }
    });
}

/// Kills the worker of `kind` at `target` at 50 points and checks the session after
/// each kill.
fn kill_rounds(test: &str, kind: &str, target: &str) {
    // The folder the tools are confined to (they touch no file).
    let root = temp_dir();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let store = runtime.block_on(AnyStore::open(kind, target, LEASE));
    for round in 0..ROUNDS {
        let acks = 1 + (round * 7) % 13;
        let delay = Duration::from_millis(((round * 5) % 23) as u64);
        let prior = runtime.block_on(store.load("crash")).len();
        // The history reloaded by this round is acknowledged as well (and what its
        // repair added): the child prints everything it holds at its first step.
        let acked = kill_after_acks(
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    crate::kill_support::test_name(module_path!(), test).as_str(),
                    "--nocapture",
                ])
                .env(CHILD, format!("{kind}:{}|{target}", root.path().display()))
                .env("BRUTE_TEST_POSTGRES", "unused"),
            prior + acks,
            delay,
            &format!("{kind} round {round}"),
        );
        let stored = runtime.block_on(store.load("crash"));
        assert!(
            stored.len() >= acked.len() && stored[..acked.len()] == acked[..],
            "{kind} round {round} (acks {acks}, delay {delay:?}): an acknowledged message is missing:\nacked {acked:#?}\nstored {stored:#?}"
        );
        // Nothing duplicated or orphaned: at worst calls without their results.
        let problems = check_history(&stored);
        assert!(
            problems
                .iter()
                .all(|p| matches!(p, Problem::MissingResult { .. })),
            "{kind} round {round}: {problems:?}"
        );
    }
    // One more turn repairs what the last kill left, and the history is valid.
    runtime.block_on(async {
        let agent = brute_agent! {
            use SessionLog { store: store.store(), session: "crash" };
            run |_env| async { Ok(Message::assistant("checked")) };
        };
        let outcome = start_when_free(|| agent.start("check")).await.unwrap();
        assert_eq!(outcome.text(), Some("checked"));
        let stored = store.load("crash").await;
        assert_eq!(check_history(&stored), []);
        // Every round made at least its prompt durable.
        assert!(stored.iter().filter(|m| m.role == Role::User).count() > ROUNDS);
    });
}

#[test]
fn sigkill_at_50_points_loses_nothing_on_the_jsonl_store() {
    if let Ok(spec) = std::env::var(CHILD) {
        return crash_child(&spec);
    }
    let dir = temp_dir();
    kill_rounds(
        "sigkill_at_50_points_loses_nothing_on_the_jsonl_store",
        "jsonl",
        dir.path().to_str().unwrap(),
    );
}

#[test]
fn sigkill_at_50_points_loses_nothing_on_the_sqlite_store() {
    if let Ok(spec) = std::env::var(CHILD) {
        return crash_child(&spec);
    }
    let dir = temp_dir();
    kill_rounds(
        "sigkill_at_50_points_loses_nothing_on_the_sqlite_store",
        "sqlite",
        sqlite_path(dir.path()).to_str().unwrap(),
    );
}

#[test]
#[cfg_attr(
    not(feature = "services"),
    ignore = "needs PostgreSQL: cargo xtask test"
)]
fn sigkill_at_50_points_loses_nothing_on_the_postgres_store() {
    if let Ok(spec) = std::env::var(CHILD) {
        return crash_child(&spec);
    }
    let url = postgres_database("crash");
    kill_rounds(
        "sigkill_at_50_points_loses_nothing_on_the_postgres_store",
        "postgres",
        &url,
    );
}
