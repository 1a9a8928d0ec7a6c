//! Durability no layer can skip: a stack whose terminal and middleware are written by
//! the user against the public contract (`Handler`), and never call `env.persist()`,
//! under `SessionLog` and brute's `Loop`. A worker process (this test binary,
//! re-executed) runs one endless turn; each pass, a hand-written middleware first
//! acknowledges every message handed back so far (printing it), then edits the last
//! stored message on the way down (a `Tag`-style edit: a rewrite from that position),
//! and the hand-written terminal pushes a reply. The test kills the worker with SIGKILL
//! at many points and checks that every acknowledged message is in the store, in order,
//! and so is every tag a pass made before a later pass's reply was acknowledged.
//!
//! Nothing in the stack persists: the durability steps are the framework's own (the
//! loop's after each pass, `SessionLog`'s). Without them only the prompt is stored.
//!
//! The second stack has no brute loop at all: a loop written by hand (`Endless`, a
//! `#[derive(Middleware)]` that calls the layers below forever and never returns) over
//! a closure terminal (`run |env| ..`) that acknowledges what it was handed. The
//! durability step it relies on is the one the terminal `run` builds takes before and
//! after every call, so the loop need not be brute's.

#![cfg(unix)]
#![allow(clippy::unwrap_used)]

use crate::session_support;

use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use brute::session::check_history;
use brute::{
    Agent, Env, Error, Handler, Message, Middleware, Outcome, Role, brute_agent,
    middleware::{Loop, SessionLog},
    pipeline,
};
use session_support::{
    AnyStore, kill_after_acks, postgres_database, sqlite_path, start_when_free, temp_dir,
};

const CHILD: &str = "BRUTE_TEST_USER_TERMINAL_CRASH_CHILD";
const LEASE: Duration = Duration::from_millis(400);
const ROUNDS: usize = 12;
/// What the hand-written middleware appends to the message it edits.
const TAG: &str = " +tagged";

/// A terminal written by hand: answers every pass with a reply, and never calls
/// `env.persist()`.
struct Answer;

impl Handler<Env> for Answer {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        let n = env.messages.len();
        env.messages.push(Message::assistant(format!(
            "reply {n} of pass {}",
            env.iteration
        )));
        Ok(())
    }
}

/// A middleware written by hand: acknowledges what the turn handed back so far (all
/// stored, if the framework persisted after the last pass), then tags the last
/// message (a stored one: a rewrite) and calls the terminal. Never persists.
struct AckAndTag<A> {
    app: A,
    printed: Arc<Mutex<usize>>,
}

impl<A: Handler<Env>> Handler<Env> for AckAndTag<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        acknowledge(env, &self.printed);
        if let Some(last) = env.messages.last_mut()
            && last.role == Role::Assistant
        {
            last.content.push_str(TAG);
        }
        self.app.call(env).await
    }
}

/// A loop written by hand, not brute's `Loop`: calls the layers below again and again
/// and never persists.
#[derive(Middleware)]
pub struct Endless<A> {
    app: A,
}

impl<A: Handler<Env>> Handler<Env> for Endless<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        loop {
            self.app.call(env).await?;
        }
    }
}

/// Prints every message of the record from `printed` on as acknowledged.
fn acknowledge(env: &Env, printed: &Mutex<usize>) {
    let record: Vec<&Message> = env
        .messages
        .iter()
        .filter(|m| m.role != Role::System)
        .collect();
    let mut printed = printed.lock().unwrap();
    for message in &record[*printed..] {
        println!("ack {}", serde_json::to_string(message).unwrap());
    }
    *printed = record.len();
}

/// The worker of the hand-written loop: one endless turn on session `crash`.
async fn own_loop_child(store: AnyStore) {
    let printed = Arc::new(Mutex::new(0usize));
    let agent = brute_agent! {
        use SessionLog { store: store.store(), session: "crash" };
        use Endless;
        run move |env: &Env| {
            acknowledge(env, &printed);
            let reply = Message::assistant(format!("reply {} of a loop of its own", env.messages.len()));
            async move { Ok::<_, Error>(reply) }
        };
    };
    endless(|| agent.start("go on")).await;
}

/// Runs the endless turn `start` makes once the killed worker's session is free;
/// panics when it ends.
async fn endless<F: std::future::Future<Output = Result<Outcome, Error>>>(
    start: impl FnMut() -> F,
) {
    match start_when_free(start).await {
        Err(e) => panic!("the endless turn failed: {e}"),
        Ok(_) => panic!("the endless turn ended"),
    }
}

/// The worker: one endless turn on session `crash` of the store.
fn crash_child(spec: &str) {
    let (kind, rest) = spec.split_once('|').unwrap();
    let (target, own_loop) = match rest.strip_suffix("|own-loop") {
        Some(target) => (target, true),
        None => (rest, false),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = AnyStore::open(kind, target, LEASE).await;
        if own_loop {
            return own_loop_child(store).await;
        }
        let printed = Arc::new(Mutex::new(0usize));
        let inner = AckAndTag {
            app: Answer,
            printed,
        };
        let stack = pipeline! {
            use SessionLog { store: store.store(), session: "crash" };
            use Loop::While { condition: |_env| true };
            run inner;
        };
        let agent = Agent::new(stack);
        endless(|| agent.start("go on")).await;
    });
}

