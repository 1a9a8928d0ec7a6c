//! `ToolRetry`: a call whose tool reports a retryable failure runs again after an
//! exponential backoff (on Tokio's paused clock: the waits are exact and take no real
//! time), up to its attempts and its total wait; other failures run once; jitter from
//! a seed repeats.

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use brute::tools::{DefaultToolPipeline, Execute, Snapshot, ToolError, ToolRetry, Validate};
use brute::{Message, ToolCall, brute_agent, middleware::Loop, providers::ScriptedModel, tool};
use serde_json::json;
use tokio::time::Instant;

/// Calls of `flaky` so far, by key: each test uses its own key.
static CALLS: Mutex<Option<HashMap<String, u32>>> = Mutex::new(None);

fn calls(key: &str) -> u32 {
    CALLS
        .lock()
        .unwrap()
        .as_ref()
        .and_then(|m| m.get(key).copied())
        .unwrap_or(0)
}

/// Fails its first `failures` calls (retryably or not), then answers.
#[tool]
async fn flaky(
    /// The test's counter.
    key: String,
    /// How many calls fail.
    failures: u32,
    /// Whether the failures are marked retryable.
    retryable: bool,
) -> Result<String, ToolError> {
    let n = {
        let mut map = CALLS.lock().unwrap();
        let count = map.get_or_insert_with(HashMap::new).entry(key).or_insert(0);
        *count += 1;
        *count
    };
    if n <= failures {
        let message = format!("busy on call {n}");
        return Err(if retryable {
            ToolError::retryable(message)
        } else {
            ToolError::failed(message)
        });
    }
    Ok(format!("ok on call {n}"))
}

/// Fails every call, retryably.
#[tool]
async fn down(
    /// The test's counter.
    key: String,
) -> Result<String, ToolError> {
    let mut map = CALLS.lock().unwrap();
    *map.get_or_insert_with(HashMap::new).entry(key).or_insert(0) += 1;
    Err(ToolError::retryable("the service is down"))
}

/// A model that makes `call`, then answers.
fn model(calls: Vec<ToolCall>) -> ScriptedModel {
    ScriptedModel::per_turn([Message::tool_calls("", calls), Message::assistant("done")])
}

fn flaky_call(id: &str, key: &str, failures: u32, retryable: bool) -> ToolCall {
    ToolCall::new(
        id,
        "flaky",
        json!({"key": key, "failures": failures, "retryable": retryable}),
    )
}

/// The tool result answering call `id`.
fn result_of<'a>(messages: &'a [Message], id: &str) -> &'a str {
    messages
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some(id))
        .map(|m| m.content.as_str())
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_retryable_failure_is_retried_with_exponential_backoff_until_it_passes() {
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline {
            tools: (Flaky,),
            pipeline: brute::pipeline! {
                use Validate;
                use Snapshot;
                use ToolRetry { attempts: 5, base_delay: Duration::from_secs(1), jitter: false };
                run Execute;
            },
        };
        run model(vec![flaky_call("c1", "passes", 2, true)]);
    };
    let start = Instant::now();
    let outcome = agent.start("go").await.unwrap();
    assert_eq!(
        result_of(outcome.env.messages.as_slice(), "c1"),
        "ok on call 3"
    );
    assert_eq!(calls("passes"), 3);
    // 1 s after the first failure, 2 s after the second: on the paused clock, exactly.
    assert_eq!(start.elapsed(), Duration::from_secs(3));
}

