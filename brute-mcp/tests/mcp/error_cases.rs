//! MCP client tools against an rmcp server written here, for what a third-party
//! server does not do on demand: crash in the middle of a call, hang in a tool until
//! cancelled, answer with a malformed result, and change its tool list.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use brute::middleware::Loop;
use brute::providers::ScriptedModel;
use brute::tools::{DefaultToolPipeline, ToolSet};
use brute::{Message, ToolCall, brute_agent};
use brute_mcp::McpTools;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::Notify;

/// The in-test server: `add`, `slow` (waits until cancelled), `crash` (the server
/// stops answering: its task is aborted), `malformed` (see [`mangle`]) and `grow`
/// (adds `multiply` and says the list changed).
#[derive(Clone, Default)]
struct Lab {
    grown: Arc<AtomicBool>,
    slow_cancelled: Arc<AtomicBool>,
    crash: Arc<Notify>,
}

fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(object) => Arc::new(object),
        _ => unreachable!("schemas here are objects"),
    }
}

fn numbers() -> Arc<JsonObject> {
    schema(json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"]
    }))
}

fn number(args: &Option<JsonObject>, name: &str) -> i64 {
    args.as_ref()
        .and_then(|a| a.get(name))
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

impl ServerHandler for Lab {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let empty = schema(json!({"type": "object", "properties": {}}));
        let mut tools = vec![
            Tool::new("add", "Adds two integers.", numbers()),
            Tool::new("slow", "Never finishes by itself.", empty.clone()),
            Tool::new("crash", "Stops the server.", empty.clone()),
            Tool::new(
                "malformed",
                "Answers with a malformed result.",
                empty.clone(),
            ),
            Tool::new("grow", "Adds the tool `multiply`.", empty),
        ];
        if self.grown.load(Ordering::SeqCst) {
            tools.push(Tool::new("multiply", "Multiplies two integers.", numbers()));
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = &request.arguments;
        let text = match request.name.as_ref() {
            "add" => (number(args, "a") + number(args, "b")).to_string(),
            "multiply" => (number(args, "a") * number(args, "b")).to_string(),
            "slow" => {
                context.ct.cancelled().await;
                self.slow_cancelled.store(true, Ordering::SeqCst);
                "cancelled".to_string()
            }
            "crash" => {
                self.crash.notify_one();
                std::future::pending::<()>().await;
                unreachable!("the server is aborted first")
            }
            "malformed" => "MANGLE ME".to_string(),
            "grow" => {
                self.grown.store(true, Ordering::SeqCst);
                if let Err(error) = context.peer.notify_tool_list_changed().await {
                    return Err(ErrorData::internal_error(error.to_string(), None));
                }
                "grown".to_string()
            }
            other => return Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

/// Rewrites the server's result for `malformed` so that its `content` is a string,
/// not a list of content blocks: a reply no MCP client can read as a tool result.
fn mangle(line: &str) -> String {
    let Ok(mut message) = serde_json::from_str::<Value>(line) else {
        return line.to_string();
    };
    let is_target = message["result"]["content"][0]["text"] == "MANGLE ME";
    if is_target {
        message["result"]["content"] = json!("not a list of content blocks");
    }
    message.to_string()
}

/// Starts `lab` on an in-process pipe, with a proxy between it and the client that
/// applies [`mangle`] to every line the server writes; connects the client tools.
/// The server's task is aborted when `lab.crash` is notified.
async fn connect(lab: Lab) -> McpTools {
    let (client_io, proxy_client) = tokio::io::duplex(1 << 16);
    let (proxy_server, server_io) = tokio::io::duplex(1 << 16);
    let (from_client, to_client) = tokio::io::split(proxy_client);
    let (from_server, to_server) = tokio::io::split(proxy_server);
    // Client to server: as it is.
    tokio::spawn(async move {
        let (mut from_client, mut to_server) = (from_client, to_server);
        let _ = tokio::io::copy(&mut from_client, &mut to_server).await;
    });
    // Server to client: line by line, mangled.
    tokio::spawn(async move {
        let mut lines = BufReader::new(from_server).lines();
        let mut to_client = to_client;
        while let Ok(Some(line)) = lines.next_line().await {
            let out = mangle(&line) + "\n";
            if to_client.write_all(out.as_bytes()).await.is_err() {
                break;
            }
        }
        // The server is gone: the client reads the end of its stream.
        let _ = to_client.shutdown().await;
    });
    let crash = lab.crash.clone();
    let server = tokio::spawn(async move {
        let running = lab.serve(server_io).await.expect("the handshake succeeds");
        let _ = running.waiting().await;
    });
    tokio::spawn(async move {
        crash.notified().await;
        // A crash: the server's task dies with the call in flight, its pipe closes.
        server.abort();
    });
    McpTools::connect("lab", client_io)
        .await
        .expect("the client connects")
}

async fn call(tools: &McpTools, name: &str, arguments: Value) -> Result<String, String> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let cx = brute::tools::ToolContext::new(dir.path()).expect("a context");
    let call = ToolCall::new("c1", name, arguments);
    let prepared = match tools.prepare(&call) {
        Some(Ok(prepared)) => prepared,
        Some(Err(error)) => return Err(error.to_string()),
        None => return Err(format!("unknown tool {name}")),
    };
    brute::tools::PreparedCall::run(prepared, &cx)
        .await
        .map(|output| output.content)
        .map_err(|error| error.to_string())
}

#[tokio::test]
async fn a_server_crash_becomes_an_error_result_naming_the_server() {
    let tools = connect(Lab::default()).await;
    assert_eq!(
        call(&tools, "add", json!({"a": 2, "b": 3})).await,
        Ok("5".into())
    );
    let crashed = call(&tools, "crash", json!({})).await;
    let error = crashed.expect_err("a crashed server gives no result");
    assert!(error.contains("MCP server `lab`"), "{error}");
    // Later calls fail the same way, at once, instead of waiting for an answer.
    let after = call(&tools, "add", json!({"a": 1, "b": 1})).await;
    assert!(
        after
            .expect_err("the server is gone")
            .contains("MCP server `lab`")
    );
    assert!(tools.is_closed());
}

#[tokio::test]
async fn a_slow_tool_times_out_in_the_pipeline_and_is_cancelled_at_the_server() {
    let lab = Lab::default();
    let cancelled = lab.slow_cancelled.clone();
    let tools = connect(lab).await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let model = ScriptedModel::per_turn([
        Message::tool_calls("", vec![ToolCall::new("c1", "slow", json!({}))]),
        Message::tool_calls(
            "",
            vec![ToolCall::new("c2", "add", json!({"a": 20, "b": 22}))],
        ),
        Message::assistant("done"),
    ]);
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline {
            tools: tools.clone(),
            root: dir.path(),
            output_dir: dir.path(),
            timeout: Some(Duration::from_millis(200)),
        };
        run model;
    };
    let outcome = agent.start("Go.").await.expect("the turn runs");
    let messages = &outcome.env.messages;
    assert_eq!(
        messages[2].content,
        "Error: tool `slow`: timed out after 0.2s and was cancelled"
    );
    assert_eq!(messages[4].content, "42");
    // The server saw the cancellation (`notifications/cancelled`).
    let mut seen = false;
    // Generous: only a hang reaches it.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while tokio::time::Instant::now() < deadline {
        if cancelled.load(Ordering::SeqCst) {
            seen = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(seen, "the server never learned that the call was cancelled");
}

#[tokio::test]
async fn a_malformed_result_is_an_error_and_the_connection_survives_it() {
    let tools = connect(Lab::default()).await;
    let result = tokio::time::timeout(
        Duration::from_secs(30),
        call(&tools, "malformed", json!({})),
    )
    .await
    .expect("a malformed result does not leave the call waiting forever");
    let error = result.expect_err("a malformed result is not a result");
    assert_eq!(
        error,
        "MCP server `lab` answered `tools/call` with something that is not a tool result"
    );
    assert_eq!(
        call(&tools, "add", json!({"a": 2, "b": 2})).await,
        Ok("4".into())
    );
}

#[tokio::test]
async fn a_changed_tool_list_is_listed_again_and_advertised() {
    let tools = connect(Lab::default()).await;
    assert!(!tools.contains("multiply"));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let advertised = Arc::new(Mutex::new(Vec::<Vec<String>>::new()));
    let seen = advertised.clone();
    let model = ScriptedModel::from_fn(move |env| {
        let names = env.tools.iter().map(|t| t.name.clone()).collect();
        let mut seen = seen.lock().expect("not poisoned");
        seen.push(names);
        match seen.len() {
            1 => Message::tool_calls("", vec![ToolCall::new("c1", "grow", json!({}))]),
            2 => Message::assistant("grown"),
            3 => Message::tool_calls(
                "",
                vec![ToolCall::new("c2", "multiply", json!({"a": 6, "b": 7}))],
            ),
            _ => Message::assistant("done"),
        }
    });
    let agent = brute_agent! {
        use Loop::ToolResult;
        // Next to a static tool: the tuple's revision follows the MCP set's.
        use DefaultToolPipeline {
            tools: (brute::tools::Read, tools.clone()),
            root: dir.path(),
            output_dir: dir.path(),
        };
        run model;
    };
    let first = agent.start("Grow.").await.expect("the first turn runs");
    assert_eq!(first.env.messages[2].content, "grown");
    // The server's notification makes the client list the tools again, on a task of
    // its own: wait for the new list.
    let mut listed = false;
    // Generous: only a hang reaches it.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while tokio::time::Instant::now() < deadline {
        if tools.contains("multiply") {
            listed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(listed, "the tool list was not refreshed");
    assert_eq!(tools.revision(), 1);
    let second = agent
        .start("Multiply.")
        .await
        .expect("the second turn runs");
    assert_eq!(second.env.messages[2].content, "42");
    let advertised = advertised.lock().expect("not poisoned").clone();
    assert!(!advertised[0].contains(&"multiply".to_string()));
    assert!(advertised[0].contains(&"read".to_string()));
    assert!(advertised[2].contains(&"read".to_string()));
    assert!(
        advertised[2].contains(&"multiply".to_string()),
        "{:?}",
        advertised[2]
    );
}

#[tokio::test]
async fn a_server_that_cannot_start_or_does_not_speak_mcp_is_a_named_error() {
    let missing = tokio::process::Command::new("/nonexistent/mcp-server");
    let error = McpTools::stdio("ghost", missing)
        .await
        .expect_err("there is no such program");
    let message = error.to_string();
    assert!(
        message.starts_with("MCP server `ghost`: cannot start `/nonexistent/mcp-server`"),
        "{message}"
    );
    assert!(matches!(error, brute_mcp::McpError::Spawn { .. }));

    // A program that exits at once, without a word of MCP.
    let silent = tokio::process::Command::new("true");
    let error = McpTools::stdio("mute", silent)
        .await
        .expect_err("the handshake cannot succeed");
    assert!(
        matches!(error, brute_mcp::McpError::Initialize { .. }),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .starts_with("MCP server `mute`: the handshake failed"),
        "{error}"
    );
}
