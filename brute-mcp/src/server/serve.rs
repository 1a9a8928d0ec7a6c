//! Serving an MCP server (a [`ToolSetServer`](crate::ToolSetServer), an
//! [`AgentServer`](crate::AgentServer), any rmcp `ServerHandler`) over stdio or
//! streamable HTTP.

use std::future::Future;
use std::sync::Arc;

use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, ServiceExt};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::error::McpError;

/// Serves `server` over this process's stdin and stdout until the client closes
/// them. Nothing else may write to stdout meanwhile (log to stderr).
pub async fn serve_stdio<H: ServerHandler>(server: H) -> Result<(), McpError> {
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| McpError::Serve {
            transport: "stdio".to_string(),
            problem: format!("the handshake failed: {e}"),
        })?;
    running.waiting().await.map_err(|e| McpError::Serve {
        transport: "stdio".to_string(),
        problem: format!("the server's task failed: {e}"),
    })?;
    Ok(())
}

/// Serves `server` over streamable HTTP on `listener`, at every path (clients
/// conventionally use `http://host:port/mcp`), until `shutdown` completes. Each MCP
/// session gets a clone of `server`.
///
/// ```no_run
/// use brute::tools::{ToolContext, Tools};
/// use brute_mcp::ToolSetServer;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let server = ToolSetServer::new(Tools::READ_ONLY, ToolContext::new(".")?);
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8931").await?;
/// brute_mcp::serve_http(server, listener, std::future::pending::<()>()).await?;
/// # Ok(()) }
/// ```
pub async fn serve_http<H, F>(server: H, listener: TcpListener, shutdown: F) -> Result<(), McpError>
where
    H: ServerHandler + Clone,
    F: Future,
{
    let address = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "a TCP listener".to_string());
    let stop = CancellationToken::new();
    // Ends the open event streams when the server stops.
    let _stop_streams = stop.clone().drop_guard();
    let config = StreamableHttpServerConfig::default().with_cancellation_token(stop.child_token());
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = &mut shutdown => return Ok(()),
        };
        let (stream, _peer) = accepted.map_err(|e| McpError::Serve {
            transport: address.clone(),
            problem: format!("cannot accept a connection: {e}"),
        })?;
        let service = TowerToHyperService::new(service.clone());
        let stop = stop.clone();
        tokio::spawn(async move {
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service);
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(error) = result {
                        tracing::debug!(%error, "MCP HTTP connection ended with an error");
                    }
                }
                () = stop.cancelled() => connection.as_mut().graceful_shutdown(),
            }
        });
    }
}
