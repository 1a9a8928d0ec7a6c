//! A brute agent as an MCP server: one tool that runs a turn.

use std::sync::Arc;

use brute::{Agent, Env, Handler};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};

use super::tools::{mcp_result, mcp_tool};

/// Serves a brute [`Agent`] to any MCP client as one tool (default name `ask`) whose
/// argument `prompt` starts a turn; the result is the turn's final text.
///
/// A turn that fails (a model error, a guard that stopped it) is a result with
/// `isError` and `the turn failed (KIND): MESSAGE`, the error's stable kind and a
/// message that names nothing of the server ([`brute::Error::client_kind`],
/// [`brute::Error::client_message`]: never the model's address or endpoint, a path, or
/// a layer's own message); the whole error goes to the server's log (`tracing`, level
/// `error`). A client that cancels the request drops the
/// turn, which cancels its running tool calls. Clones share the agent; concurrent
/// calls run concurrent turns, as [`Agent::start`] allows.
///
/// ```no_run
/// use brute::{brute_agent, providers::ScriptedModel, Message};
/// use brute_mcp::AgentServer;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let model = ScriptedModel::new([Message::assistant("Hello!")]);
/// let agent = brute_agent! { run model; };
/// let server = AgentServer::new(agent).tool("greet", "Greets whoever asks.");
/// brute_mcp::serve_stdio(server).await?;
/// # Ok(()) }
/// ```
pub struct AgentServer<S> {
    agent: Arc<Agent<S>>,
    tool: String,
    description: String,
    info: Implementation,
}

impl<S> Clone for AgentServer<S> {
    fn clone(&self) -> Self {
        Self {
            agent: self.agent.clone(),
            tool: self.tool.clone(),
            description: self.description.clone(),
            info: self.info.clone(),
        }
    }
}

impl<S: Handler<Env> + 'static> AgentServer<S> {
    /// Serves `agent` as the tool `ask`.
    pub fn new(agent: Agent<S>) -> Self {
        Self {
            agent: Arc::new(agent),
            tool: "ask".to_string(),
            description: "Asks the agent: runs one turn with the prompt and returns its answer."
                .to_string(),
            info: Implementation::new("brute-agent", env!("CARGO_PKG_VERSION")),
        }
    }

    /// The tool's name and description, as the client's model sees them.
    pub fn tool(mut self, name: impl Into<String>, description: impl Into<String>) -> Self {
        self.tool = name.into();
        self.description = description.into();
        self
    }

    /// The name the server gives itself in the MCP handshake (default `brute-agent`).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.info = Implementation::new(name.into(), env!("CARGO_PKG_VERSION"));
        self
    }

    fn spec(&self) -> brute::model::ToolSpec {
        brute::model::ToolSpec::new(
            self.tool.as_str(),
            self.description.as_str(),
            json!({
                "type": "object",
                "properties": {
                    "prompt": {"type": "string", "description": "What to ask the agent."}
                },
                "required": ["prompt"]
            }),
        )
    }

    /// Runs one turn. A failed one is its stable kind and a message that names nothing
    /// of the server ([`brute::Error::client_message`]: no model address, endpoint,
    /// path or layer message); the whole error goes to the server's log.
    async fn turn(&self, prompt: String) -> Result<String, String> {
        match self.agent.start(prompt).await {
            Ok(outcome) => Ok(outcome.text().unwrap_or_default().to_string()),
            Err(error) => {
                let kind = error.client_kind();
                tracing::error!(
                    tool = %self.tool,
                    kind,
                    "brute-mcp: the turn of tool `{}` failed: {error}",
                    self.tool
                );
                Err(format!(
                    "the turn failed ({kind}): {}",
                    error.client_message()
                ))
            }
        }
    }
}

impl<S: Handler<Env> + 'static> ServerHandler for AgentServer<S> {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(self.info.clone())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![mcp_tool(
            &self.spec(),
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != self.tool {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool `{}`; available tools: {}",
                    brute::tools::quoted(&request.name),
                    self.tool
                ),
                None,
            ));
        }
        // Bad arguments are a result the model can read and correct (`isError`), as
        // the MCP specification asks; a JSON-RPC error is for the protocol.
        let prompt = match request.arguments.as_ref().and_then(|a| a.get("prompt")) {
            Some(Value::String(prompt)) => prompt.clone(),
            _ => {
                return Ok(mcp_result(Err(format!(
                    "tool `{}`: argument `prompt`: a string is required",
                    self.tool
                )))
                .into());
            }
        };
        tokio::select! {
            result = self.turn(prompt) => Ok(mcp_result(result).into()),
            () = context.ct.cancelled() => Err(ErrorData::internal_error(
                format!("tool `{}`: the turn was cancelled", self.tool),
                None,
            )),
        }
    }
}
