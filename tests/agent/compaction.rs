//! Context compaction: each strategy, the three ways to configure it, the cost-order
//! short circuit, the `compacted` event, failure handling, the pairing invariant under
//! random conversations, and a 500-tool-call run that stays inside a small window.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use brute::compaction::{
    CompactionEnv, DefaultCompactionPipeline, Heuristic, SlidingWindow, Summarize, TokenEstimator,
    ToolResults, Trigger, is_well_paired,
};
use brute::{
    Env, Error, Event, EventKind, Handler, Message, Middleware, ModelError, Role, ToolCall,
    brute_agent, middleware::Loop, pipeline, providers::ScriptedModel,
};
use proptest::prelude::*;
use serde_json::json;

fn estimator() -> Arc<dyn TokenEstimator> {
    Arc::new(Heuristic)
}

fn call(id: &str, name: &str) -> Message {
    Message::tool_calls(
        "",
        vec![ToolCall::new(id, name, json!({"path": "src/lib.rs"}))],
    )
}

/// A conversation: system, task, then `turns` tool round trips with `output` bytes of
/// tool output each.
fn conversation(turns: usize, output: usize) -> Vec<Message> {
    let mut messages = vec![
        Message::system("You are terse."),
        Message::user("Fix the bug."),
    ];
    for i in 0..turns {
        messages.push(call(&format!("c{i}"), "read"));
        messages.push(Message::tool_result(format!("c{i}"), "x".repeat(output)));
    }
    messages
}

fn tokens(messages: &[Message]) -> usize {
    messages.iter().map(|m| Heuristic.estimate(m)).sum()
}

#[tokio::test]
async fn tool_results_rewrites_older_outputs_and_keeps_the_recent_ones() {
    let messages = conversation(6, 4_000);
    let mut env = CompactionEnv::new(messages, 0, estimator());
    let stack = pipeline! {
        use ToolResults { keep_recent: 2 };
        run |_env: &mut CompactionEnv| async { Ok(()) };
    };
    stack.call(&mut env).await.unwrap();
    let results: Vec<&Message> = env
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .collect();
    assert_eq!(results.len(), 6, "nothing is removed, only rewritten");
    for old in &results[..4] {
        assert!(
            old.content.contains("output of `read` (4000 bytes)"),
            "{}",
            old.content
        );
    }
    for recent in &results[4..] {
        assert_eq!(recent.content.len(), 4_000);
    }
    assert_eq!(env.removed.len(), 4);
    assert_eq!(env.applied, ["ToolResults"]);
    is_well_paired(&env.messages).unwrap();
}

#[tokio::test]
async fn tool_results_stops_as_soon_as_the_conversation_fits() {
    let messages = conversation(6, 4_000);
    let total = tokens(&messages);
    // One rewritten output is enough.
    let mut env = CompactionEnv::new(messages, total - 500, estimator());
    (ToolResults::default(),).call(&mut env).await.unwrap();
    assert_eq!(env.removed.len(), 1);
    assert!(!env.over_target());
}

#[tokio::test]
async fn sliding_window_drops_whole_old_turns_and_keeps_task_and_latest_user_message() {
    let mut messages = conversation(10, 400);
    messages.push(Message::assistant("Done reading."));
    messages.push(Message::user("Now write the fix."));
    let target = tokens(&messages) / 3;
    let mut env = CompactionEnv::new(messages, target, estimator());
    (SlidingWindow::default(),).call(&mut env).await.unwrap();
    assert!(!env.over_target(), "{env:?}");
    assert_eq!(env.messages[0], Message::system("You are terse."));
    assert_eq!(env.messages[1], Message::user("Fix the bug."));
    assert_eq!(
        env.messages.last().unwrap(),
        &Message::user("Now write the fix.")
    );
    assert!(!env.removed.is_empty());
    is_well_paired(&env.messages).unwrap();
}

