//! `CallLimit`: a turn ends after so many model calls or tool calls, as an exit or an
//! error, with every tool call answered; counts start again with each turn.

#![allow(clippy::unwrap_used)]

mod scripted_tools;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use brute::{
    Env, Error, ExitReason, Message, StopReason, brute_agent,
    middleware::{CallLimit, CallLimitMode, Loop, MaxIterations},
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
