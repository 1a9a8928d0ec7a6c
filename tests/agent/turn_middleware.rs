//! The turn middleware of the Rack model: `Loop`, `MaxIterations` in its three modes,
//! `SystemPrompt`, the events every layer emits and the tracing spans.

#![allow(clippy::unwrap_used)]

use crate::scripted_tools;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use brute::{
    Env, Error, EventKind, ExitReason, Message, Role, StopReason, brute_agent,
    middleware::{LimitMode, Loop, MaxIterations, Prompt, SystemPrompt},
    providers::ScriptedModel,
};
use scripted_tools::{RunTools, assert_no_dangling_call, echo_calls};

/// A model that calls a tool on every pass and never answers.
fn tool_addict() -> ScriptedModel {
    ScriptedModel::from_fn(|env| echo_calls(&format!("i{}", env.iteration), &["again"]))
}

#[tokio::test]
async fn loop_tool_result_is_a_do_while_over_tool_results() {
    let model = ScriptedModel::per_turn([
        echo_calls("a", &["1"]),
        echo_calls("b", &["2", "3"]),
        Message::assistant("done"),
    ]);
    let agent = brute_agent! {
        use Loop::ToolResult;
        use RunTools;
        run model;
    };
    let outcome = agent.start("go").await.unwrap();
    assert_eq!(outcome.stop, StopReason::Completed);
    assert_eq!(outcome.env.iteration, 3);
    let roles: Vec<Role> = outcome.env.messages.iter().map(|m| m.role).collect();
    use Role::*;
    assert_eq!(
        roles,
        [User, Assistant, Tool, Assistant, Tool, Tool, Assistant]
    );

    // A model that answers at once: the inner stack still runs exactly once.
    let agent = brute_agent! {
        use Loop::ToolResult;
        use RunTools;
        run |_env| async { Ok(Message::assistant("hi")) };
    };
    assert_eq!(agent.start("go").await.unwrap().env.iteration, 1);
}

#[tokio::test]
async fn loop_while_takes_any_condition_and_stops_on_should_exit() {
    let agent = brute_agent! {
        use Loop::While { condition: |env| env.messages.len() < 7 };
        run |env| {
            let n = env.iteration;
            async move { Ok(Message::assistant(format!("pass {n}"))) }
        };
    };
    let outcome = agent.start("go").await.unwrap();
    assert_eq!(outcome.env.iteration, 6);
    assert_eq!(outcome.text(), Some("pass 6"));

    // A layer setting should_exit ends the loop at the next check, whatever the condition.
    let stop_at_three = brute::pipeline! {
        use Loop::While { condition: |_env| true };
        run brute::stack::handler_fn(|env: &mut Env| {
            env.messages.push(Message::assistant("pass"));
            if env.iteration == 3 {
                env.exit(ExitReason::Requested { by: "test".into(), reason: "enough".into() });
            }
            async { Ok(()) }
        });
    };
    let mut env = Env::new();
    brute::Handler::call(&stop_at_three, &mut env)
        .await
        .unwrap();
    assert_eq!(env.iteration, 3);
    assert_eq!(env.messages.len(), 3);
}

#[tokio::test]
async fn max_iterations_ends_gracefully_with_the_partial_result_and_a_readable_reason() {
    let mut agent = brute_agent! {
        use Loop::ToolResult;
        use MaxIterations { max: 4 };
        use RunTools;
        run tool_addict();
    };
    let passes = Arc::new(AtomicU32::new(0));
    let seen = passes.clone();
    agent.on(EventKind::Iteration, move |_env, _event| {
        seen.fetch_add(1, Ordering::Relaxed);
    });
    let outcome = agent.start("loop").await.unwrap();
    // The pass count matches the model calls: no pass starts only to be refused.
    assert_eq!(outcome.env.iteration, 4);
    assert_eq!(passes.load(Ordering::Relaxed), 4);
    assert_eq!(
        outcome.stop,
        StopReason::Exited(ExitReason::Limit {
            by: "MaxIterations",
            limit: 4
        })
    );
    assert_eq!(
        outcome.env.should_exit,
        Some(ExitReason::Limit {
            by: "MaxIterations",
            limit: 4
        })
    );
    assert_eq!(
        outcome.env.should_exit.as_ref().unwrap().to_string(),
        "MaxIterations reached its limit of 4"
    );
    // Four model calls, each with its tool result: the partial work is kept and no
    // call is left without its result.
    assert_eq!(
        outcome
            .env
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count(),
        4
    );
    assert_eq!(outcome.env.messages.last().unwrap().role, Role::Tool);
    assert_no_dangling_call(&outcome.env.messages);
}

