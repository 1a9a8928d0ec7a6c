//! brute as an MCP server, tested with rmcp's own client: a tool set over stdio (the
//! `brute-mcp-tools` binary) and streamable HTTP, an agent over streamable HTTP, and
//! brute's client tools calling a brute agent served over MCP.

use crate::support;

use std::time::Duration;

use brute::middleware::Loop;
use brute::providers::ScriptedModel;
use brute::tools::{DefaultToolPipeline, ToolContext, ToolError, Tools};
use brute::{Message, ToolCall, brute_agent, tool};
use brute_mcp::{AgentServer, McpTools, ToolSetServer};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::{Value, json};

type Client = RunningService<RoleClient, ()>;

fn args(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        _ => JsonObject::new(),
    }
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

async fn call(client: &Client, name: &str, arguments: Value) -> CallToolResult {
    let params = CallToolRequestParams::new(name.to_string()).with_arguments(args(arguments));
    client
        .call_tool(params)
        .await
        .expect("the request is answered")
}

#[tokio::test]
async fn a_tool_set_over_stdio_answers_rmcps_client() {
    let root = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(root.path().join("notes.txt"), "hello\n").expect("a file");
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_brute-mcp-tools"));
    command.arg(root.path());
    let transport = TokioChildProcess::new(command).expect("the server starts");
    let client: Client = ().serve(transport).await.expect("the handshake succeeds");
    let info = client.peer_info().expect("the server introduced itself");
    let name = info.server_info.as_ref().map(|i| i.name.as_str());
    assert_eq!(name, Some("brute-mcp-tools"));
    let tools = client.list_all_tools().await.expect("the tools are listed");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["read", "fs_search"]);
    let read = tools
        .iter()
        .find(|t| t.name == "read")
        .expect("read is listed");
    assert_eq!(read.input_schema["required"], json!(["file_path"]));

    let result = call(&client, "read", json!({"file_path": "notes.txt"})).await;
    assert_eq!(result.is_error, Some(false));
    assert_eq!(text(&result), "1\thello");
    // Confinement holds for MCP clients as for models.
    let escape = call(&client, "read", json!({"file_path": "../../etc/passwd"})).await;
    assert_eq!(escape.is_error, Some(true));
    assert!(text(&escape).contains("outside"), "{}", text(&escape));
    let bad = call(&client, "read", json!({"file_path": 7})).await;
    assert_eq!(bad.is_error, Some(true));
    assert!(text(&bad).contains("file_path"), "{}", text(&bad));
    let params = CallToolRequestParams::new("shell").with_arguments(JsonObject::new());
    let unknown = client.call_tool(params).await.expect_err("no such tool");
    assert!(
        unknown.to_string().contains("unknown tool `shell`"),
        "{unknown}"
    );
    client.cancel().await.expect("the client closes");
}

/// Tells a secret (to check that results are redacted).
#[tool]
async fn tell_secret(_cx: &ToolContext) -> Result<String, ToolError> {
    Ok("the key is sk-brute-0123456789".to_string())
}

/// Waits far longer than the server's timeout.
#[tool]
async fn sleepy(_cx: &ToolContext) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_secs(300)).await;
    Ok("woke".to_string())
}

#[tokio::test]
async fn a_tool_set_over_streamable_http_redacts_and_times_out() {
    let root = tempfile::tempdir().expect("a temporary directory");
    let secrets = brute::tools::Secrets::default().with(["sk-brute-0123456789"]);
    let context = ToolContext::new(root.path())
        .expect("a context")
        .with_secrets(secrets);
    let server =
        ToolSetServer::new((TellSecret, Sleepy), context).timeout(Duration::from_millis(200));
    let (url, _stop) = support::serve_http(server).await;
    let client: Client = {
        brute_mcp::ensure_crypto_provider();
        ().serve(StreamableHttpClientTransport::from_uri(url))
    }
    .await
    .expect("the handshake succeeds");
    let told = call(&client, "tell_secret", json!({})).await;
    assert_eq!(told.is_error, Some(false));
    assert!(
        !text(&told).contains("sk-brute-0123456789"),
        "{}",
        text(&told)
    );
    let slept = call(&client, "sleepy", json!({})).await;
    assert_eq!(slept.is_error, Some(true));
    assert_eq!(text(&slept), "timed out after 0.2s and was cancelled");
    client.cancel().await.expect("the client closes");
}

/// Adds two numbers (a tool of the served agent).
#[tool]
async fn add(a: i64, b: i64, _cx: &ToolContext) -> Result<String, ToolError> {
    Ok((a + b).to_string())
}

fn adding_agent() -> AgentServer<impl brute::Handler<brute::Env> + 'static> {
    let dir = std::env::temp_dir();
    let model = ScriptedModel::from_fn(|env| match env.messages.last() {
        Some(last) if last.role == brute::Role::Tool => {
            Message::assistant(format!("The sum is {}.", last.content))
        }
        _ => Message::tool_calls(
            "",
            vec![ToolCall::new("c1", "add", json!({"a": 19, "b": 23}))],
        ),
    });
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: (Add,), root: dir.clone(), output_dir: dir };
        run model;
    };
    AgentServer::new(agent).tool("ask_adder", "Asks an agent that adds numbers.")
}

#[tokio::test]
async fn an_agent_over_streamable_http_runs_a_turn_per_call() {
    let (url, _stop) = support::serve_http(adding_agent()).await;
    let client: Client = {
        brute_mcp::ensure_crypto_provider();
        ().serve(StreamableHttpClientTransport::from_uri(url))
    }
    .await
    .expect("the handshake succeeds");
    let tools = client.list_all_tools().await.expect("the tools are listed");
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, "ask_adder");
    assert_eq!(tools[0].input_schema["required"], json!(["prompt"]));
    let answer = call(&client, "ask_adder", json!({"prompt": "19 + 23?"})).await;
    assert_eq!(answer.is_error, Some(false));
    assert_eq!(text(&answer), "The sum is 42.");
    let params = CallToolRequestParams::new("ask_adder").with_arguments(JsonObject::new());
    // A missing argument is a result the model can correct, not a protocol error.
    let missing = client
        .call_tool(params)
        .await
        .expect("a bad argument is answered with a result");
    assert_eq!(missing.is_error, Some(true));
    assert!(
        text(&missing).contains("argument `prompt`"),
        "{}",
        text(&missing)
    );
    client.cancel().await.expect("the client closes");
}

#[tokio::test]
async fn a_brute_agent_uses_another_brute_agent_over_mcp() {
    let (url, _stop) = support::serve_http(adding_agent()).await;
    let remote = McpTools::http("adder", url)
        .await
        .expect("the client connects");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let model = ScriptedModel::per_turn([
        Message::tool_calls(
            "",
            vec![ToolCall::new(
                "c1",
                "ask_adder",
                json!({"prompt": "19 + 23?"}),
            )],
        ),
        Message::assistant("done"),
    ]);
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: (Tools::READ_ONLY, remote), root: dir.path(), output_dir: dir.path() };
        run model;
    };
    let outcome = agent.start("Ask the adder.").await.expect("the turn runs");
    assert_eq!(outcome.env.messages[2].content, "The sum is 42.");
}
