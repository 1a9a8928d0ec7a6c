//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, run on
//! Node 22 from `.ci/npm`) against brute's MCP server and client.
//!
//! OAuth: the client scenarios `auth/*`, all of which a client that no person
//! attends can pass (the authorization step scripted).
//!
//! Server scenarios: a brute tool set with its root's files as resources and a
//! prompt ([`ContentServer`]), on 127.0.0.1, probed by the suite. Client
//! scenarios: the suite starts a server per scenario and drives the
//! `brute-mcp-conformance-client` binary. The scenarios that do not apply to what
//! brute offers are listed, with why, in brute-mcp's README. A missing suite or Node
//! fails the test with the command that installs them.

use crate::support;

use std::path::{Path, PathBuf};

use brute::tools::{ToolContext, Tools};
use brute_mcp::{ContentServer, ToolSetServer};
use serde_json::Value;

/// The server scenarios that apply to a brute server over streamable HTTP (the others
/// call the suite's own fixtures, `test_simple_text` and the like: see the README).
const SERVER_SCENARIOS: &[&str] = &[
    "server-initialize",
    "ping",
    "tools-list",
    "server-sse-polling",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
    "resources-list",
    "prompts-list",
];

/// Checks whose warning (never a failure) does not count, and why.
const NOT_APPLICABLE_WARNINGS: &[(&str, &str)] = &[(
    "server-sse-disconnect-resume",
    "it calls the suite's own fixture tool `test_reconnection`, which closes its stream mid-call; brute's servers have no such tool",
)];

/// The client scenarios brute's client takes part in, without OAuth.
const CLIENT_SCENARIOS: &[&str] = &["initialize", "tools_call", "sse-retry"];

/// The OAuth scenarios a client that no person attends can pass (the authorization
/// step scripted, as the suite's authorization server allows); see the README for
/// the others.
const AUTH_SCENARIOS: &[&str] = &[
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/client-credentials-basic",
    "auth/client-credentials-jwt",
    "auth/cross-app-access-complete-flow",
    "auth/2025-03-26-oauth-metadata-backcompat",
    // The server asks for a token, then for more scopes, after the handshake: the
    // client authorizes again mid-session and sends the request again.
    "auth/scope-step-up",
    // The server refuses every token: the client stops (and fails) within the
    // suite's limit of three authorizations.
    "auth/scope-retry-limit",
];

fn npm_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.ci/npm/node_modules")
}

/// Node 22 (the suite needs 22 or newer) and the suite's entry point, or a panic that
/// names the command installing them: the test never skips.
fn suite() -> (PathBuf, PathBuf) {
    let node = npm_root().join("node/bin/node");
    let entry = npm_root().join("@modelcontextprotocol/conformance/dist/index.js");
    for path in [&node, &entry] {
        assert!(
            path.is_file(),
            "the MCP conformance suite needs {} (Node 22 and @modelcontextprotocol/conformance from npm): run `cargo xtask setup`, which installs them into .ci/npm",
            path.display()
        );
    }
    (node, entry)
}