#[tokio::test]
async fn max_iterations_in_error_mode_returns_a_stopped_error() {
    let agent = brute_agent! {
        use Loop::ToolResult;
        use MaxIterations { max: 2, mode: LimitMode::Error };
        use RunTools;
        run tool_addict();
    };
    let error = agent.start("loop").await.unwrap_err();
    assert!(
        matches!(
            error,
            Error::Stopped(ExitReason::Limit {
                by: "MaxIterations",
                limit: 2
            })
        ),
        "{error}"
    );
    assert_eq!(
        error.to_string(),
        "the turn was stopped: MaxIterations reached its limit of 2"
    );
}

#[tokio::test]
async fn max_iterations_in_warn_mode_tells_the_model_how_many_calls_remain() {
    let agent = brute_agent! {
        use Loop::ToolResult;
        use MaxIterations { max: 5, mode: LimitMode::Warn { remaining: 2 } };
        use RunTools;
        run tool_addict();
    };
    let outcome = agent.start("loop").await.unwrap();
    assert_eq!(
        outcome.stop,
        StopReason::Exited(ExitReason::Limit {
            by: "MaxIterations",
            limit: 5
        })
    );
    let warnings: Vec<&str> = outcome
        .env
        .messages
        .iter()
        .filter(|m| m.role == Role::User && m.content.starts_with("[brute]"))
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(warnings.len(), 2);
    assert!(
        warnings[0].contains("2 model calls left"),
        "{}",
        warnings[0]
    );
    assert!(warnings[1].contains("1 model call left"), "{}", warnings[1]);
    assert_no_dangling_call(&outcome.env.messages);
}

#[tokio::test]
async fn system_prompt_prepends_text_or_a_built_prompt_once() {
    let agent = brute_agent! {
        use SystemPrompt { prompt: "You are terse." };
        use Loop::While { condition: |env| env.iteration < 3 };
        run |_env| async { Ok(Message::assistant("ok")) };
    };
    let outcome = agent.start("hi").await.unwrap();
    assert_eq!(outcome.env.messages[0], Message::system("You are terse."));
    assert_eq!(
        outcome
            .env
            .messages
            .iter()
            .filter(|m| m.role == Role::System)
            .count(),
        1
    );

    // A builder sees the env: metadata such as custom rules, and the working directory.
    let prompt = Prompt::build(|env| {
        let rules = env
            .metadata
            .get("rules")
            .and_then(|v| v.as_str())
            .unwrap_or("none");
        let cwd = std::env::current_dir().unwrap();
        format!("Rules: {rules}. Working directory: {}.", cwd.display())
    });
    let agent = brute_agent! {
        use SystemPrompt { prompt: prompt };
        run |_env| async { Ok(Message::assistant("ok")) };
    };
    let mut env = agent.env();
    env.metadata.insert("rules".into(), "use tabs".into());
    env.messages.push(Message::user("hi"));
    let outcome = agent.turn(env).await.unwrap();
    assert!(
        outcome.env.messages[0]
            .content
            .starts_with("Rules: use tabs. Working directory: /")
    );

    // Nothing is added when the conversation already starts with a system message.
    let mut env = agent.env();
    env.messages.push(Message::system("Mine."));
    env.messages.push(Message::user("hi"));
    let outcome = agent.turn(env).await.unwrap();
    assert_eq!(outcome.env.messages[0], Message::system("Mine."));
    assert_eq!(
        outcome
            .env
            .messages
            .iter()
            .filter(|m| m.role == Role::System)
            .count(),
        1
    );
}

