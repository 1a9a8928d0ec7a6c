//! A brute tool set as an MCP server.

use std::sync::Arc;
use std::time::Duration;

use brute::ToolCall;
use brute::message::{Part, Source};
use brute::model::ToolSpec;
use brute::tools::{PreparedCall, ToolContext, ToolOutput, ToolSet};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, Resource, ResourceContents,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::Value;

/// Serves the tools of a brute [`ToolSet`] to any MCP client: `tools/list` gives their
/// specs, `tools/call` runs them.
///
/// Each call runs in the given [`ToolContext`] (the root directory filesystem tools
/// are confined to, the network policy, the secrets replaced by placeholders in every
/// result), under a timeout (default 10 minutes), and is dropped when the client
/// cancels the request. A result's images are `image` blocks and its documents
/// embedded `resource` blobs, after its text. A failed call is a result with `isError` and the message
/// the model would see in brute; a call of an unknown tool is an `invalid params`
/// error. Approval and truncation are the client's to decide: there is no model
/// here.
///
/// Serve it with [`serve_stdio`](crate::serve_stdio) or
/// [`serve_http`](crate::serve_http); clones share the tools and the context.
///
/// ```no_run
/// use brute::tools::{ToolContext, Tools};
/// use brute_mcp::ToolSetServer;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let server = ToolSetServer::new(Tools::READ_ONLY, ToolContext::new(".")?);
/// brute_mcp::serve_stdio(server).await?;
/// # Ok(()) }
/// ```
pub struct ToolSetServer<T> {
    tools: Arc<T>,
    context: Arc<ToolContext>,
    timeout: Option<Duration>,
    info: Implementation,
}

impl<T> Clone for ToolSetServer<T> {
    fn clone(&self) -> Self {
        Self {
            tools: self.tools.clone(),
            context: self.context.clone(),
            timeout: self.timeout,
            info: self.info.clone(),
        }
    }
}

impl<T: ToolSet> ToolSetServer<T> {
    /// Serves `tools`, run in `context`.
    pub fn new(tools: T, context: ToolContext) -> Self {
        Self {
            tools: Arc::new(tools),
            context: Arc::new(context),
            timeout: Some(Duration::from_secs(600)),
            info: Implementation::new("brute-tools", env!("CARGO_PKG_VERSION")),
        }
    }

    /// How long one call may take before it is cancelled (default 10 minutes); `None`
    /// for no limit.
    pub fn timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.timeout = timeout.into();
        self
    }

    /// The name the server gives itself in the MCP handshake (default `brute-tools`).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.info = Implementation::new(name.into(), env!("CARGO_PKG_VERSION"));
        self
    }

    /// Runs one call: the result (its text redacted), or the error text.
    async fn run(&self, call: &ToolCall) -> Result<Result<ToolOutput, String>, ErrorData> {
        let prepared = match self.tools.prepare(call) {
            None => {
                let mut names = Vec::new();
                self.tools.names(&mut names);
                return Err(ErrorData::invalid_params(
                    format!(
                        "unknown tool `{}`; available tools: {}",
                        brute::tools::quoted(&call.name),
                        names.join(", ")
                    ),
                    None,
                ));
            }
            Some(Err(error)) => return Ok(Err(error.to_string())),
            Some(Ok(prepared)) => prepared,
        };
        let run = prepared.run(&self.context);
        let output = match self.timeout {
            Some(limit) => match tokio::time::timeout(limit, run).await {
                Ok(output) => output,
                Err(_elapsed) => Err(brute::tools::ToolError::Timeout(limit)),
            },
            None => run.await,
        };
        Ok(output
            .map(|o| ToolOutput {
                content: self.context.redact(&o.content),
                parts: o.parts,
            })
            .map_err(|e| self.context.redact(&e.to_string())))
    }
}

/// A brute tool spec as an MCP tool.
pub(crate) fn mcp_tool(spec: &ToolSpec) -> Tool {
    let schema: JsonObject = match &*spec.parameters {
        Value::Object(object) => object.clone(),
        _ => JsonObject::new(),
    };
    Tool::new(
        spec.name.clone(),
        spec.description.clone(),
        Arc::new(schema),
    )
}

/// The text of a call as an MCP result.
pub(crate) fn mcp_result(result: Result<String, String>) -> CallToolResult {
    match result {
        Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Err(text) => CallToolResult::error(vec![ContentBlock::text(text)]),
    }
}

/// A call's result as an MCP result: its text as a text block (left out when empty
/// and there are parts), then each image as an `image` block and each document as an
/// embedded `resource` blob (a part given by URL as a `resource_link`); an error as an
/// `isError` result of its text.
pub(crate) fn mcp_output(result: Result<ToolOutput, String>) -> CallToolResult {
    let output = match result {
        Ok(output) => output,
        Err(text) => return mcp_result(Err(text)),
    };
    let mut blocks = Vec::with_capacity(1 + output.parts.len());
    if !output.content.is_empty() || output.parts.is_empty() {
        blocks.push(ContentBlock::text(output.content));
    }
    for (index, part) in output.parts.iter().enumerate() {
        blocks.push(part_block(part, index));
    }
    CallToolResult::success(blocks)
}

/// One image or document as a content block. A document's URI is its URL, or
/// `attachment:` and its title (or `document-N`, N counting the result's parts from
/// 1) when it is given by its bytes.
fn part_block(part: &Part, index: usize) -> ContentBlock {
    let title = match part {
        Part::Document {
            title: Some(title), ..
        } => title.clone(),
        Part::Document { .. } => format!("document-{}", index + 1),
        Part::Image(_) => format!("image-{}", index + 1),
    };
    match (part, part.source()) {
        (Part::Image(_), Source::Data(data)) => {
            ContentBlock::image(data.base64(), data.media_type())
        }
        (Part::Document { .. }, Source::Data(data)) => ContentBlock::resource(
            ResourceContents::blob(data.base64(), format!("attachment:{title}"))
                .with_mime_type(data.media_type()),
        ),
        (_, Source::Url(url)) => ContentBlock::resource_link(Resource::new(url.clone(), title)),
    }
}

impl<T: ToolSet + 'static> ServerHandler for ToolSetServer<T> {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(self.info.clone())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut specs = Vec::new();
        self.tools.specs(&mut specs);
        Ok(ListToolsResult::with_all_items(
            specs.iter().map(mcp_tool).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let call = ToolCall::new(context.id.to_string(), request.name.to_string(), arguments);
        tokio::select! {
            result = self.run(&call) => Ok(mcp_output(result?).into()),
            () = context.ct.cancelled() => Err(ErrorData::internal_error(
                format!("the call of `{}` was cancelled", brute::tools::quoted(&call.name)),
                None,
            )),
        }
    }
}