#[tokio::test]
async fn summarize_replaces_the_older_part_with_a_structured_summary() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let model = ScriptedModel::from_fn(move |env| {
        log.lock().unwrap().push(env.messages.clone());
        Message::assistant(
            "Goal: fix the bug\nProgress: read 8 files\nCurrent state: ok\nNext steps: write",
        )
    });
    let mut messages = conversation(8, 300);
    messages.push(Message::user("Keep going."));
    let mut env = CompactionEnv::new(messages, 10, estimator());
    Summarize::new(model)
        .keep_recent(1)
        .call(&mut env)
        .await
        .unwrap();

    let requests = seen.lock().unwrap();
    assert_eq!(requests.len(), 1);
    assert!(
        requests[0][0]
            .content
            .contains("Goal, Progress, Current state, Next steps")
    );
    assert!(requests[0][1].content.contains("calls read"));
    assert!(
        !requests[0][1].content.contains("Keep going."),
        "the latest user message is never summarised"
    );

    assert_eq!(env.messages.len(), 4, "{:#?}", env.messages);
    assert_eq!(env.messages[1], Message::user("Fix the bug."));
    assert!(
        env.messages[2]
            .content
            .starts_with("[Summary of 16 earlier messages]\nGoal: fix the bug")
    );
    assert_eq!(env.messages[3], Message::user("Keep going."));
    assert_eq!(env.removed.len(), 16);
    is_well_paired(&env.messages).unwrap();
}

/// A model that counts its calls and answers with a fixed summary.
fn counting_summariser(calls: Arc<AtomicUsize>) -> ScriptedModel {
    ScriptedModel::from_fn(move |_env| {
        calls.fetch_add(1, Ordering::SeqCst);
        Message::assistant("Goal: g\nProgress: p\nCurrent state: s\nNext steps: n")
    })
}

#[tokio::test]
async fn a_layer_that_gets_under_target_never_calls_the_next() {
    let calls = Arc::new(AtomicUsize::new(0));
    let compactor = pipeline! {
        use ToolResults { keep_recent: 1 };
        use SlidingWindow;
        run Summarize::new(counting_summariser(calls.clone()));
    };
    let messages = conversation(6, 4_000);
    let target = tokens(&messages) / 2;
    let mut env = CompactionEnv::new(messages, target, estimator());
    compactor.call(&mut env).await.unwrap();
    assert!(!env.over_target());
    assert_eq!(env.applied, ["ToolResults"]);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "the summariser must not be called"
    );

    // With a target the free layers cannot reach, the summariser runs.
    let mut env = CompactionEnv::new(conversation(6, 4_000), 30, estimator());
    compactor.call(&mut env).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1, "{env:?}");
    assert_eq!(env.applied, ["ToolResults", "SlidingWindow", "Summarize"]);
}

/// Runs every tool call of the last assistant message with a fixed output: the tool
/// pipeline of these tests.
#[derive(Middleware)]
#[middleware(provides = brute::kind::ToolPipeline)]
struct FakeTools<A> {
    app: A,
    #[middleware(default = 2_000)]
    output: usize,
}

impl<A: Handler<Env>> Handler<Env> for FakeTools<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        self.app.call(env).await?;
        let calls = env
            .messages
            .last()
            .map(|m| m.tool_calls.clone())
            .unwrap_or_default();
        for call in calls {
            env.messages
                .push(Message::tool_result(call.id, "y".repeat(self.output)));
        }
        Ok(())
    }
}

/// A model that calls a tool `calls` times, then answers; it checks the window on
/// every call. It counts its calls itself: compaction removes old ones from history.
fn tool_caller(calls: usize, window: usize, largest: Arc<AtomicUsize>) -> ScriptedModel {
    let counter = AtomicUsize::new(0);
    ScriptedModel::from_fn(move |env| {
        let size = tokens(&env.messages);
        largest.fetch_max(size, Ordering::SeqCst);
        assert!(
            size <= window,
            "the model was sent {size} tokens, more than the window of {window}"
        );
        is_well_paired(&env.messages).unwrap();
        let made = counter.fetch_add(1, Ordering::SeqCst);
        if made < calls {
            call(&format!("call{made}"), "read")
        } else {
            Message::assistant("All done.")
        }
    })
}

