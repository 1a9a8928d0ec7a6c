//! [`ContentServer`]: an MCP server (a tool set, an agent) that also offers the files
//! beneath a tool root as resources and named prompts.

use std::sync::Arc;

use brute::Env;
use brute::middleware::Prompt;
use brute::tools::ToolContext;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Cursor, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, ListPromptsResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, PromptMessage, PromptsCapability, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, ResourcesCapability, Role, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};

use super::files::{Files, PAGE};
use crate::error::McpError;

/// One prompt the server offers: its name, what it is for, and its text.
#[derive(Clone)]
struct Named {
    name: String,
    description: String,
    prompt: Prompt,
}

/// Wraps an MCP server (a [`ToolSetServer`](crate::ToolSetServer), an
/// [`AgentServer`](crate::AgentServer)) and offers, beside its tools:
///
/// - **resources**: the files beneath a tool root ([`files`](Self::files)), listed
///   with `resources/list` (hidden entries left out) and read with `resources/read`.
///   A resource's URI is `root:///` and the file's path relative to the root
///   (`root:///src/main.rs`). Reads are confined as brute's file tools are: a path
///   that leaves the root (`..`, a symbolic link to outside) is refused, every open
///   resolves beneath the root's directory handle, text has the context's secrets
///   redacted, and a file over 8 MiB is refused.
/// - **prompts**: named texts ([`prompt`](Self::prompt)), such as an agent's system
///   prompt, each returned by `prompts/get` as one user message (MCP prompts carry
///   user and assistant messages only). A [`Prompt::build`] prompt is rendered
///   afresh for every request, from an empty [`Env`].
///
/// Tools are the wrapped server's; so are its name and instructions.
///
/// ```no_run
/// use brute::tools::{ToolContext, Tools};
/// use brute_mcp::{ContentServer, ToolSetServer};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let tools = ToolSetServer::new(Tools::READ_ONLY, ToolContext::new("/path/to/project")?);
/// let server = ContentServer::new(tools)
///     .files(ToolContext::new("/path/to/project")?)?
///     .prompt("reviewer", "The code reviewer's system prompt.", "You review Rust code.");
/// brute_mcp::serve_stdio(server).await?;
/// # Ok(()) }
/// ```
pub struct ContentServer<H> {
    server: H,
    files: Option<Arc<Files>>,
    prompts: Arc<Vec<Named>>,
}

impl<H: Clone> Clone for ContentServer<H> {
    fn clone(&self) -> Self {
        Self {
            server: self.server.clone(),
            files: self.files.clone(),
            prompts: self.prompts.clone(),
        }
    }
}

impl<H: ServerHandler> ContentServer<H> {
    /// `server`, offering no resources or prompts yet.
    pub fn new(server: H) -> Self {
        Self {
            server,
            files: None,
            prompts: Arc::new(Vec::new()),
        }
    }

    /// Offers the files beneath `context`'s root as resources. Fails when the root
    /// cannot be opened.
    pub fn files(mut self, context: ToolContext) -> Result<Self, McpError> {
        let files = Files::new(Arc::new(context)).map_err(|e| McpError::Serve {
            transport: "resources".to_string(),
            problem: format!("cannot open the tool root: {e}"),
        })?;
        self.files = Some(Arc::new(files));
        Ok(self)
    }

    /// Offers `prompt` (text, or [`Prompt::build`]) as the prompt `name`; a prompt of
    /// the same name is replaced.
    pub fn prompt(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        prompt: impl Into<Prompt>,
    ) -> Self {
        let named = Named {
            name: name.into(),
            description: description.into(),
            prompt: prompt.into(),
        };
        let prompts = Arc::make_mut(&mut self.prompts);
        prompts.retain(|p| p.name != named.name);
        prompts.push(named);
        self
    }

    /// The files, or the error for a server that offers none.
    fn files_or_error(&self) -> Result<Arc<Files>, ErrorData> {
        self.files
            .clone()
            .ok_or_else(ErrorData::method_not_found::<rmcp::model::ListResourcesRequestMethod>)
    }
}

/// Where a page of `total` items starts: 0 without a cursor, else the cursor's number.
fn page_start(request: Option<&PaginatedRequestParams>, total: usize) -> Result<usize, ErrorData> {
    let Some(cursor) = request.and_then(|r| r.cursor.as_ref()) else {
        return Ok(0);
    };
    cursor
        .parse::<usize>()
        .ok()
        .filter(|&start| start <= total)
        .ok_or_else(|| ErrorData::invalid_params("the cursor is not one this server gave", None))
}

impl<H: ServerHandler + Clone> ServerHandler for ContentServer<H> {
    fn get_info(&self) -> ServerConfig {
        let mut info = self.server.get_info();
        if self.files.is_some() {
            info.capabilities.resources = Some(ResourcesCapability::default());
        }
        if !self.prompts.is_empty() {
            info.capabilities.prompts = Some(PromptsCapability::default());
        }
        info
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.server.list_tools(request, context).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.server.call_tool(request, context).await
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.server.get_tool(name)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let files = self.files_or_error()?;
        // The walk reads the disk: off the async threads.
        let all = tokio::task::spawn_blocking(move || files.list())
            .await
            .map_err(|_| ErrorData::internal_error("listing the files failed", None))?;
        let start = page_start(request.as_ref(), all.len())?;
        let end = (start + PAGE).min(all.len());
        let mut result = ListResourcesResult::with_all_items(all[start..end].to_vec());
        if end < all.len() {
            result.next_cursor = Some(Cursor::from(end.to_string()));
        }
        Ok(result)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let files = self.files_or_error()?;
        let uri = request.uri;
        let contents = tokio::task::spawn_blocking(move || files.read(&uri))
            .await
            .map_err(|_| ErrorData::internal_error("reading the file failed", None))??;
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let start = page_start(request.as_ref(), self.prompts.len())?;
        let prompts = self.prompts[start..]
            .iter()
            .map(|p| rmcp::model::Prompt::new(p.name.clone(), Some(p.description.clone()), None))
            .collect();
        Ok(ListPromptsResult::with_all_items(prompts))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let Some(named) = self.prompts.iter().find(|p| p.name == request.name) else {
            let names: Vec<&str> = self.prompts.iter().map(|p| p.name.as_str()).collect();
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown prompt `{}`; available prompts: {}",
                    brute::tools::quoted(&request.name),
                    names.join(", ")
                ),
                None,
            ));
        };
        let text = named.prompt.render(&Env::new());
        let message = PromptMessage::new_text(Role::User, text);
        Ok(GetPromptResult::new(vec![message])
            .with_description(named.description.clone())
            .into())
    }
}
