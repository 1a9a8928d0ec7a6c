//! Explicit configuration of the tool pipeline: what it reads from the process and
//! cleans up happens only through options with documented defaults.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::{Duration, SystemTime};

use brute::tools::{Secrets, ToolContext, ToolError};
use brute::{
    Message, ToolCall, brute_agent, middleware::Loop, providers::ScriptedModel, tool,
    tools::DefaultToolPipeline,
};
use serde_json::json;

/// Prints its text.
#[tool]
async fn echo(text: String) -> Result<String, ToolError> {
    Ok(text)
}

fn old_saved_output(dir: &Path) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let file = dir.join("tool_00000000000000ff.txt");
    std::fs::write(&file, "old").unwrap();
    let long_ago = SystemTime::now() - Duration::from_secs(30 * 24 * 3600);
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(long_ago)
        .unwrap();
    file
}

fn model(text: &str) -> ScriptedModel {
    ScriptedModel::per_turn([
        Message::tool_calls(
            "",
            vec![ToolCall::new("c", "echo", json!({ "text": text }))],
        ),
        Message::assistant("ok"),
    ])
}

#[tokio::test]
async fn saved_outputs_are_cleaned_only_as_the_retention_option_says() {
    let root = tempfile::tempdir().unwrap();
    let saved = tempfile::tempdir().unwrap();
    let old = old_saved_output(saved.path());
    let model_a = model("hi");
    let keep = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline {
            tools: (Echo,),
            root: root.path(),
            output_dir: saved.path(),
            output_retention: None,
            env_secrets: false,
        };
        run model_a;
    };
    keep.start("go").await.unwrap();
    assert!(old.exists(), "output_retention: None deletes nothing");

    let model_b = model("hi");
    let clean = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline {
            tools: (Echo,),
            root: root.path(),
            output_dir: saved.path(),
            env_secrets: false,
        };
        run model_b;
    };
    clean.start("go").await.unwrap();
    assert!(!old.exists(), "the default retention (a week) deletes it");
}

#[tokio::test]
async fn secrets_come_only_from_the_options() {
    let root = tempfile::tempdir().unwrap();
    let saved = tempfile::tempdir().unwrap();
    // A context reads nothing from the environment.
    let cx = ToolContext::new(root.path()).unwrap();
    assert!(cx.secrets().is_empty());
    // Without the environment, the pipeline hides exactly what it was given.
    let secrets = Secrets::default().with(["opensesame-123"]);
    let model = model("pw=opensesame-123");
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline {
            tools: (Echo,),
            root: root.path(),
            output_dir: saved.path(),
            env_secrets: false,
            secrets: secrets,
        };
        run model;
    };
    let outcome = agent.start("go").await.unwrap();
    assert_eq!(outcome.env.messages[2].content, "pw=[redacted]");
}

#[test]
fn secrets_from_env_are_the_secret_named_variables() {
    let secrets = Secrets::from_env();
    let expected = std::env::vars()
        .filter(|(name, value)| {
            let upper = name.to_ascii_uppercase();
            ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"]
                .iter()
                .any(|w| upper.contains(w))
                && value.len() >= 8
        })
        .count();
    let shown = format!("{secrets:?}");
    assert_eq!(shown.matches("[redacted $").count(), expected, "{shown}");
    for (name, value) in std::env::vars() {
        if value.len() >= 8 && shown.contains(&format!("${name}]")) {
            assert!(!shown.contains(&value), "Debug shows no value");
        }
    }
}

#[test]
fn without_a_timeout_the_pipeline_runs_on_a_runtime_without_timers() {
    let root = tempfile::tempdir().unwrap();
    let saved = tempfile::tempdir().unwrap();
    let model = model("no timers needed");
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline {
            tools: (Echo,),
            root: root.path(),
            output_dir: saved.path(),
            env_secrets: false,
            timeout: None,
        };
        run model;
    };
    // No `enable_time()`: a timer would panic ("timers are disabled").
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let outcome = runtime.block_on(agent.start("go")).unwrap();
    assert_eq!(outcome.env.messages[2].content, "no timers needed");
}

/// Waits once (a yield, no timer of its own), then prints its text.
#[tool]
async fn wait_then_echo(text: String) -> Result<String, ToolError> {
    tokio::task::yield_now().await;
    Ok(text)
}

/// The pipeline does not probe the runtime: with a timeout, on a runtime without
/// timers, a call that never waits runs, and a call that waits gets an error result
/// saying what to enable (Tokio's own words, through the call's panic guard); the turn
/// goes on.
#[test]
fn with_a_timeout_a_runtime_without_timers_fails_only_waiting_calls_saying_what_to_enable() {
    let root = tempfile::tempdir().unwrap();
    let model = ScriptedModel::per_turn([
        Message::tool_calls(
            "",
            vec![
                ToolCall::new("a", "echo", json!({ "text": "ran" })),
                ToolCall::new("b", "wait_then_echo", json!({ "text": "waited" })),
            ],
        ),
        Message::assistant("ok"),
    ]);
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline {
            tools: (Echo, WaitThenEcho),
            root: root.path(),
            env_secrets: false,
        };
        run model;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let outcome = runtime.block_on(agent.start("go")).unwrap();
    assert_eq!(outcome.env.messages[2].content, "ran");
    let waited = &outcome.env.messages[3].content;
    assert!(
        waited.starts_with("Error: tool `wait_then_echo`") && waited.contains("enable_time"),
        "{waited}"
    );
    assert_eq!(outcome.text(), Some("ok"));
}

/// By default a cut output is saved nowhere: the result says what was dropped and that
/// nothing was saved, and the pipeline writes no file (main saved it under
/// `$XDG_DATA_HOME/brute/tool-output` and deleted week-old files there).
#[tokio::test]
async fn by_default_a_cut_output_is_not_saved_anywhere() {
    let root = tempfile::tempdir().unwrap();
    let long: String = (0..3000).map(|i| format!("{i}\n")).collect();
    let model = model(&long);
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: (Echo,), root: root.path(), env_secrets: false };
        run model;
    };
    let outcome = agent.start("go").await.unwrap();
    let result = &outcome.env.messages[2].content;
    assert!(
        result.contains("showing 2000 of 3000 lines, 8890 of 13890 bytes; 5000 bytes not shown]"),
        "{result}"
    );
    assert!(
        result.contains("was not saved") && !result.contains("saved to:"),
        "{result}"
    );
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
    let cx = ToolContext::new(root.path()).unwrap();
    assert_eq!(cx.output_dir(), None);
}

/// Opting in to a folder saves the full text there, named in the result.
#[tokio::test]
async fn a_configured_output_dir_keeps_the_full_text() {
    let root = tempfile::tempdir().unwrap();
    let saved = tempfile::tempdir().unwrap();
    let long: String = (0..3000).map(|i| format!("{i}\n")).collect();
    let model = model(&long);
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline {
            tools: (Echo,),
            root: root.path(),
            env_secrets: false,
            output_dir: saved.path(),
        };
        run model;
    };
    let outcome = agent.start("go").await.unwrap();
    let result = &outcome.env.messages[2].content;
    let path = result
        .split("Full output saved to: ")
        .nth(1)
        .and_then(|rest| rest.split(". Use").next())
        .unwrap();
    assert!(Path::new(path).starts_with(saved.path()), "{path}");
    assert_eq!(std::fs::read_to_string(path).unwrap(), long);
}
