//! MCP client tools: the tools of an MCP server as a brute [`ToolSet`].

mod authorized;
mod call;
mod enterprise;
mod http;
mod jwt;
mod legacy;
mod oauth;
mod process;
mod watch;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use brute::ToolCall;
use brute::model::ToolSpec;
use brute::tools::{ToolError, ToolSet};
use rmcp::ServiceExt;
use rmcp::model::Tool as McpTool;
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::{IntoTransport, StreamableHttpClientTransport};
use serde_json::Value;

pub use call::McpCall;
pub use enterprise::IdentityProvider;
pub use http::HttpServer;
pub use oauth::OAuth;

use crate::error::McpError;
use authorized::Authorized;
use http::{Endpoint, Refusal};
use process::KillGroup;
use watch::Listener;

/// The tools of one MCP server, as a [`ToolSet`] for
/// [`DefaultToolPipeline`](brute::tools::DefaultToolPipeline): alone
/// (`tools: mcp`), or next to static tools (`tools: (brute::tools![Read], mcp)`).
///
/// Its calls go through the same pipeline as native tools: approval, timeouts (a
/// call that times out is cancelled at the server), truncation, redaction, events.
/// The tools are listed when the connection is made and listed again when the
/// server says its list changed (`notifications/tools/list_changed`); the pipeline
/// then advertises the new tools from its next pass on (a tool the server removed
/// stays advertised until the turn ends, and calling it gives the model an
/// unknown-tool error).
///
/// The server is reached over stdio ([`McpTools::stdio`]: a child process in a
/// process group of its own, killed with its group when the last clone of the
/// `McpTools` is dropped), streamable HTTP ([`McpTools::http`]) or any rmcp
/// transport ([`McpTools::connect`]). Clones share one connection.
///
/// ```no_run
/// use brute::{brute_agent, middleware::Loop, providers::ScriptedModel};
/// use brute::tools::{DefaultToolPipeline, Read};
/// use brute_mcp::McpTools;
///
/// # async fn run(model: ScriptedModel) -> Result<(), Box<dyn std::error::Error>> {
/// let mut command = tokio::process::Command::new("npx");
/// command.args(["-y", "@modelcontextprotocol/server-everything"]);
/// let everything = McpTools::stdio("everything", command).await?;
/// let agent = brute_agent! {
///     use Loop::ToolResult;
///     use DefaultToolPipeline { tools: (brute::tools![Read], everything) };
///     run model;
/// };
/// let outcome = agent.start("Echo 'hello' with the echo tool.").await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpTools {
    inner: Arc<Inner>,
}

struct Inner {
    state: Arc<State>,
    // Dropped first: cancelling the service closes the transport.
    service: RunningService<RoleClient, Listener>,
    // Then the whole process group is killed.
    group: Option<KillGroup>,
}

/// What the connection and the notification handler share.
pub(crate) struct State {
    pub(crate) server: Arc<str>,
    /// The HTTP address, for the error of a refused request; `None` for other
    /// transports.
    pub(crate) endpoint: Option<Arc<Endpoint>>,
    listing: RwLock<Listing>,
    revision: AtomicU64,
    /// Every tool name seen, never removed, so that [`ToolSet::names`] can lend them.
    names: boxcar::Vec<String>,
}

#[derive(Default)]
struct Listing {
    tools: Vec<Entry>,
    index: HashMap<String, usize>,
    /// Where each name seen lives in `State::names`.
    slots: HashMap<String, usize>,
}

struct Entry {
    spec: ToolSpec,
    slot: usize,
}

impl McpTools {
    /// Starts `command` as an MCP server over stdio, in a process group of its own,
    /// and lists its tools. `server` names it in errors and logs.
    pub async fn stdio(
        server: impl Into<String>,
        command: tokio::process::Command,
    ) -> Result<Self, McpError> {
        let server = server.into();
        let (transport, group) = process::spawn(&server, command)?;
        Self::start(server, transport, Some(group), None).await
    }