#[tokio::test]
async fn every_layer_reports_typed_events_in_order() {
    let model = ScriptedModel::per_turn([echo_calls("a", &["x", "y"]), Message::assistant("done")]);
    let mut agent = brute_agent! {
        use SystemPrompt { prompt: "sys" };
        use Loop::ToolResult;
        use MaxIterations { max: 5 };
        use RunTools;
        run model;
    };
    let seen = Arc::new(Mutex::new(Vec::new()));
    for kind in [
        EventKind::TurnStart,
        EventKind::TurnEnd,
        EventKind::Iteration,
        EventKind::ModelRequest,
        EventKind::ModelResponse,
        EventKind::ToolCallStart,
        EventKind::ToolResult,
    ] {
        let log = seen.clone();
        agent.on(kind, move |_env, event| {
            let entry = match event {
                brute::Event::Iteration { n } => format!("iteration {n}"),
                brute::Event::ModelRequest { messages, tools } => {
                    format!("request {messages} {tools}")
                }
                brute::Event::ModelResponse { message, .. } => {
                    format!("response {}", message.tool_calls.len())
                }
                brute::Event::ToolCallStart { call } => format!("start {}", call.id),
                brute::Event::ToolResult {
                    call,
                    result,
                    is_error,
                } => {
                    format!("result {} {} {is_error}", call.id, result.content)
                }
                brute::Event::TurnEnd { result: Ok(stop) } => format!("end {stop:?}"),
                other => format!("{:?}", other.kind()),
            };
            log.lock().unwrap().push(entry);
        });
    }
    agent.start("go").await.unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "TurnStart",
            "iteration 1",
            "request 2 1",
            "response 2",
            "start a-0",
            "result a-0 x false",
            "start a-1",
            "result a-1 y false",
            "iteration 2",
            "request 5 1",
            "response 0",
            "end Completed",
        ]
    );
}

/// `TurnEnd` fires for a failed turn too, with the error: every `TurnStart` has one.
#[tokio::test]
async fn turn_end_fires_with_the_error_when_a_turn_fails() {
    let mut agent = brute_agent! {
        run |_env| async { Err::<Message, _>(Error::layer("Test", "the model is down")) };
    };
    let ends = Arc::new(Mutex::new(Vec::new()));
    for kind in [EventKind::TurnStart, EventKind::TurnEnd] {
        let log = ends.clone();
        agent.on(kind, move |_env, event| {
            let line = match event {
                brute::Event::TurnStart => "start".to_string(),
                brute::Event::TurnEnd { result: Err(error) } => format!("failed: {error}"),
                other => format!("{other:?}"),
            };
            log.lock().unwrap().push(line);
        });
    }
    let error = agent.start("hi").await.unwrap_err();
    assert_eq!(error.to_string(), "Test: the model is down");
    assert_eq!(
        *ends.lock().unwrap(),
        ["start", "failed: Test: the model is down"]
    );
}

/// The terminal gives every tool call of a reply an id of its own before the reply is
/// stored: providers refuse duplicate or empty ids, and each result answers one call.
#[tokio::test]
async fn duplicate_and_empty_tool_call_ids_are_made_unique_before_they_are_stored() {
    let reply = Message::tool_calls(
        "",
        vec![
            brute::ToolCall::new("same", "echo", serde_json::json!({"text": "a"})),
            brute::ToolCall::new("same", "echo", serde_json::json!({"text": "b"})),
            brute::ToolCall::new("", "echo", serde_json::json!({"text": "c"})),
            brute::ToolCall::new("same", "echo", serde_json::json!({"text": "d"})),
        ],
    );
    let agent = brute_agent! {
        use Loop::ToolResult;
        use MaxIterations { max: 3 };
        use RunTools;
        run ScriptedModel::new([reply, Message::assistant("done")]);
    };
    let outcome = agent.start("go").await.unwrap();
    let ids: Vec<&str> = outcome.env.messages[1]
        .tool_calls
        .iter()
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(ids, ["same", "same_1", "call_1_2", "same_3"]);
    assert_no_dangling_call(&outcome.env.messages);
    let results: Vec<&str> = outcome
        .env
        .messages
        .iter()
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    assert_eq!(results, ids);
}

/// Forgets to call its inner app: the turn never reaches the model.
#[derive(brute::Middleware)]
struct Forgetful<A> {
    app: A,
}

