//! 01 — a basic agent with every built-in tool (`Tools::ALL`), confined to a temporary
//! folder: it writes a file, reads it back and answers.
//!
//! ```text
//! cargo run --example 01_basic                                   # scripted, offline
//! BRUTE_MODEL=openai:gpt-4o-mini cargo run --example 01_basic    # a real model
//! ```

mod common;

use brute::providers::{AnyModel, ScriptedModel};
use brute::tools::{DefaultToolPipeline, Tools};
use brute::{
    Env, Message, StopReason, ToolCall, brute_agent,
    middleware::{Loop, MaxIterations, SystemPrompt},
};
use serde_json::json;

const TASK: &str =
    "Create hello.txt containing the line `hello from brute`, then read it back to check it.";

/// The offline model: write, read, answer, deciding from the tool results so far.
pub(crate) fn script(env: &Env) -> Message {
    match common::results_this_turn(env).len() {
        0 => Message::tool_calls(
            "I'll write the file.",
            vec![ToolCall::new(
                "w",
                "write",
                json!({"file_path": "hello.txt", "content": "hello from brute\n"}),
            )],
        ),
        1 => Message::tool_calls(
            "Now I'll read it back.",
            vec![ToolCall::new(
                "r",
                "read",
                json!({"file_path": "hello.txt"}),
            )],
        ),
        _ => Message::assistant("hello.txt holds `hello from brute`, as asked."),
    }
}

/// The example itself, on any model, in `root`.
pub(crate) async fn run(
    model: AnyModel,
    root: &std::path::Path,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut agent = brute_agent! {
        use SystemPrompt { prompt: "You are a careful assistant. Use the tools; paths are relative to the project root." };
        use Loop::ToolResult;
        use MaxIterations { max: 10 };
        use DefaultToolPipeline { tools: Tools::ALL, root: root.to_path_buf() };
        run model;
    };
    common::print_turns(&mut agent);
    println!("user: {TASK}");
    let outcome = agent.start(TASK).await?;
    println!(
        "(stopped: {:?} after {} passes)",
        outcome.stop, outcome.env.iteration
    );
    let written = common::fs::read(root.join("hello.txt"))?;
    if outcome.stop != StopReason::Completed || !written.contains("hello from brute") {
        return Err(format!("the task was not done: hello.txt holds {written:?}").into());
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), common::Report> {
    let model = common::model(ScriptedModel::from_fn(script).named("scripted"));
    let root = common::fs::tempdir()?;
    Ok(run(model, root.path()).await?)
}
