//! The quickstart: a whole agent stack (session, system prompt, tool loop, guard,
//! compaction, tools), running offline.
//!
//! `cargo run --example quickstart`
//!
//! The model is scripted (no network, no API key): it searches this project for
//! `brute_agent!`, reads the first file it found, and answers from what it read. The
//! tools are real: they search and read the files under the current directory. The
//! session is saved to `brute-quickstart/session.jsonl` in the system's temporary
//! folder, so a second turn sees the first. To talk to a real model, see `examples/providers.rs`.

mod common;

use brute::compaction::DefaultCompactionPipeline;
use brute::tools::{DefaultToolPipeline, Tools};
use brute::{
    Env, Event, EventKind, Message, Role, ToolCall, brute_agent,
    middleware::{Loop, MaxIterations, SessionLog, SystemPrompt},
    providers::ScriptedModel,
};
use serde_json::json;

/// One step of the script, chosen from what the conversation holds so far.
fn script(env: &Env) -> Message {
    let turn: Vec<&Message> = env
        .messages
        .iter()
        .rev()
        .take_while(|m| m.role != Role::User)
        .collect();
    let last_user = env.messages.iter().rev().find(|m| m.role == Role::User);
    if last_user.is_some_and(|m| m.content.contains("How many")) {
        let searched = env.messages.iter().filter(|m| m.has_tool_calls()).count();
        return Message::assistant(format!(
            "Earlier in this session I made {searched} tool calls: a search and a read."
        ));
    }
    match turn.first() {
        // The turn just started: search.
        None => Message::tool_calls(
            "Let me search the project.",
            vec![ToolCall::new(
                "search",
                "fs_search",
                json!({"pattern": "brute_agent!", "glob": "*.rs"}),
            )],
        ),
        // The search answered: read the first file it named.
        Some(result) if result.tool_call_id.as_deref() == Some("search") => {
            let file = result
                .content
                .lines()
                .next()
                .and_then(|l| l.split(':').next())
                .unwrap_or("README.md");
            Message::tool_calls(
                format!("Reading {file}."),
                vec![ToolCall::new(
                    "read",
                    "read",
                    json!({"file_path": file, "end_line": 5}),
                )],
            )
        }
        // The read answered: say what was found.
        Some(result) => {
            let lines = result.content.lines().count();
            Message::assistant(format!(
                "I found `brute_agent!` in this project and read the first {lines} lines of the file that uses it."
            ))
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), common::Report> {
    let session = &std::env::temp_dir().join("brute-quickstart/session.jsonl");
    if session.exists() {
        common::fs::remove_file(session)?; // start fresh on every run
    }
    let model = ScriptedModel::from_fn(script).named("scripted");

    let mut agent = brute_agent! {
        use SessionLog { path: session };
        use SystemPrompt { prompt: "You are a terse assistant working in a Rust project." };
        use Loop::ToolResult;
        use MaxIterations { max: 10 };
        use DefaultCompactionPipeline { window: 200_000, summariser: model.clone() };
        use DefaultToolPipeline { tools: Tools::READ_ONLY };
        run model;
    };
    agent
        .on(EventKind::ModelResponse, |_env, event| {
            if let Event::ModelResponse { message, .. } = event {
                println!("assistant: {}", message.content);
            }
        })
        .on(EventKind::ToolCallStart, |_env, event| {
            if let Event::ToolCallStart { call } = event {
                println!("  [tool] {} {}", call.name, call.arguments);
            }
        })
        .on(EventKind::ToolResult, |_env, event| {
            if let Event::ToolResult { call, result, .. } = event {
                let first = result.content.lines().next().unwrap_or("");
                println!("  [tool] {} -> {first}", call.name);
            }
        });

    println!("user: What uses brute_agent! here?");
    let outcome = agent.start("What uses brute_agent! here?").await?;
    println!(
        "(stopped: {:?}, {} iterations)\n",
        outcome.stop, outcome.env.iteration
    );

    println!("user: How many tool calls did you make?");
    let outcome = agent.start("How many tool calls did you make?").await?;
    println!("(stopped: {:?})", outcome.stop);
    println!(
        "\nThe session ({}) holds {} messages.",
        session.display(),
        common::fs::read(session)?.lines().count()
    );
    Ok(())
}
