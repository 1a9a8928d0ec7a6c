//! MCP client tools against a real third-party server, `@modelcontextprotocol/server-everything`
//! (installed by `cargo xtask test`): listed, called through the agent's tool pipeline next to a
//! static tool, over stdio and streamable HTTP; the stdio server's process group is
//! killed when the tools are dropped.

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use brute::middleware::Loop;
use brute::providers::ScriptedModel;
use brute::tools::{Approval, DefaultToolPipeline, ToolContext, ToolError, ToolSet};
use brute::{EventKind, Message, ToolCall, brute_agent, tool};
use brute_mcp::McpTools;
use serde_json::json;

/// Shouts a text (a static tool next to the MCP server's).
#[tool]
async fn shout(
    /// The text.
    text: String,
    _cx: &ToolContext,
) -> Result<String, ToolError> {
    Ok(text.to_uppercase())
}

async fn everything() -> McpTools {
    match McpTools::stdio("everything", support::everything_command("stdio")).await {
        Ok(tools) => tools,
        Err(error) => panic!("{error}"),
    }
}

#[tokio::test]
async fn lists_the_servers_tools_with_their_schemas() {
    let tools = everything().await;
    let mut names = Vec::new();
    tools.names(&mut names);
    assert!(names.contains(&"echo"), "{names:?}");
    assert!(names.contains(&"get-sum"), "{names:?}");
    let mut specs = Vec::new();
    tools.specs(&mut specs);
    let sum = specs
        .iter()
        .find(|s| s.name == "get-sum")
        .expect("get-sum is listed");
    assert_eq!(sum.description, "Returns the sum of two numbers");
    assert_eq!(sum.parameters["properties"]["a"]["type"], "number");
    assert!(tools.contains("echo"));
    assert!(!tools.contains("shout"));
}

#[tokio::test]
async fn the_model_calls_server_tools_through_the_pipeline_next_to_static_tools() {
    let tools = everything().await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let model = ScriptedModel::per_turn([
        Message::tool_calls(
            "",
            vec![
                ToolCall::new("c1", "echo", json!({"message": "hello from brute"})),
                ToolCall::new("c2", "get-sum", json!({"a": 2, "b": 40})),
                ToolCall::new("c3", "shout", json!({"text": "static"})),
                ToolCall::new("c4", "get-sum", json!({"a": "two", "b": 1})),
                ToolCall::new("c5", "echo", json!({"message": "the password is hunter2"})),
            ],
        ),
        Message::assistant("done"),
    ]);
    let mut agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline {
            tools: (Shout, tools.clone()),
            root: dir.path(),
            output_dir: dir.path(),
            redact: ["hunter2"],
        };
        run model;
    };
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    agent.on(EventKind::ToolResult, move |_env, event| {
        if let brute::Event::ToolResult { call, is_error, .. } = event {
            seen.lock()
                .expect("not poisoned")
                .push((call.name.clone(), *is_error));
        }
    });
    let outcome = agent.start("Use the tools.").await.expect("the turn runs");
    let results: Vec<&str> = outcome.env.messages[2..7]
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(results[0], "Echo: hello from brute");
    assert!(results[1].contains("42"), "{}", results[1]);
    assert_eq!(results[2], "STATIC");
    // Checked before the call: the server never sees it.
    assert_eq!(
        results[3],
        "Error: tool `get-sum`: invalid arguments: argument `a`: expected number, got a string"
    );
    // Redaction applies to MCP results as to native ones.
    assert!(!results[4].contains("hunter2"), "{}", results[4]);
    assert!(
        results[4].starts_with("Echo: the password is "),
        "{}",
        results[4]
    );
    // The advertised tools: the static one and the server's.
    assert!(outcome.env.tools.iter().any(|t| t.name == "shout"));
    assert!(outcome.env.tools.iter().any(|t| t.name == "get-sum"));
    let events = events.lock().expect("not poisoned").clone();
    assert_eq!(events.len(), 5);
    assert_eq!(events[3], ("get-sum".to_string(), true));
    assert_eq!(events[0], ("echo".to_string(), false));
}

