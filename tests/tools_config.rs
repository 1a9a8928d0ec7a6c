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

#[test]
fn with_a_timeout_a_runtime_without_timers_is_an_error_saying_what_to_enable() {
    let root = tempfile::tempdir().unwrap();
    let saved = tempfile::tempdir().unwrap();
    let model = model("x");
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline {
            tools: (Echo,),
            root: root.path(),
            output_dir: saved.path(),
            env_secrets: false,
        };
        run model;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let err = runtime.block_on(agent.start("go")).unwrap_err().to_string();
    assert!(
        err.contains("DefaultToolPipeline") && err.contains("enable_time()"),
        "{err}"
    );
}