impl<A: brute::Handler<Env>> brute::Handler<Env> for Forgetful<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        env.metadata.insert("forgetful".into(), true.into());
        Ok(())
    }
}

/// Answers from a cache instead of calling its inner app: a turn that is answered.
#[derive(brute::Middleware)]
struct Cached<A> {
    app: A,
}

impl<A: brute::Handler<Env>> brute::Handler<Env> for Cached<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        env.messages.push(Message::assistant("from the cache"));
        Ok(())
    }
}

#[tokio::test]
async fn a_middleware_that_never_calls_its_inner_app_fails_the_turn_naming_it() {
    let agent = brute_agent! {
        use SystemPrompt { prompt: "terse" };
        use Forgetful;
        run ScriptedModel::new([Message::assistant("never asked")]);
    };
    let error = agent.start("go").await.unwrap_err();
    let text = error.to_string();
    assert!(text.contains("`Forgetful`"), "{text}");
    assert!(text.contains("never reached the model"), "{text}");

    let alone = brute_agent! {
        use Forgetful;
        run ScriptedModel::new([Message::assistant("never asked")]);
    };
    let error = alone.start("go").await.unwrap_err();
    assert_eq!(error.layer_name(), Some("Forgetful"));
    assert!(
        error
            .to_string()
            .contains("`Forgetful` returned without calling its inner app")
    );
}

#[tokio::test]
async fn a_middleware_that_answers_or_exits_without_its_inner_app_ends_the_turn_normally() {
    let cached = brute_agent! {
        use Cached;
        run ScriptedModel::new([]);
    };
    let outcome = cached.start("go").await.unwrap();
    assert_eq!(outcome.stop, StopReason::Completed);
    assert_eq!(outcome.text(), Some("from the cache"));

    // `MaxIterations` at its limit refuses the pass and says why.
    let guarded = brute_agent! {
        use Loop::While { condition: |_env| true };
        use MaxIterations { max: 0 };
        run ScriptedModel::new([]);
    };
    let outcome = guarded.start("go").await.unwrap();
    assert!(matches!(
        outcome.stop,
        StopReason::Exited(ExitReason::Limit { .. })
    ));
}

/// Calls its inner app on the first pass of a loop only: later passes end with the
/// tool results of the first unanswered.
#[derive(brute::Middleware)]
struct FirstPassOnly<A> {
    app: A,
}

impl<A: brute::Handler<Env>> brute::Handler<Env> for FirstPassOnly<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        if env.iteration == 1 {
            self.app.call(env).await?;
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_middleware_that_skips_its_inner_app_on_a_later_pass_fails_the_turn_naming_it_alone() {
    let model = ScriptedModel::per_turn([echo_calls("a", &["1"]), Message::assistant("done")]);
    let agent = brute_agent! {
        use SystemPrompt { prompt: "terse" };
        use Loop::ToolResult;
        use MaxIterations { max: 5 };
        use FirstPassOnly;
        use RunTools;
        run model;
    };
    let error = agent.start("go").await.unwrap_err();
    assert_eq!(error.layer_name(), Some("FirstPassOnly"), "{error}");
    let text = error.to_string();
    assert!(
        text.contains("`FirstPassOnly` returned without calling its inner app"),
        "{text}"
    );
    for other in [
        "SystemPrompt",
        "Loop::ToolResult",
        "MaxIterations",
        "RunTools",
    ] {
        assert!(!text.contains(other), "names `{other}`: {text}");
    }
}

#[tokio::test]
async fn a_middleware_that_never_calls_its_inner_app_is_named_alone_among_five() {
    let agent = brute_agent! {
        use SystemPrompt { prompt: "terse" };
        use Loop::ToolResult;
        use MaxIterations { max: 5 };
        use Forgetful;
        use RunTools;
        run ScriptedModel::new([Message::assistant("never asked")]);
    };
    let error = agent.start("go").await.unwrap_err();
    assert_eq!(error.layer_name(), Some("Forgetful"), "{error}");
    let text = error.to_string();
    for other in [
        "SystemPrompt",
        "Loop::ToolResult",
        "MaxIterations",
        "RunTools",
    ] {
        assert!(!text.contains(other), "names `{other}`: {text}");
    }
}