#[tokio::test]
async fn five_hundred_tool_calls_stay_inside_a_small_window() {
    let largest = Arc::new(AtomicUsize::new(0));
    let window = 8_000;
    let compacted = Arc::new(AtomicUsize::new(0));
    let mut agent = brute_agent! {
        use brute::middleware::SystemPrompt { prompt: "You are terse." };
        use Loop::ToolResult;
        use DefaultCompactionPipeline { window: window };
        use FakeTools { output: 2_000 };
        run tool_caller(500, window, largest.clone());
    };
    let count = compacted.clone();
    agent.on(EventKind::Compacted, move |_env, _event| {
        count.fetch_add(1, Ordering::SeqCst);
    });
    let outcome = agent.start("Read everything.").await.unwrap();
    assert_eq!(outcome.text(), Some("All done."));
    assert!(compacted.load(Ordering::SeqCst) > 10);
    assert!(largest.load(Ordering::SeqCst) <= window);
    assert_eq!(outcome.env.messages[1], Message::user("Read everything."));
    is_well_paired(&outcome.env.messages).unwrap();
}

#[tokio::test]
async fn the_three_configuration_forms_compact() {
    let calls = Arc::new(AtomicUsize::new(0));
    let window = 3_000;

    let pipeline_form = brute_agent! {
        use Loop::ToolResult;
        use DefaultCompactionPipeline {
            window: window,
            compactor: pipeline! {
                use ToolResults;
                use SlidingWindow;
                run Summarize::new(counting_summariser(calls.clone()));
            },
        };
        use FakeTools;
        run tool_caller(20, window, Arc::default());
    };
    let list_form = brute_agent! {
        use Loop::ToolResult;
        use DefaultCompactionPipeline {
            window: window,
            compactor: (ToolResults::default(), SlidingWindow::default(), Summarize::new(counting_summariser(calls.clone()))),
        };
        use FakeTools;
        run tool_caller(20, window, Arc::default());
    };
    let summariser_form = brute_agent! {
        use Loop::ToolResult;
        use DefaultCompactionPipeline { window: window, summariser: counting_summariser(calls.clone()) };
        use FakeTools;
        run tool_caller(20, window, Arc::default());
    };
    for outcome in [
        pipeline_form.start("go").await.unwrap(),
        list_form.start("go").await.unwrap(),
        summariser_form.start("go").await.unwrap(),
    ] {
        assert_eq!(outcome.text(), Some("All done."));
        assert!(tokens(&outcome.env.messages) <= window);
    }
}

#[tokio::test]
async fn the_compacted_event_carries_what_was_given_up() {
    let payloads = Arc::new(Mutex::new(Vec::new()));
    let mut agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultCompactionPipeline { window: 2_000, trigger: Trigger::Tokens(1_500), target: 0.5 };
        use FakeTools { output: 1_200 };
        run tool_caller(6, 2_000, Arc::default());
    };
    let log = payloads.clone();
    agent.on(EventKind::Compacted, move |env, event| {
        if let Event::Compacted {
            strategy,
            removed,
            tokens_before,
            tokens_after,
            ..
        } = event
        {
            assert!(tokens(&env.messages) == *tokens_after || env.last_call().is_some());
            log.lock().unwrap().push((
                strategy.to_string(),
                removed.to_vec(),
                *tokens_before,
                *tokens_after,
            ));
        }
    });
    agent.start("go").await.unwrap();
    let payloads = payloads.lock().unwrap();
    assert!(!payloads.is_empty());
    for (strategy, removed, before, after) in payloads.iter() {
        assert!(before > after, "{before} -> {after}");
        assert!(!removed.is_empty());
        if strategy == "ToolResults" {
            // Rewritten outputs are reported as they were before.
            assert!(
                removed
                    .iter()
                    .all(|m| m.role == Role::Tool && m.content.len() == 1_200)
            );
        } else {
            assert_eq!(strategy, "ToolResults+SlidingWindow");
        }
    }
}

/// A summariser that always fails.
fn failing_summariser() -> impl brute::Model {
    |_env: &Env| async {
        Err::<Message, _>(Error::Model(ModelError::Server {
            status: 503,
            message: "down".into(),
        }))
    }
}