    /// Connects to the MCP server at `url` over streamable HTTP (or HTTPS, verified
    /// against the system's roots) and lists its tools.
    pub async fn http(
        server: impl Into<String>,
        url: impl Into<Arc<str>>,
    ) -> Result<Self, McpError> {
        Self::http_with(server, HttpServer::new(url)).await
    }

    /// Connects to an MCP server over streamable HTTP with a bearer token, headers or
    /// root certificates of its own ([`HttpServer`]) and lists its tools.
    pub async fn http_with(server: impl Into<String>, http: HttpServer) -> Result<Self, McpError> {
        let server = server.into();
        let url = http.url().to_string();
        let (clients, config, oauth) = http.parts()?;
        let client = clients.follow.clone();
        let endpoint = Arc::new(Endpoint {
            url: url.as_str().into(),
            oauth: oauth.is_some(),
        });
        let started = match oauth {
            Some(oauth) => {
                let authorized = Authorized::new(&url, oauth, clients);
                let transport = StreamableHttpClientTransport::with_client(authorized, config);
                Self::start(server.clone(), transport, None, Some(endpoint.clone())).await
            }
            None => {
                let transport = StreamableHttpClientTransport::with_client(client.clone(), config);
                Self::start(server.clone(), transport, None, Some(endpoint.clone())).await
            }
        };
        match started {
            Err(McpError::Initialize { source, .. })
                if let Some(refusal) = Refusal::of(&*source) =>
            {
                Err(refusal.error(&server, &endpoint, true))
            }
            Err(McpError::Initialize { .. })
                if let Some(problem) = http::why_unreachable(&client, &url).await =>
            {
                Err(McpError::Unreachable {
                    server,
                    url,
                    problem,
                })
            }
            other => other,
        }
    }

    /// Connects to an MCP server over any rmcp transport (an in-process pipe, a
    /// custom stream) and lists its tools.
    pub async fn connect<T, E, A>(server: impl Into<String>, transport: T) -> Result<Self, McpError>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        Self::start(server.into(), transport, None, None).await
    }

    async fn start<T, E, A>(
        server: String,
        transport: T,
        group: Option<KillGroup>,
        endpoint: Option<Arc<Endpoint>>,
    ) -> Result<Self, McpError>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let state = Arc::new(State {
            server: server.as_str().into(),
            endpoint,
            listing: RwLock::new(Listing::default()),
            revision: AtomicU64::new(0),
            names: boxcar::Vec::new(),
        });
        let listener = Listener::new(state.clone());
        let service = listener
            .serve(transport)
            .await
            .map_err(|source| McpError::Initialize {
                server: server.clone(),
                source: Box::new(source),
            })?;
        let tools = Self {
            inner: Arc::new(Inner {
                state,
                service,
                group,
            }),
        };
        let listed = list(&tools.inner.state, tools.inner.service.peer()).await?;
        tools.inner.state.install(listed, false)?;
        Ok(tools)
    }

    /// The server's name, as given when connecting.
    pub fn server(&self) -> &str {
        &self.inner.state.server
    }

    /// Lists the server's tools again now (the server's `list_changed` notification
    /// does this by itself).
    pub async fn refresh(&self) -> Result<(), McpError> {
        let listed = list(&self.inner.state, self.inner.service.peer()).await?;
        self.inner.state.install(listed, true)
    }

    /// The id of the stdio server's process group (its leader's process id), killed
    /// when the last clone is dropped; `None` for other transports.
    pub fn process_group(&self) -> Option<u32> {
        self.inner.group.as_ref().map(KillGroup::id)
    }

    /// Closes the connection and waits until it is closed: an HTTP session is ended
    /// at the server with `DELETE` (rmcp waits a bounded time for its answer), and a
    /// stdio server's process group is killed. Other clones of this value keep the
    /// connection open: only the last one closes it.
    ///
    /// Dropping the last clone closes the connection too, but in the background, so
    /// a program that exits right after may end before the server hears of it: call
    /// `close` before exiting.
    pub async fn close(self) {
        let Ok(inner) = Arc::try_unwrap(self.inner) else {
            return;
        };
        let Inner {
            state: _,
            mut service,
            group,
        } = inner;
        if let Err(error) = service.close().await {
            tracing::debug!(%error, "the MCP client's task ended with an error");
        }
        drop(group);
    }

    /// Whether the connection to the server is closed (the server exited or crashed).
    pub fn is_closed(&self) -> bool {
        self.inner.service.is_closed() || self.inner.service.peer().is_transport_closed()
    }
}

