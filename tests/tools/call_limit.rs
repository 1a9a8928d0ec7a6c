//! `CallLimit`: a turn ends after so many model calls or tool calls (of all tools or of
//! one by name), as an exit or an error, with every tool call answered; counts start
//! again with each turn. In `Continue` mode the calls over a tool limit are answered
//! with a result saying so, not run. Session limits hold across turns of new agents
//! on new store values (as across processes), read from the stored history.

#![allow(clippy::unwrap_used)]

use crate::scripted_tools;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use brute::session::{BoxStore, JsonlStore, SessionId, Store};
use brute::tools::{DefaultToolPipeline, ToolError};
use brute::{
    Env, Error, ExitReason, Message, StopReason, ToolCall, brute_agent,
    middleware::{CallLimit, CallLimitMode, Loop, MaxIterations, SessionLog},
    tool,
};
use scripted_tools::{RunTools, assert_no_dangling_call, echo_calls};

/// A model that calls `echo` twice in every reply, forever, counting its calls.
fn greedy() -> (
    impl Fn(&Env) -> std::future::Ready<Result<Message, Error>> + Send + Sync,
    Arc<AtomicU32>,
) {
    let calls = Arc::new(AtomicU32::new(0));
    let counter = calls.clone();
    let model = move |_env: &Env| {
        let n = counter.fetch_add(1, Ordering::SeqCst);
        std::future::ready(Ok(echo_calls(&format!("c{n}"), &["x", "y"])))
    };
    (model, calls)
}

#[tokio::test]
async fn the_turn_ends_once_the_tool_calls_reach_the_limit_with_every_call_answered() {
    let (model, calls) = greedy();
    let agent = brute_agent! {
        use Loop::ToolResult;
        use MaxIterations { max: 50 };
        use CallLimit { tool_calls: 5 };
        use RunTools;
        run model;
    };
    let outcome = agent.start("go").await.unwrap();
    // 2, 4, 6: the third pass reached five.
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(
        outcome.stop,
        StopReason::Exited(ExitReason::Limit {
            by: "CallLimit.tool_calls",
            limit: 5
        })
    );
    assert_no_dangling_call(&outcome.env.messages);
    let results = outcome
        .env
        .messages
        .iter()
        .filter(|m| m.tool_call_id.is_some())
        .count();
    assert_eq!(results, 6);
}