/// `message` without the tag the killed pass may have given it.
fn untagged(message: &Message) -> String {
    message
        .content
        .strip_suffix(TAG)
        .unwrap_or(&message.content)
        .to_string()
}

/// Kills the worker of `kind` at `target` at `ROUNDS` points and checks the session
/// after each kill; `own_loop` runs the stack with the hand-written loop (which tags
/// nothing).
fn kill_rounds(test: &str, kind: &str, target: &str, own_loop: bool) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let store = runtime.block_on(AnyStore::open(kind, target, LEASE));
    for round in 0..ROUNDS {
        let acks = 2 + (round * 7) % 11;
        let delay = Duration::from_millis(((round * 5) % 17) as u64);
        let prior = runtime.block_on(store.load("crash")).len();
        let acked = kill_after_acks(
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    crate::kill_support::test_name(module_path!(), test).as_str(),
                    "--nocapture",
                ])
                .env(
                    CHILD,
                    format!("{kind}|{target}{}", if own_loop { "|own-loop" } else { "" }),
                )
                .env("BRUTE_TEST_POSTGRES", "unused"),
            prior + acks,
            delay,
            &format!("{kind} round {round}"),
        );
        let stored = runtime.block_on(store.load("crash"));
        assert!(
            stored.len() >= acked.len(),
            "{kind} round {round}: {} messages acknowledged, {} stored: the passes' replies were not made durable",
            acked.len(),
            stored.len()
        );
        for (i, (acked, stored)) in acked.iter().zip(&stored).enumerate() {
            assert_eq!(
                untagged(acked),
                untagged(stored),
                "{kind} round {round}: acknowledged message {i} differs in the store"
            );
        }
        // The pass after a reply tagged it (a rewrite of a stored message) and then
        // handed back a reply of its own: once that one is acknowledged, the tag is
        // stored too.
        for (i, pair) in acked.windows(2).enumerate() {
            if !own_loop && pair.iter().all(|m| m.role == Role::Assistant) {
                assert!(
                    stored[i].content.ends_with(TAG),
                    "{kind} round {round}: the tag of message {i} was acknowledged but is not stored: {:?}",
                    stored[i].content
                );
            }
        }
        assert_eq!(check_history(&stored), [], "{kind} round {round}");
    }
}

/// One crash test: the worker when this process is one, else `ROUNDS` kills of workers
/// running `test` on a new store of `kind` (its database named `db` on PostgreSQL).
fn crash_test(test: &str, kind: &str, db: &str, own_loop: bool) {
    if let Ok(spec) = std::env::var(CHILD) {
        return crash_child(&spec);
    }
    let dir = temp_dir();
    let target = match kind {
        "jsonl" => dir.path().display().to_string(),
        "sqlite" => sqlite_path(dir.path()).display().to_string(),
        _ => postgres_database(db),
    };
    kill_rounds(test, kind, &target, own_loop);
}

#[test]
fn a_user_written_terminal_and_middleware_lose_nothing_at_sigkill_on_the_jsonl_store() {
    crash_test(
        "a_user_written_terminal_and_middleware_lose_nothing_at_sigkill_on_the_jsonl_store",
        "jsonl",
        "",
        false,
    );
}

#[test]
fn a_user_written_terminal_and_middleware_lose_nothing_at_sigkill_on_the_sqlite_store() {
    crash_test(
        "a_user_written_terminal_and_middleware_lose_nothing_at_sigkill_on_the_sqlite_store",
        "sqlite",
        "",
        false,
    );
}

#[test]
#[cfg_attr(
    not(feature = "services"),
    ignore = "needs PostgreSQL: cargo xtask test"
)]
fn a_user_written_terminal_and_middleware_lose_nothing_at_sigkill_on_the_postgres_store() {
    crash_test(
        "a_user_written_terminal_and_middleware_lose_nothing_at_sigkill_on_the_postgres_store",
        "postgres",
        "user_terminal_crash",
        false,
    );
}

#[test]
fn a_hand_written_loop_over_a_closure_terminal_loses_nothing_at_sigkill_on_the_jsonl_store() {
    crash_test(
        "a_hand_written_loop_over_a_closure_terminal_loses_nothing_at_sigkill_on_the_jsonl_store",
        "jsonl",
        "",
        true,
    );
}

#[test]
fn a_hand_written_loop_over_a_closure_terminal_loses_nothing_at_sigkill_on_the_sqlite_store() {
    crash_test(
        "a_hand_written_loop_over_a_closure_terminal_loses_nothing_at_sigkill_on_the_sqlite_store",
        "sqlite",
        "",
        true,
    );
}

#[test]
#[cfg_attr(
    not(feature = "services"),
    ignore = "needs PostgreSQL: cargo xtask test"
)]
fn a_hand_written_loop_over_a_closure_terminal_loses_nothing_at_sigkill_on_the_postgres_store() {
    crash_test(
        "a_hand_written_loop_over_a_closure_terminal_loses_nothing_at_sigkill_on_the_postgres_store",
        "postgres",
        "own_loop_crash",
        true,
    );
}
