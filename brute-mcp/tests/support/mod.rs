//! Shared by the MCP tests: the third-party npm server `cargo xtask test` installs.

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