/// Runs one scenario of the suite (`arguments` name it) and checks its verdict: the
/// suite exits with success, and every check it wrote to `checks.json` passed
/// (`SUCCESS`, or `INFO` for what it only records); a warning or a failure fails the
/// test with the suite's output. Returns the results directory (the client's
/// `stderr.txt` is in it).
async fn run_scenario(arguments: &[&str]) -> tempfile::TempDir {
    let (node, entry) = suite();
    let results = tempfile::tempdir().expect("a temporary directory");
    let output = tokio::process::Command::new(node)
        .arg(entry)
        .args(arguments)
        .arg("--output-dir")
        .arg(results.path())
        .env("NO_COLOR", "1")
        .kill_on_drop(true)
        .output()
        .await
        .expect("the conformance suite starts");
    let report = || {
        format!(
            "conformance {arguments:?} failed ({}):\n{}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    };
    assert!(output.status.success(), "{}", report());
    let checks = checks(results.path());
    assert!(!checks.is_empty(), "no checks were written: {}", report());
    let passed = |id: &str, status: &str| {
        matches!(status, "SUCCESS" | "INFO")
            || (status == "WARNING" && NOT_APPLICABLE_WARNINGS.iter().any(|(w, _)| *w == id))
    };
    let bad: Vec<&(String, String)> = checks.iter().filter(|(i, s)| !passed(i, s)).collect();
    assert!(bad.is_empty(), "checks {bad:?} did not pass: {}", report());
    assert!(
        checks.iter().any(|(_, status)| status == "SUCCESS"),
        "no check succeeded: {}",
        report()
    );
    results
}

/// What the client wrote to stderr in the scenario whose results are in `directory`.
fn client_stderr(directory: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(directory).expect("the results directory") {
        let path = entry.expect("a result").path();
        if path.is_dir() {
            text.push_str(&client_stderr(&path));
        } else if path.file_name().is_some_and(|n| n == "stderr.txt") {
            text.push_str(&std::fs::read_to_string(&path).expect("stderr.txt is readable"));
        }
    }
    text
}

/// Every check (id, status) in the `checks.json` files below `directory`.
fn checks(directory: &Path) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(directory).expect("the results directory") {
        let path = entry.expect("a result").path();
        if path.is_dir() {
            found.extend(checks(&path));
        } else if path.file_name().is_some_and(|n| n == "checks.json") {
            let text = std::fs::read_to_string(&path).expect("checks.json is readable");
            let value: Value = serde_json::from_str(&text).expect("checks.json is JSON");
            for check in value.as_array().expect("checks.json is an array") {
                let field = |name: &str| check[name].as_str().unwrap_or_default().to_string();
                found.push((field("id"), field("status")));
            }
        }
    }
    found
}

fn project(root: &Path) {
    std::fs::write(root.join("notes.txt"), "hello from the tool root\n").expect("a file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brutes_server_passes_the_server_scenarios() {
    let root = tempfile::tempdir().expect("a temporary directory");
    project(root.path());
    let context = ToolContext::new(root.path()).expect("a tool root");
    let tools = ToolSetServer::new(Tools::READ_ONLY, context);
    let server = ContentServer::new(tools)
        .files(ToolContext::new(root.path()).expect("a tool root"))
        .expect("the root opens")
        .prompt(
            "reviewer",
            "A reviewer's system prompt.",
            "You review Rust code.",
        );
    let (url, _stop) = support::serve_http(server).await;
    for scenario in SERVER_SCENARIOS {
        run_scenario(&["server", "--url", &url, "--scenario", scenario]).await;
    }
}

#[tokio::test]
async fn brutes_client_passes_the_client_scenarios() {
    let client = env!("CARGO_BIN_EXE_brute-mcp-conformance-client");
    for scenario in CLIENT_SCENARIOS {
        run_scenario(&["client", "--command", client, "--scenario", scenario]).await;
    }
}

#[tokio::test]
async fn brutes_client_passes_the_oauth_scenarios() {
    let client = env!("CARGO_BIN_EXE_brute-mcp-conformance-client");
    for scenario in AUTH_SCENARIOS {
        let results = run_scenario(&["client", "--command", client, "--scenario", scenario]).await;
        if *scenario == "auth/scope-retry-limit" {
            // The suite lets the client fail here; it must fail with the refusal in
            // plain words, and never show the token it was refused (`test-token-...`).
            let stderr = client_stderr(results.path());
            assert!(
                stderr.contains("403 from http://localhost")
                    && stderr.contains("also after it authorized anew"),
                "the client did not stop with McpError::Refused: {stderr}"
            );
            assert!(
                !stderr.contains("test-token"),
                "a token was shown: {stderr}"
            );
        }
    }
}
