//! Turns as a stream: the items of a turn in order, retries, failures, the agent's own
//! handlers, and dropping the stream mid-turn.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use brute::compaction::{DefaultCompactionPipeline, Trigger};
use brute::stream::{TurnItem, TurnResult, TurnStream};
use brute::tools::{DefaultToolPipeline, ToolError};
use brute::{
    Error, EventKind, Message, ModelError, Role, ToolCall, brute_agent,
    middleware::{Loop, Retry},
    providers::ScriptedModel,
    tool,
};
use serde_json::json;

/// Returns `size` characters.
#[tool]
async fn big(
    /// How many characters.
    size: usize,
) -> Result<String, ToolError> {
    Ok("y".repeat(size))
}

/// Returns its text.
#[tool]
async fn echo(
    /// The text.
    text: String,
) -> Result<String, ToolError> {
    Ok(text)
}

async fn collect(mut stream: TurnStream<'_>) -> Vec<TurnItem> {
    let mut items = Vec::new();
    while let Some(item) = stream.next_item().await {
        items.push(item);
    }
    items
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_tool_turn_streams_reply_call_result_and_end_in_order() {
    runtime().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let model = ScriptedModel::per_turn([
            Message::tool_calls(
                "",
                vec![ToolCall::new("c1", "echo", json!({"text": "pong"}))],
            ),
            Message::assistant("done"),
        ]);
        let agent = brute_agent! {
            use Loop::ToolResult;
            use DefaultToolPipeline { tools: (Echo,), root: dir.path().to_path_buf() };
            run model;
        };
        let mut env = agent.env();
        env.messages.push(Message::user("ping"));
        let items = collect(agent.stream(env)).await;
        let kinds: Vec<String> = items
            .iter()
            .map(|i| {
                serde_json::to_value(i).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "message",
                "tool_call_start",
                "tool_result",
                "message",
                "end"
            ]
        );
        assert_eq!(
            items[2],
            TurnItem::ToolResult {
                call_id: "c1".into(),
                name: "echo".into(),
                content: "pong".into(),
                is_error: false,
            }
        );
        assert_eq!(
            items[4],
            TurnItem::End {
                result: TurnResult::Completed {
                    text: Some("done".into())
                }
            }
        );
        // Every item survives its JSON form (what a server sends).
        for item in &items {
            let json = serde_json::to_string(item).unwrap();
            assert_eq!(&serde_json::from_str::<TurnItem>(&json).unwrap(), item);
        }
    });
}

#[test]
fn the_stream_gives_back_the_outcome_and_the_agents_handlers_still_fire() {
    runtime().block_on(async {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut agent = brute_agent! { run |_env| async { Ok(Message::assistant("hi")) }; };
        let log = seen.clone();
        agent.on(EventKind::TurnEnd, move |_env, event| {
            log.lock().unwrap().push(format!("{event:?}"));
        });
        let mut env = agent.env();
        env.messages.push(Message::user("hello"));
        let mut stream = agent.stream(env);
        while stream.next_item().await.is_some() {}
        let outcome = stream.take_result().unwrap().unwrap();
        assert_eq!(outcome.text(), Some("hi"));
        assert!(stream.take_result().is_none());
        assert_eq!(seen.lock().unwrap().len(), 1);
        // A second stream of the same agent hears only its own turn.
        let items = collect(agent.stream(agent.env())).await;
        assert_eq!(items.len(), 2);
    });
}

#[test]
fn a_failed_turn_ends_the_stream_with_its_error() {
    runtime().block_on(async {
        let agent = brute_agent! {
            run |_env| async { Err::<Message, _>(Error::Model(ModelError::Server { status: 400, message: "bad".into() })) };
        };
        let mut stream = agent.stream(agent.env());
        let items = {
            let mut items = Vec::new();
            while let Some(item) = stream.next_item().await {
                items.push(item);
            }
            items
        };
        let [TurnItem::End { result: TurnResult::Failed { error } }] = items.as_slice() else {
            panic!("one failed end expected, got {items:?}");
        };
        assert!(error.contains("bad"), "{error}");
        assert!(matches!(
            stream.take_result(),
            Some(Err(Error::Model(ModelError::Server { status: 400, .. })))
        ));
    });
}