#[tokio::test]
async fn the_model_call_limit_ends_the_turn_or_fails_it() {
    let (model, calls) = greedy();
    let agent = brute_agent! {
        use Loop::ToolResult;
        use CallLimit { model_calls: 2 };
        use RunTools;
        run model;
    };
    let outcome = agent.start("go").await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(
        outcome.stop,
        StopReason::Exited(ExitReason::Limit {
            by: "CallLimit.model_calls",
            limit: 2
        })
    );
    assert_no_dangling_call(&outcome.env.messages);

    let (model, calls) = greedy();
    let agent = brute_agent! {
        use Loop::ToolResult;
        use CallLimit { model_calls: 4, mode: CallLimitMode::Error };
        use RunTools;
        run model;
    };
    let error = agent.start("go").await.unwrap_err();
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    assert!(
        matches!(
            error,
            Error::Stopped(ExitReason::Limit {
                by: "CallLimit.model_calls",
                limit: 4
            })
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_turn_that_just_fits_the_limits_completes() {
    // One tool call, then an answer: two model calls and one tool call. The model call
    // limit is reached by the last call, which asks for no tool: the turn completes.
    // (With `tool_calls: 1` the first call would reach it, and the model would not be
    // called again.)
    let model = |env: &Env| {
        let answered = env
            .messages
            .last()
            .is_some_and(|m| m.tool_call_id.is_some());
        std::future::ready(Ok::<_, Error>(if answered {
            Message::assistant("done")
        } else {
            echo_calls("c", &["x"])
        }))
    };
    let agent = brute_agent! {
        use Loop::ToolResult;
        use CallLimit { model_calls: 2, tool_calls: 2 };
        use RunTools;
        run model;
    };
    let outcome = agent.start("one").await.unwrap();
    assert_eq!(outcome.stop, StopReason::Completed);
    assert_eq!(outcome.text(), Some("done"));
}

#[tokio::test]
async fn a_limit_per_tool_name_ends_the_turn_once_that_tool_reaches_it() {
    let (model, calls) = greedy();
    let agent = brute_agent! {
        use Loop::ToolResult;
        use MaxIterations { max: 50 };
        use CallLimit { per_tool: [("other", 1), ("echo", 3)] };
        use RunTools;
        run model;
    };
    let outcome = agent.start("go").await.unwrap();
    // 2, then 4 calls of `echo`: the second pass reached three.
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(
        outcome.stop,
        StopReason::Exited(ExitReason::Limit {
            by: "CallLimit.per_tool",
            limit: 3
        })
    );
    assert_no_dangling_call(&outcome.env.messages);
}

/// Runs of `count` so far, by key: each test uses its own key.
static RUNS: Mutex<Option<HashMap<String, u32>>> = Mutex::new(None);

fn runs(key: &str) -> u32 {
    RUNS.lock()
        .unwrap()
        .as_ref()
        .and_then(|m| m.get(key).copied())
        .unwrap_or(0)
}

/// Counts its runs under `key`.
#[tool]
async fn count(
    /// The test's counter.
    key: String,
) -> Result<String, ToolError> {
    let mut map = RUNS.lock().unwrap();
    let n = map.get_or_insert_with(HashMap::new).entry(key).or_insert(0);
    *n += 1;
    Ok(format!("run {n}"))
}

fn count_call(id: &str, key: &str) -> ToolCall {
    ToolCall::new(id, "count", serde_json::json!({ "key": key }))
}

/// Results of the transcript, in order.
fn results(messages: &[Message]) -> Vec<&str> {
    messages
        .iter()
        .filter(|m| m.tool_call_id.is_some())
        .map(|m| m.content.as_str())
        .collect()
}

#[tokio::test]
async fn continue_mode_answers_the_calls_over_a_limit_and_lets_the_model_finish() {
    let dir = tempfile::tempdir().unwrap();
    let model = brute::providers::ScriptedModel::per_turn([
        Message::tool_calls(
            "",
            vec![
                count_call("c1", "continue"),
                count_call("c2", "continue"),
                count_call("c3", "continue"),
            ],
        ),
        Message::assistant("counted twice"),
    ]);
    let agent = brute_agent! {
        use Loop::ToolResult;
        use CallLimit { per_tool: [("count", 2)], mode: CallLimitMode::Continue };
        use DefaultToolPipeline { tools: (Count,), root: dir.path() };
        run model;
    };
    let outcome = agent.start("go").await.unwrap();
    assert_eq!(runs("continue"), 2);
    assert_eq!(
        results(outcome.env.messages.as_slice()),
        [
            "run 1",
            "run 2",
            "Error: tool `count`: the call was denied: the limit of 2 calls of `count` per turn is reached; answer without it"
        ]
    );
    assert_eq!(outcome.stop, StopReason::Completed);
    assert_eq!(outcome.text(), Some("counted twice"));
}

#[tokio::test]
async fn continue_mode_ends_the_turn_when_the_model_asks_again_after_a_refusal() {
    let dir = tempfile::tempdir().unwrap();
    let asked = Arc::new(AtomicU32::new(0));
    let counter = asked.clone();
    let model = move |_env: &Env| {
        let n = counter.fetch_add(1, Ordering::SeqCst);
        std::future::ready(Ok::<_, Error>(Message::tool_calls(
            "",
            vec![count_call(&format!("c{n}"), "again")],
        )))
    };
    let agent = brute_agent! {
        use Loop::ToolResult;
        use MaxIterations { max: 50 };
        use CallLimit { tool_calls: 1, mode: CallLimitMode::Continue };
        use DefaultToolPipeline { tools: (Count,), root: dir.path() };
        run model;
    };
    let outcome = agent.start("go").await.unwrap();
    // Pass one runs its call; pass two's is refused and the model is told; pass
    // three's is refused too, and the turn ends there.
    assert_eq!(runs("again"), 1);
    assert_eq!(asked.load(Ordering::SeqCst), 3);
    assert_eq!(
        outcome.stop,
        StopReason::Exited(ExitReason::Limit {
            by: "CallLimit.tool_calls",
            limit: 1
        })
    );
    assert_no_dangling_call(&outcome.env.messages);
}

/// A model that calls `echo` once, then answers once the call is answered; counts its
/// calls.
fn one_call_then_answer() -> (
    impl Fn(&Env) -> std::future::Ready<Result<Message, Error>> + Send + Sync,
    Arc<AtomicU32>,
) {
    let calls = Arc::new(AtomicU32::new(0));
    let counter = calls.clone();
    let model = move |env: &Env| {
        let n = counter.fetch_add(1, Ordering::SeqCst);
        let answered = env
            .messages
            .last()
            .is_some_and(|m| m.tool_call_id.is_some());
        std::future::ready(Ok::<_, Error>(if answered {
            Message::assistant("done")
        } else {
            echo_calls(&format!("t{n}-"), &["x"])
        }))
    };
    (model, calls)
}

/// A turn of session `s` in the store at `dir`, by a new agent on a new store value
/// (what a new process does), limited to `session_model_calls`.
async fn session_turn(dir: &std::path::Path, limit: u32) -> (brute::Outcome, u32) {
    let (model, calls) = one_call_then_answer();
    let store = BoxStore::new(JsonlStore::new(dir));
    let agent = brute_agent! {
        use SessionLog { store: Store::from(store) };
        use Loop::ToolResult;
        use CallLimit { session_model_calls: limit };
        use RunTools;
        run model;
    };
    let mut env = agent.env();
    env.extensions.insert(SessionId::from("s"));
    env.messages.push(Message::user("go"));
    let outcome = agent.turn(env).await.unwrap();
    (outcome, calls.load(Ordering::SeqCst))
}

#[tokio::test]
async fn a_session_limit_holds_across_turns_of_new_agents_from_the_stored_history() {
    let dir = tempfile::tempdir().unwrap();
    // Turn one: a call and an answer, two model calls of the five.
    let (first, calls) = session_turn(dir.path(), 5).await;
    assert_eq!((first.stop, calls), (StopReason::Completed, 2));
    // Turn two: two more, four in all.
    let (second, calls) = session_turn(dir.path(), 5).await;
    assert_eq!((second.stop, calls), (StopReason::Completed, 2));
    // Turn three: the fifth call reaches the limit; its tool call is answered and the
    // turn ends there.
    let limit = StopReason::Exited(ExitReason::Limit {
        by: "CallLimit.session_model_calls",
        limit: 5,
    });
    let (third, calls) = session_turn(dir.path(), 5).await;
    assert_eq!((third.stop, calls), (limit.clone(), 1));
    assert_no_dangling_call(&third.env.messages);
    // Turn four: no model call at all.
    let (fourth, calls) = session_turn(dir.path(), 5).await;
    assert_eq!((fourth.stop, calls), (limit, 0));
}

#[tokio::test]
async fn a_session_limit_per_tool_refuses_calls_in_a_later_turn() {
    let dir = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let turn = |id: &'static str| {
        let model = brute::providers::ScriptedModel::per_turn([
            Message::tool_calls("", vec![count_call(id, "session")]),
            Message::assistant("done"),
        ]);
        let store = BoxStore::new(JsonlStore::new(dir.path()));
        let root = root.path().to_path_buf();
        async move {
            let agent = brute_agent! {
                use SessionLog { store: Store::from(store) };
                use Loop::ToolResult;
                use CallLimit { session_per_tool: [("count", 1)], mode: CallLimitMode::Continue };
                use DefaultToolPipeline { tools: (Count,), root: root };
                run model;
            };
            let mut env = agent.env();
            env.extensions.insert(SessionId::from("s"));
            env.messages.push(Message::user("go"));
            agent.turn(env).await.unwrap()
        }
    };
    let first = turn("a1").await;
    assert_eq!(results(first.env.messages.as_slice()), ["run 1"]);
    let second = turn("b1").await;
    assert_eq!(runs("session"), 1);
    assert_eq!(
        results(second.env.messages.as_slice()).last().copied(),
        Some(
            "Error: tool `count`: the call was denied: the limit of 1 calls of `count` per session is reached; answer without it"
        )
    );
    assert_eq!(second.stop, StopReason::Completed);
}