#[tokio::test]
async fn a_failing_summariser_leaves_the_cheaper_work_and_reports_the_error() {
    let errors = Arc::new(AtomicUsize::new(0));
    // The free strategies are enough to fit the window, though not the target.
    let mut agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultCompactionPipeline { window: 6_000, target: 0.01, summariser: failing_summariser() };
        use FakeTools;
        run tool_caller(14, 6_000, Arc::default());
    };
    let count = errors.clone();
    agent.on(EventKind::Error, move |_env, event| {
        if let Event::Error { layer, .. } = event {
            assert_eq!(*layer, "DefaultCompactionPipeline");
            count.fetch_add(1, Ordering::SeqCst);
        }
    });
    let outcome = agent.start("go").await.unwrap();
    assert_eq!(outcome.text(), Some("All done."));
    assert!(errors.load(Ordering::SeqCst) > 0);

    // Nothing can be dropped (the window is smaller than the task and the latest turn,
    // which every strategy keeps): a clear error instead of an oversized request.
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultCompactionPipeline { window: 100, summariser: failing_summariser() };
        use FakeTools;
        run tool_caller(3, usize::MAX, Arc::default());
    };
    let err = agent.start("go").await.unwrap_err().to_string();
    assert!(err.contains("DefaultCompactionPipeline"), "{err}");
    assert!(err.contains("more than the window of 100 tokens"), "{err}");
}

fn random_conversation() -> impl Strategy<Value = Vec<Message>> {
    // Each step: a user message, an answer, or a batch of 1-3 tool calls with results
    // (possibly the last batch left unanswered, as a crash would leave it).
    let step = prop_oneof![
        (1usize..400).prop_map(|n| vec![Message::user("u".repeat(n))]),
        (1usize..400).prop_map(|n| vec![Message::assistant("a".repeat(n))]),
        (1usize..4, 1usize..2_000).prop_map(|(calls, size)| {
            let ids: Vec<String> = (0..calls).map(|i| format!("t{i}-{size}")).collect();
            let mut batch = vec![Message::tool_calls(
                "",
                ids.iter()
                    .map(|id| ToolCall::new(id.clone(), "shell", json!({"command": "ls"})))
                    .collect(),
            )];
            batch.extend(
                ids.iter()
                    .map(|id| Message::tool_result(id.clone(), "o".repeat(size))),
            );
            batch
        }),
    ];
    prop::collection::vec(step, 0..30).prop_map(|steps| {
        let mut messages = vec![Message::system("s"), Message::user("task")];
        messages.extend(steps.into_iter().flatten());
        messages
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_compaction_keeps_tool_calls_with_their_results(
        messages in random_conversation(),
        fraction in 0.0f64..1.0,
        keep in 0usize..4,
    ) {
        let target = (tokens(&messages) as f64 * fraction) as usize;
        let summariser = ScriptedModel::from_fn(|_env| Message::assistant("summary"));
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let mut env = CompactionEnv::new(messages.clone(), target, estimator());
        let ladder = (
            brute::stack::Layer::layer(<ToolResults<brute::stack::NoApp> as brute::Middleware>::options().keep_recent(keep), ()),
            brute::stack::Layer::layer(<SlidingWindow<brute::stack::NoApp> as brute::Middleware>::options().keep_recent(keep), ()),
            Summarize::new(summariser).keep_recent(keep),
        );
        runtime.block_on(ladder.call(&mut env)).unwrap();
        prop_assert!(is_well_paired(&env.messages).is_ok(), "{:?}\n{:#?}", is_well_paired(&env.messages), env.messages);
        prop_assert_eq!(env.tokens(), tokens(&env.messages));
        // The task and the latest user message survive every strategy.
        prop_assert_eq!(&env.messages[1], &messages[1]);
        let latest = |m: &[Message]| m.iter().rev().find(|m| m.role == Role::User).cloned();
        prop_assert_eq!(latest(&env.messages), latest(&messages));
    }
}

#[tokio::test]
async fn the_session_log_persists_what_survives_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    let compactions = Arc::new(AtomicUsize::new(0));
    let mut agent = brute_agent! {
        use brute::middleware::SessionLog { path: path.clone() };
        use Loop::ToolResult;
        use DefaultCompactionPipeline { window: 3_000 };
        use FakeTools;
        run tool_caller(12, 3_000, Arc::default());
    };
    let count = compactions.clone();
    agent.on(EventKind::Compacted, move |_env, _event| {
        count.fetch_add(1, Ordering::SeqCst);
    });
    let outcome = agent.start("go").await.unwrap();
    assert!(compactions.load(Ordering::SeqCst) > 0);
    // The file holds exactly the compacted conversation, not everything ever said.
    let saved: Vec<Message> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(saved, outcome.env.messages);
    is_well_paired(&saved).unwrap();
    assert!(
        saved.len() < 2 + 12 * 2 + 1,
        "{} messages were saved",
        saved.len()
    );
}

#[tokio::test]
async fn provider_reported_usage_takes_precedence_over_the_estimate() {
    // Tiny messages that the provider counts at 300 tokens each: the estimator alone
    // would never reach the trigger (80% of a 10,000-token window), the reported usage
    // does once the prompt has about 27 messages.
    let compactions = Arc::new(Mutex::new(Vec::new()));
    let calls = AtomicUsize::new(0);
    let model = move |env: &Env| {
        let n = calls.fetch_add(1, Ordering::SeqCst);
        let prompt = 300 * env.messages.len() as u64;
        async move {
            let message = if n < 20 {
                call(&format!("u{n}"), "read")
            } else {
                Message::assistant("done")
            };
            Ok(brute::Completion {
                message,
                usage: Some(brute::Usage::new(prompt, 10)),
            })
        }
    };
    let mut agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultCompactionPipeline { window: 10_000 };
        use FakeTools { output: 10 };
        run model;
    };
    let log = compactions.clone();
    agent.on(EventKind::Compacted, move |_env, event| {
        if let Event::Compacted { tokens_before, .. } = event {
            log.lock().unwrap().push(*tokens_before);
        }
    });
    agent.start("go").await.unwrap();
    let seen = compactions.lock().unwrap();
    assert!(
        !seen.is_empty(),
        "the reported usage should have triggered compaction"
    );
    assert!(seen.iter().all(|&before| before > 8_000), "{seen:?}");
}

