//! `brute-mcp-conformance-client URL`: brute-mcp's client as the official MCP
//! conformance suite (`@modelcontextprotocol/conformance`) drives it.
//!
//! The suite starts a server for one scenario, names the scenario in
//! `MCP_CONFORMANCE_SCENARIO` and appends the server's URL to the command. This
//! program connects with [`McpTools`] (the handshake, then `tools/list`), makes the
//! calls the scenario expects, and closes the session. It exits non-zero, with the
//! error on stderr, when any step fails. `tests/conformance.rs` runs it.

use std::process::ExitCode;

use brute::ToolCall;
use brute::tools::{PreparedCall, ToolContext, ToolSet};
use brute_mcp::{HttpServer, McpTools};
use serde_json::{Value, json};

/// The calls a scenario expects of a client once it is connected: tool and arguments.
fn calls(scenario: &str) -> Vec<(&'static str, Value)> {
    match scenario {
        "tools_call" => vec![("add_numbers", json!({"a": 5, "b": 3}))],
        "sse-retry" => vec![("test_reconnection", json!({}))],
        _ => Vec::new(),
    }
}

async fn run(url: String, scenario: &str) -> Result<(), String> {
    let tools = McpTools::http_with("conformance", HttpServer::new(url))
        .await
        .map_err(|e| e.to_string())?;
    let mut names = Vec::new();
    tools.names(&mut names);
    println!("connected; tools: {}", names.join(", "));
    let context = ToolContext::new(std::env::temp_dir()).map_err(|e| e.to_string())?;
    for (index, (tool, arguments)) in calls(scenario).into_iter().enumerate() {
        let call = ToolCall::new(format!("call-{index}"), tool, arguments);
        let prepared = match tools.prepare(&call) {
            Some(prepared) => prepared.map_err(|e| e.to_string())?,
            None => return Err(format!("the server has no tool `{tool}`")),
        };
        let output = prepared.run(&context).await.map_err(|e| e.to_string())?;
        println!("{tool}: {}", output.content);
    }
    tools.close().await;
    Ok(())
}

fn main() -> ExitCode {
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: brute-mcp-conformance-client URL");
        return ExitCode::FAILURE;
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("brute-mcp-conformance-client: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(url, &scenario)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("brute-mcp-conformance-client ({scenario}): {error}");
            ExitCode::FAILURE
        }
    }
}
