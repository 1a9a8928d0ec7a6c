//! Shared by the MCP tests: the third-party npm server `cargo xtask test` installs, and
//! brute's own MCP server on a free port of 127.0.0.1.

#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;

/// The entry point of `@modelcontextprotocol/server-everything`, installed by
/// `cargo xtask test` into `.ci/npm`. A missing server fails the test: it is never skipped.
pub fn everything_server() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../.ci/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        path.is_file(),
        "the MCP test server is not installed at {}: run `cargo xtask test`, which installs it",
        path.display()
    );
    path
}

/// The command that starts the everything server over stdio (`transport` is `stdio`
/// or `streamableHttp`), with Node's own logs kept off stdout.
pub fn everything_command(transport: &str) -> tokio::process::Command {
    let mut command = tokio::process::Command::new("node");
    command.arg(everything_server()).arg(transport);
    command
}

/// Serves `server` over streamable HTTP on a free port of 127.0.0.1 and gives its URL;
/// the server stops when the returned sender is dropped.
pub async fn serve_http<H: rmcp::ServerHandler + Clone>(
    server: H,
) -> (String, tokio::sync::oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let url = format!("http://{}/mcp", listener.local_addr().expect("an address"));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let shutdown = async move {
            let _ = stopped.await;
        };
        brute_mcp::serve_http(server, listener, shutdown)
            .await
            .expect("the server runs");
    });
    (url, stop)
}