/// A message-count trigger under a large window used to fire and cut nothing (the
/// target was half the window in tokens, far above the conversation): a trigger that
/// fires now always compacts, to a fraction of the conversation.
#[tokio::test]
async fn a_message_trigger_compacts_even_far_under_the_window() {
    let compactions = Arc::new(AtomicUsize::new(0));
    let mut agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultCompactionPipeline { window: 200_000, trigger: Trigger::Messages(6) };
        use FakeTools { output: 400 };
        run tool_caller(12, 200_000, Arc::default());
    };
    let seen = compactions.clone();
    agent.on(EventKind::Compacted, move |_env, _event| {
        seen.fetch_add(1, Ordering::SeqCst);
    });
    let outcome = agent.start("go").await.unwrap();
    assert!(compactions.load(Ordering::SeqCst) > 0, "never compacted");
    assert!(
        outcome.env.messages.len() < 25,
        "{} messages",
        outcome.env.messages.len()
    );
    is_well_paired(&outcome.env.messages).unwrap();
}

/// A summary longer than what it would replace is no compaction: the messages stay
/// and nothing is reported as compacted by `Summarize`.
#[tokio::test]
async fn a_summary_that_would_grow_the_conversation_is_not_applied() {
    let verbose = ScriptedModel::from_fn(|_env| Message::assistant("blah ".repeat(20_000)));
    let mut messages = conversation(8, 40);
    messages.push(Message::user("Keep going."));
    let before = messages.clone();
    let mut env = CompactionEnv::new(messages, 10, estimator());
    Summarize::new(verbose)
        .keep_recent(1)
        .call(&mut env)
        .await
        .unwrap();
    assert_eq!(env.messages, before);
    assert!(env.removed.is_empty());
    assert!(env.applied.is_empty());
}

