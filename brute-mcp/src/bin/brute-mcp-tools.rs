//! `brute-mcp-tools [ROOT]`: serves brute's read-only tools (`read`, `fs_search`),
//! confined to ROOT (default: the working directory), as an MCP server over stdio.
//!
//! For any MCP client: `{"command": "brute-mcp-tools", "args": ["/path/to/project"]}`.

use std::process::ExitCode;

use brute::tools::{ToolContext, Tools};
use brute_mcp::ToolSetServer;

fn main() -> ExitCode {
    let root = std::env::args_os().nth(1).unwrap_or_else(|| ".".into());
    let context = match ToolContext::new(&root) {
        Ok(context) => context,
        Err(error) => {
            eprintln!(
                "brute-mcp-tools: the root `{}` is unusable: {error}",
                root.to_string_lossy()
            );
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("brute-mcp-tools: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let server = ToolSetServer::new(Tools::READ_ONLY, context).named("brute-mcp-tools");
    match runtime.block_on(brute_mcp::serve_stdio(server)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("brute-mcp-tools: {error}");
            ExitCode::FAILURE
        }
    }
}
