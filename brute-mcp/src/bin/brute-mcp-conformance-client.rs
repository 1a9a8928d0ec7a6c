//! `brute-mcp-conformance-client URL`: brute-mcp's client as the official MCP
//! conformance suite (`@modelcontextprotocol/conformance`) drives it.
//!
//! The suite starts a server for one scenario, names the scenario in
//! `MCP_CONFORMANCE_SCENARIO` (and gives its data, such as pre-registered client
//! credentials, in `MCP_CONFORMANCE_CONTEXT`) and appends the server's URL to the
//! command. This program connects with [`McpTools`] (the handshake, then
//! `tools/list`; for `auth/*` scenarios with [`OAuth`], the authorization step
//! scripted: the authorization URL is fetched and its redirect followed as a browser
//! would), makes the calls the scenario expects, and closes the session. It exits non-zero, with the
//! error on stderr, when any step fails. `tests/mcp_services/conformance.rs` runs it.

use std::process::ExitCode;

use brute::ToolCall;
use brute::tools::{PreparedCall, ToolContext, ToolSet};
use brute_mcp::{HttpServer, IdentityProvider, McpTools, OAuth};
use serde_json::{Value, json};

/// The calls a scenario expects of a client once it is connected: tool and arguments.
fn calls(scenario: &str) -> Vec<(&'static str, Value)> {
    match scenario {
        "tools_call" => vec![("add_numbers", json!({"a": 5, "b": 3}))],
        "sse-retry" => vec![("test_reconnection", json!({}))],
        // The server asks for more scopes on `tools/call` than on `tools/list`.
        "auth/scope-step-up" => vec![("test-tool", json!({}))],
        _ => Vec::new(),
    }
}

/// Where the authorization server is told to redirect: nothing listens there, the
/// script reads the redirect instead.
const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// The client ID metadata document the suite's authorization server knows.
const METADATA_DOCUMENT: &str = "https://conformance-test.local/client-metadata.json";

/// Fetches the authorization URL as a browser would, without following the redirect,
/// and returns where it points (the redirect URI with `code` and `state`).
async fn follow_authorization(url: String) -> Result<String, String> {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())?;
    let response = client.get(&url).send().await.map_err(|e| e.to_string())?;
    let location = response
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|l| l.to_str().ok())
        .ok_or_else(|| format!("{url} answered {} without a redirect", response.status()))?;
    Ok(location.to_string())
}

/// The OAuth settings of an `auth/*` scenario, from its context.
fn oauth(scenario: &str) -> Result<Option<OAuth>, String> {
    if !scenario.starts_with("auth/") {
        return Ok(None);
    }
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or_default();
    let field = |name: &str| context[name].as_str().map(str::to_string);
    let needed =
        |name: &str| field(name).ok_or_else(|| format!("the scenario's context has no `{name}`"));
    match scenario {
        "auth/client-credentials-basic" => {
            return Ok(Some(OAuth::client_credentials(
                needed("client_id")?,
                needed("client_secret")?,
            )));
        }
        "auth/client-credentials-jwt" => {
            let oauth = OAuth::private_key_jwt(needed("client_id")?, &needed("private_key_pem")?)
                .map_err(|e| e.to_string())?;
            return Ok(Some(oauth));
        }
        "auth/cross-app-access-complete-flow" => {
            let idp = IdentityProvider::new(
                needed("idp_issuer")?,
                needed("idp_token_endpoint")?,
                needed("idp_client_id")?,
            );
            return Ok(Some(OAuth::cross_app_access(
                idp,
                needed("idp_id_token")?,
                needed("client_id")?,
                needed("client_secret")?,
            )));
        }
        _ => {}
    }
    let flow = OAuth::authorization_code(REDIRECT_URI, follow_authorization);
    Ok(Some(match field("client_id") {
        Some(id) => flow.registered(id, field("client_secret")),
        None => flow.metadata_document(METADATA_DOCUMENT),
    }))
}

async fn run(url: String, scenario: &str) -> Result<(), String> {
    let mut server = HttpServer::new(url);
    if let Some(oauth) = oauth(scenario)? {
        server = server.oauth(oauth);
    }
    let tools = McpTools::http_with("conformance", server)
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