#[test]
fn a_retried_attempt_is_announced_so_its_deltas_can_be_discarded() {
    runtime().block_on(async {
        let calls = AtomicU32::new(0);
        let agent = brute_agent! {
            use Retry { attempts: 3, base_delay: Duration::from_millis(1), jitter: false };
            run |env| {
                let n = calls.fetch_add(1, Ordering::Relaxed);
                env.emit(brute::Event::ContentDelta(if n == 0 { "half of a fail" } else { "whole" }));
                async move {
                    if n == 0 {
                        return Err(Error::Model(ModelError::Server { status: 503, message: "busy".into() }));
                    }
                    Ok(Message::assistant("whole"))
                }
            };
        };
        let items = collect(agent.stream(agent.env())).await;
        assert!(matches!(items[0], TurnItem::ContentDelta { ref text } if text == "half of a fail"));
        assert!(matches!(items[1], TurnItem::Retry { attempt: 1, delay_ms: 1, ref error } if error.contains("busy")));
        assert!(matches!(items[2], TurnItem::ContentDelta { ref text } if text == "whole"));
        // What a consumer shows: the deltas after the last retry.
        let last_retry = items
            .iter()
            .rposition(|i| matches!(i, TurnItem::Retry { .. }))
            .unwrap();
        let shown: String = items[last_retry..]
            .iter()
            .filter_map(|i| match i {
                TurnItem::ContentDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(shown, "whole");
    });
}

#[test]
fn a_compaction_is_an_item_of_the_stream() {
    runtime().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let model = ScriptedModel::from_fn(|env| {
            let results = env.messages.iter().filter(|m| m.role == Role::Tool).count();
            if env.iteration > 6 {
                Message::assistant("done")
            } else {
                Message::tool_calls(
                    "",
                    vec![ToolCall::new(format!("b{results}"), "big", json!({"size": 4_000}))],
                )
            }
        });
        let agent = brute_agent! {
            use Loop::ToolResult;
            use DefaultCompactionPipeline { window: 2_000, trigger: Trigger::Tokens(1_500), target: 0.5 };
            use DefaultToolPipeline { tools: (Big,), root: dir.path().to_path_buf() };
            run model;
        };
        let mut env = agent.env();
        env.messages.push(Message::user("fill the window"));
        let items = collect(agent.stream(env)).await;
        let compactions: Vec<&TurnItem> = items
            .iter()
            .filter(|i| matches!(i, TurnItem::Compacted { .. }))
            .collect();
        assert!(!compactions.is_empty(), "{items:?}");
        for item in compactions {
            let TurnItem::Compacted { strategy, removed, tokens_before, tokens_after, .. } = item else {
                unreachable!()
            };
            assert!(!strategy.is_empty());
            assert!(*removed > 0);
            assert!(tokens_before > tokens_after, "{tokens_before} -> {tokens_after}");
        }
        assert!(matches!(items.last(), Some(TurnItem::End { result: TurnResult::Completed { .. } })));
    });
}

#[test]
fn an_owned_stream_of_a_shared_agent_runs_in_a_spawned_task() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let agent = Arc::new(
            brute_agent! { run |_env| async { Ok(Message::assistant("from a task")) }; }.boxed(),
        );
        let mut env = agent.env();
        env.messages.push(Message::user("hi"));
        // What a server does: the stream outlives the handler that made it.
        let mut stream = agent.clone().stream_owned(env);
        let items = tokio::spawn(async move {
            let mut items = Vec::new();
            while let Some(item) = stream.next_item().await {
                items.push(item);
            }
            items
        })
        .await
        .unwrap();
        assert_eq!(
            items.last(),
            Some(&TurnItem::End {
                result: TurnResult::Completed {
                    text: Some("from a task".into())
                }
            })
        );
    });
}