#[tokio::test]
async fn approval_and_timeouts_apply_to_server_tools() {
    let tools = everything().await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let model = ScriptedModel::per_turn([
        Message::tool_calls(
            "",
            vec![
                ToolCall::new("c1", "echo", json!({"message": "denied"})),
                ToolCall::new(
                    "c2",
                    "trigger-long-running-operation",
                    json!({"duration": 30, "steps": 3}),
                ),
            ],
        ),
        Message::tool_calls(
            "",
            vec![ToolCall::new("c3", "get-sum", json!({"a": 1, "b": 1}))],
        ),
        Message::assistant("done"),
    ]);
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline {
            tools: tools.clone(),
            root: dir.path(),
            output_dir: dir.path(),
            approval: Approval::deny(["echo"]),
            timeouts: [("trigger-long-running-operation", Duration::from_millis(300))],
        };
        run model;
    };
    let outcome = agent.start("Go.").await.expect("the turn runs");
    let messages = &outcome.env.messages;
    assert!(
        messages[2]
            .content
            .starts_with("Error: tool `echo`: the call was denied"),
        "{}",
        messages[2].content
    );
    assert!(
        messages[3]
            .content
            .starts_with("Error: tool `trigger-long-running-operation`: timed out after 0.3s"),
        "{}",
        messages[3].content
    );
    // The timed-out call was cancelled; the connection still serves the next one.
    assert!(messages[5].content.contains('2'), "{}", messages[5].content);
    assert_eq!(outcome.text(), Some("done"));
}

#[tokio::test]
async fn dropping_the_tools_kills_the_servers_process_group() {
    // A shell that starts a grandchild, then becomes the server: both in one group.
    let server = support::everything_server();
    let mut command = tokio::process::Command::new("sh");
    command.arg("-c").arg(format!(
        "sleep 300 & exec node '{}' stdio",
        server.display()
    ));
    let tools = McpTools::stdio("everything", command)
        .await
        .expect("the server starts");
    let group = tools
        .process_group()
        .expect("a stdio server has a process group");
    let pgid = nix::unistd::Pid::from_raw(i32::try_from(group).expect("a pid"));
    assert!(
        nix::sys::signal::killpg(pgid, None).is_ok(),
        "the group is alive"
    );
    let clone = tools.clone();
    drop(tools);
    assert!(
        nix::sys::signal::killpg(pgid, None).is_ok(),
        "a clone keeps it alive"
    );
    drop(clone);
    // SIGKILL is delivered at once; the processes are reaped (by us or by init)
    // shortly after. Wait for that without asserting how long it takes.
    // Generous: a loaded machine may take seconds to reap; only a leak reaches it.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let mut gone = false;
    while std::time::Instant::now() < deadline {
        if nix::sys::signal::killpg(pgid, None) == Err(nix::errno::Errno::ESRCH) {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(gone, "the process group {group} outlived its tools");
}

#[tokio::test]
async fn streamable_http_reaches_the_same_server() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        listener.local_addr().expect("an address").port()
    };
    let mut command = support::everything_command("streamableHttp");
    command.env("PORT", port.to_string()).kill_on_drop(true);
    let _server = command.spawn().expect("node starts");
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut connected = None;
    let mut last_error = None;
    // Node starts the server in a second when idle, far more under load: the limit only
    // catches a server that never listens.
    let deadline = std::time::Instant::now() + Duration::from_secs(180);
    while std::time::Instant::now() < deadline {
        match McpTools::http("everything-http", url.as_str()).await {
            Ok(tools) => {
                connected = Some(tools);
                break;
            }
            Err(error) => last_error = Some(error.to_string()),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let tools = connected.unwrap_or_else(|| panic!("no connection to {url}: {last_error:?}"));
    assert!(tools.contains("echo"));
    let call = ToolCall::new("c1", "echo", json!({"message": "over HTTP"}));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let cx = ToolContext::new(dir.path()).expect("a context");
    let prepared = tools
        .prepare(&call)
        .expect("echo is known")
        .expect("valid arguments");
    let output = brute::tools::PreparedCall::run(prepared, &cx)
        .await
        .expect("the call succeeds");
    assert_eq!(output.content, "Echo: over HTTP");
}

#[tokio::test]
async fn a_server_killed_mid_call_gives_an_error_result() {
    let tools = everything().await;
    let group = tools
        .process_group()
        .expect("a stdio server has a process group");
    let pgid = nix::unistd::Pid::from_raw(i32::try_from(group).expect("a pid"));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let cx = ToolContext::new(dir.path()).expect("a context");
    let call = ToolCall::new(
        "c1",
        "trigger-long-running-operation",
        json!({"duration": 60, "steps": 2}),
    );
    let prepared = tools
        .prepare(&call)
        .expect("the tool is listed")
        .expect("valid arguments");
    let running = tokio::spawn(async move { brute::tools::PreparedCall::run(prepared, &cx).await });
    // Most often the request has reached the server by the time it is killed; on a
    // loaded machine it may not have, and the call fails the same way (the transport
    // closed: "the call was not made or its result was lost"). Nothing depends on it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL).expect("the group is killed");
    let result = running.await.expect("the call's task ends");
    let error = result
        .expect_err("a killed server gives no result")
        .to_string();
    assert!(
        error.contains("MCP server `everything` is not running"),
        "{error}"
    );
    assert!(tools.is_closed());
}