impl std::fmt::Debug for McpTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names = Vec::new();
        self.names(&mut names);
        f.debug_struct("McpTools")
            .field("server", &self.server())
            .field("tools", &names)
            .finish_non_exhaustive()
    }
}

/// Lists every tool of the server (following pagination).
pub(crate) async fn list(state: &State, peer: &Peer<RoleClient>) -> Result<Vec<McpTool>, McpError> {
    peer.list_all_tools().await.map_err(|source| {
        if let Some(endpoint) = &state.endpoint
            && let Some(refusal) = Refusal::of(&source)
        {
            return refusal.error(&state.server, endpoint, false);
        }
        McpError::List {
            server: state.server.to_string(),
            source,
        }
    })
}

impl State {
    fn listing(&self) -> std::sync::RwLockReadGuard<'_, Listing> {
        self.listing.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Replaces the listing with `tools`; when `refreshed` and the tools differ from
    /// the old ones, bumps the revision (the pipeline then advertises them anew).
    pub(crate) fn install(&self, tools: Vec<McpTool>, refreshed: bool) -> Result<(), McpError> {
        let mut listing = self.listing.write().unwrap_or_else(PoisonError::into_inner);
        let mut fresh = Vec::with_capacity(tools.len());
        let mut index = HashMap::with_capacity(tools.len());
        for tool in tools {
            let name = tool.name.to_string();
            let problem = |problem: &str| McpError::BadTool {
                server: self.server.to_string(),
                tool: name.clone(),
                problem: problem.to_string(),
            };
            if index.contains_key(&name) {
                return Err(problem("two tools have this name"));
            }
            let slot = match listing.slots.get(&name) {
                Some(&slot) => slot,
                None => {
                    let slot = self.names.push(name.clone());
                    listing.slots.insert(name.clone(), slot);
                    slot
                }
            };
            let parameters = Value::Object((*tool.input_schema).clone());
            let description = tool.description.as_deref().unwrap_or_default();
            index.insert(name.clone(), fresh.len());
            fresh.push(Entry {
                spec: ToolSpec::new(name, description, parameters),
                slot,
            });
        }
        let changed = listing.tools.len() != fresh.len()
            || listing
                .tools
                .iter()
                .zip(&fresh)
                .any(|(a, b)| a.spec != b.spec);
        listing.tools = fresh;
        listing.index = index;
        if refreshed && changed {
            self.revision.fetch_add(1, Ordering::AcqRel);
        }
        Ok(())
    }
}

impl ToolSet for McpTools {
    type Call<'s> = McpCall;

    fn specs(&self, out: &mut Vec<ToolSpec>) {
        out.extend(
            self.inner
                .state
                .listing()
                .tools
                .iter()
                .map(|e| e.spec.clone()),
        );
    }

    fn contains(&self, name: &str) -> bool {
        self.inner.state.listing().index.contains_key(name)
    }

    fn names<'a>(&'a self, out: &mut Vec<&'a str>) {
        let state: &'a State = &self.inner.state;
        let listing = state.listing();
        out.extend(listing.tools.iter().map(|e| state.names[e.slot].as_str()));
    }

    fn prepare(&self, call: &ToolCall) -> Option<Result<McpCall, ToolError>> {
        let listing = self.inner.state.listing();
        let entry = &listing.tools[*listing.index.get(&call.name)?];
        Some(
            call::arguments(call, &entry.spec.parameters).map(|arguments| McpCall {
                server: self.inner.state.server.clone(),
                endpoint: self.inner.state.endpoint.clone(),
                peer: self.inner.service.peer().clone(),
                tool: call.name.clone(),
                arguments,
            }),
        )
    }

    fn revision(&self) -> u64 {
        self.inner.state.revision.load(Ordering::Acquire)
    }
}
