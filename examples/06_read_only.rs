//! 06 — a read-only agent: its tool set is `Tools::READ_ONLY`, whose type is
//! `(Read, FsSearch)`. The write tools are not switched off, they are absent from the
//! type: the model is never shown them, and a call to one (a model may try) is an
//! "unknown tool" result, never a write. The example checks nothing was written.
//!
//! ```text
//! cargo run --example 06_read_only
//! BRUTE_MODEL=openai:gpt-4o-mini cargo run --example 06_read_only
//! ```

mod common;

use std::path::Path;

use brute::providers::{AnyModel, ScriptedModel};
use brute::tools::{DefaultToolPipeline, ReadOnlyTools, ToolSet, Tools};
use brute::{
    Env, EventKind, Message, ToolCall, brute_agent,
    middleware::{Loop, MaxIterations, SystemPrompt},
};
use serde_json::json;

/// The tools, by type: nothing here can write.
const TOOLS: ReadOnlyTools = Tools::READ_ONLY;

/// The offline model: searches, then tries to write (which it must not be able to do),
/// then answers from what it read.
pub(crate) fn script(env: &Env) -> Message {
    let results = common::results_this_turn(env);
    match results.len() {
        0 => Message::tool_calls(
            "Searching for TODOs.",
            vec![ToolCall::new("s", "fs_search", json!({"pattern": "TODO"}))],
        ),
        1 => Message::tool_calls(
            "Let me fix it while I am here.",
            vec![ToolCall::new(
                "w",
                "write",
                json!({"file_path": "notes.md", "content": "fixed\n"}),
            )],
        ),
        _ => Message::assistant(
            "notes.md has one TODO: `TODO: write the intro`. I cannot change files here.",
        ),
    }
}

pub(crate) async fn run(model: AnyModel, root: &Path) -> Result<(), Box<dyn std::error::Error>> {
    common::fs::write(root.join("notes.md"), "# Notes\nTODO: write the intro\n")?;
    let mut names = Vec::new();
    TOOLS.names(&mut names);
    println!("tools offered to the model: {names:?}");

    let mut agent = brute_agent! {
        use SystemPrompt { prompt: "You review a project without changing it." };
        use Loop::ToolResult;
        use MaxIterations { max: 10 };
        use DefaultToolPipeline { tools: TOOLS, root: root.to_path_buf() };
        run model;
    };
    common::print_turns(&mut agent);
    agent.on(EventKind::ModelRequest, |env, _| {
        let offered: Vec<&str> = env.tools.iter().map(|t| t.name.as_str()).collect();
        assert!(!offered.contains(&"write"), "write is never advertised");
    });
    let task = "What TODOs are in this project? Fix them if you can.";
    println!("user: {task}");
    agent.start(task).await?;
    let notes = common::fs::read(root.join("notes.md"))?;
    if notes != "# Notes\nTODO: write the intro\n" {
        return Err(format!("a read-only agent changed notes.md: {notes:?}").into());
    }
    println!("notes.md is unchanged.");
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), common::Report> {
    let model = common::model(ScriptedModel::from_fn(script).named("scripted"));
    let root = common::fs::tempdir()?;
    Ok(run(model, root.path()).await?)
}