#[tokio::test(start_paused = true)]
async fn a_failure_not_marked_retryable_runs_once() {
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline {
            tools: (Flaky,),
            pipeline: brute::pipeline! {
                use Validate;
                use ToolRetry { attempts: 5 };
                run Execute;
            },
        };
        run model(vec![flaky_call("c1", "plain", 2, false)]);
    };
    let start = Instant::now();
    let outcome = agent.start("go").await.unwrap();
    assert_eq!(
        result_of(outcome.env.messages.as_slice(), "c1"),
        "Error: tool `flaky`: busy on call 1"
    );
    assert_eq!(calls("plain"), 1);
    assert_eq!(start.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn the_attempts_and_the_total_wait_are_capped_and_the_result_says_so() {
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline {
            tools: (Down,),
            pipeline: brute::pipeline! {
                use Validate;
                use ToolRetry { attempts: 3, base_delay: Duration::from_secs(1), jitter: false };
                run Execute;
            },
        };
        run model(vec![ToolCall::new("c1", "down", json!({"key": "attempts"}))]);
    };
    let start = Instant::now();
    let outcome = agent.start("go").await.unwrap();
    assert_eq!(
        result_of(outcome.env.messages.as_slice(), "c1"),
        "Error: tool `down`: the service is down (tried 3 times)"
    );
    assert_eq!(calls("attempts"), 3);
    assert_eq!(start.elapsed(), Duration::from_secs(3));

    // Waits of 1 s, 2 s, 4 s ..: with at most 3.5 s in all, the third wait (to 7 s)
    // is not made, whatever the attempts allow.
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline {
            tools: (Down,),
            pipeline: brute::pipeline! {
                use Validate;
                use ToolRetry {
                    attempts: 100,
                    base_delay: Duration::from_secs(1),
                    max_total_delay: Duration::from_millis(3500),
                    jitter: false,
                };
                run Execute;
            },
        };
        run model(vec![ToolCall::new("c1", "down", json!({"key": "total"}))]);
    };
    let start = Instant::now();
    let outcome = agent.start("go").await.unwrap();
    assert_eq!(
        result_of(outcome.env.messages.as_slice(), "c1"),
        "Error: tool `down`: the service is down (tried 3 times)"
    );
    assert_eq!(calls("total"), 3);
    assert_eq!(start.elapsed(), Duration::from_secs(3));
}

#[tokio::test(start_paused = true)]
async fn attempts_are_set_per_tool_name() {
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline {
            tools: (Flaky, Down),
            pipeline: brute::pipeline! {
                use Validate;
                use ToolRetry {
                    attempts: 1,
                    per_tool: [("flaky", 4)],
                    base_delay: Duration::from_millis(10),
                };
                run Execute;
            },
        };
        run model(vec![
            flaky_call("c1", "per-tool-flaky", 3, true),
            ToolCall::new("c2", "down", json!({"key": "per-tool-down"})),
        ]);
    };
    let outcome = agent.start("go").await.unwrap();
    let messages = outcome.env.messages.as_slice();
    assert_eq!(result_of(messages, "c1"), "ok on call 4");
    assert_eq!(calls("per-tool-flaky"), 4);
    // `down` has the default of one attempt: it is not retried, and its result is the
    // tool's own message.
    assert_eq!(
        result_of(messages, "c2"),
        "Error: tool `down`: the service is down"
    );
    assert_eq!(calls("per-tool-down"), 1);
}

/// The time a call that fails four times waits under `ToolRetry` with jitter drawn
/// from `seed`.
async fn jittered_wait(seed: u64, key: &str) -> Duration {
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline {
            tools: (Flaky,),
            pipeline: brute::pipeline! {
                use Validate;
                use ToolRetry { attempts: 5, base_delay: Duration::from_secs(1), seed: Some(seed) };
                run Execute;
            },
        };
        run model(vec![flaky_call("c1", key, 4, true)]);
    };
    let start = Instant::now();
    let outcome = agent.start("go").await.unwrap();
    assert_eq!(
        result_of(outcome.env.messages.as_slice(), "c1"),
        "ok on call 5"
    );
    start.elapsed()
}

#[tokio::test(start_paused = true)]
async fn jitter_draws_each_wait_between_half_and_all_and_a_seed_repeats_it() {
    let first = jittered_wait(42, "seed-a").await;
    let again = jittered_wait(42, "seed-b").await;
    let other = jittered_wait(43, "seed-c").await;
    // Without jitter: 1 + 2 + 4 + 8 = 15 s; with it, each wait is half to all of that.
    let full = Duration::from_secs(15);
    for wait in [first, other] {
        assert!(wait >= full / 2 && wait <= full, "{wait:?}");
    }
    assert_eq!(first, again);
    assert_ne!(first, other);
    assert_ne!(first, full);
}