/// A provider that counts fewer tokens than the estimator (here 1 input token a
/// call): the event's before and after are both estimates, so compaction never reads
/// as having grown the conversation, and the provider's count stands beside them.
#[tokio::test]
async fn the_compacted_event_counts_before_and_after_in_one_unit() {
    let counter = AtomicUsize::new(0);
    let model = move |_env: &Env| {
        let n = counter.fetch_add(1, Ordering::SeqCst);
        async move {
            let message = if n < 8 {
                call(&format!("u{n}"), "read")
            } else {
                Message::assistant("done")
            };
            Ok(brute::Completion {
                message,
                usage: Some(brute::Usage::new(1, 1)),
            })
        }
    };
    let events = Arc::new(Mutex::new(Vec::new()));
    let mut agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultCompactionPipeline { window: 200_000, trigger: Trigger::Messages(8) };
        use FakeTools { output: 400 };
        run model;
    };
    let log = events.clone();
    agent.on(EventKind::Compacted, move |_env, event| {
        if let Event::Compacted {
            tokens_before,
            tokens_after,
            reported_before,
            ..
        } = event
        {
            log.lock()
                .unwrap()
                .push((*tokens_before, *tokens_after, *reported_before));
        }
    });
    agent.start("go").await.unwrap();
    let events = events.lock().unwrap();
    assert!(!events.is_empty(), "the message trigger should have fired");
    for (before, after, reported) in events.iter() {
        assert!(
            before > after,
            "{before} -> {after} (reported {reported:?})"
        );
        let reported = reported.expect("the provider's count differs from the estimate");
        assert!(reported < *before, "{reported} vs {before}");
    }
}

/// The summariser's calls are model calls like any other: each is reported with
/// `ModelRequest` and `ModelResponse` on the turn's env; a summary thrown away is an
/// `Error` event from `Summarize` with its reason.
#[tokio::test]
async fn the_summarisers_calls_and_a_discarded_summary_are_events() {
    let summaries = Arc::new(AtomicUsize::new(0));
    let made = summaries.clone();
    let verbose = ScriptedModel::from_fn(move |_env| {
        made.fetch_add(1, Ordering::SeqCst);
        Message::assistant("blah ".repeat(20_000))
    });
    let mut agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultCompactionPipeline {
            window: 200_000,
            trigger: Trigger::Messages(8),
            compactor: pipeline! { run Summarize::new(verbose); },
        };
        use FakeTools { output: 40 };
        run tool_caller(6, 200_000, Arc::default());
    };
    let requests = Arc::new(AtomicUsize::new(0));
    let responses = Arc::new(AtomicUsize::new(0));
    let discarded = Arc::new(Mutex::new(Vec::new()));
    let seen = requests.clone();
    agent.on(EventKind::ModelRequest, move |_env, _event| {
        seen.fetch_add(1, Ordering::SeqCst);
    });
    let seen = responses.clone();
    agent.on(EventKind::ModelResponse, move |_env, _event| {
        seen.fetch_add(1, Ordering::SeqCst);
    });
    let log = discarded.clone();
    agent.on(EventKind::Error, move |_env, event| {
        if let Event::Error { layer, error } = event {
            log.lock()
                .unwrap()
                .push((layer.to_string(), error.to_string()));
        }
    });
    let outcome = agent.start("go").await.unwrap();
    let summaries = summaries.load(Ordering::SeqCst);
    assert!(summaries > 0, "the summariser should have been asked");
    let turn_calls = outcome
        .env
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .count();
    assert_eq!(requests.load(Ordering::SeqCst), turn_calls + summaries);
    assert_eq!(responses.load(Ordering::SeqCst), turn_calls + summaries);
    let discarded = discarded.lock().unwrap();
    assert_eq!(discarded.len(), summaries, "{discarded:?}");
    for (layer, reason) in discarded.iter() {
        assert_eq!(layer, "Summarize");
        assert!(reason.contains("not smaller"), "{reason}");
    }
}
