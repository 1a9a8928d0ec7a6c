//! The tools of a third-party MCP server, listed and called by an agent, offline.
//!
//! `cargo run --example mcp_tools`
//!
//! The server is `@modelcontextprotocol/server-everything` from npm, which
//! `cargo xtask setup` (or `cargo xtask test`) installs into `.ci/npm`; it is started over stdio, in a process
//! group of its own, and killed with its group when the agent is dropped. The model is
//! scripted (no network, no API key): it reads the tools the pipeline advertised and
//! chooses its calls among them: `echo` and `get-sum` from the server, and `read`,
//! a built-in tool, next to them.

mod common;

use std::path::PathBuf;

use brute::tools::{DefaultToolPipeline, ToolSet, Tools};
use brute::{
    Env, Event, EventKind, Message, Role, ToolCall, brute_agent, middleware::Loop,
    providers::ScriptedModel,
};
use brute_mcp::McpTools;
use serde_json::json;

/// One step of the script: call the advertised tools it knows, then answer from
/// their results.
fn script(env: &Env) -> Message {
    let results: Vec<&str> = env
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.as_str())
        .collect();
    if !results.is_empty() {
        return Message::assistant(format!("The server said: {}", results.join(" | ")));
    }
    let advertised = |name: &str| env.tools.iter().any(|t| t.name == name);
    let mut calls = Vec::new();
    if advertised("echo") {
        calls.push(ToolCall::new(
            "c1",
            "echo",
            json!({"message": "hello over MCP"}),
        ));
    }
    if advertised("get-sum") {
        calls.push(ToolCall::new("c2", "get-sum", json!({"a": 19, "b": 23})));
    }
    if advertised("read") {
        calls.push(ToolCall::new(
            "c3",
            "read",
            json!({"file_path": "Cargo.toml", "end_line": 1}),
        ));
    }
    Message::tool_calls("", calls)
}

#[tokio::main]
async fn main() -> Result<(), common::Report> {
    let server = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(".ci/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if !server.is_file() {
        return Err(format!(
            "{} is missing: run `cargo xtask setup`, which installs it",
            server.display()
        )
        .into());
    }
    let mut command = tokio::process::Command::new("node");
    command.arg(&server).arg("stdio");
    let everything = McpTools::stdio("everything", command).await?;

    let mut names = Vec::new();
    everything.names(&mut names);
    println!("The server's tools: {}", names.join(", "));

    let model = ScriptedModel::from_fn(script);
    let mut agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: (Tools::READ_ONLY, everything.clone()) };
        run model;
    };
    agent.on(EventKind::ToolResult, |_env, event| {
        if let Event::ToolResult { call, result, .. } = event {
            println!("{} -> {}", call.name, result.content);
        }
    });
    let outcome = agent.start("Try the server's tools.").await?;
    println!("{}", outcome.text().unwrap_or_default());
    Ok(())
}
