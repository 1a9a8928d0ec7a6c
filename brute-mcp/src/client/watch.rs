//! Keeping the tool list current: the server's `notifications/tools/list_changed`
//! makes the client list the tools again.
//!
//! The client connects with the `initialize` handshake (MCP up to 2025-11-25, which
//! every server speaks), where servers send this notification unscoped; the
//! `subscriptions/listen` streams of MCP 2026-07-28 belong to its handshake-free
//! lifecycle, which rmcp's servers refuse on such a session.

use std::sync::Arc;

use rmcp::ClientHandler;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{NotificationContext, Peer, RoleClient};

use super::{State, list};

/// The client side of the connection: lists the tools again on an unscoped
/// `list_changed` notification.
pub(crate) struct Listener {
    state: Arc<State>,
}

impl Listener {
    pub(crate) fn new(state: Arc<State>) -> Self {
        Self { state }
    }
}

/// The protocol version the client speaks and announces: the latest revision with the
/// `initialize` handshake, which is the lifecycle this client runs.
pub(crate) const PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::LATEST_WITH_INITIALIZE;

impl ClientHandler for Listener {
    /// What the client announces in `initialize`: the version it really speaks
    /// ([`PROTOCOL_VERSION`]), and its name, `brute-mcp`, with this crate's version.
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("brute-mcp", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(PROTOCOL_VERSION)
    }

    fn on_tool_list_changed(
        &self,
        context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        // rmcp runs each notification on a task of its own, so waiting here for the
        // `tools/list` answer does not hold up the connection.
        refresh(self.state.clone(), context.peer)
    }
}

/// Lists the tools and installs them; a failure is logged (the old list stays).
async fn refresh(state: Arc<State>, peer: Peer<RoleClient>) {
    let installed = match list(&state, &peer).await {
        Ok(listed) => state.install(listed, true),
        Err(error) => Err(error),
    };
    if let Err(error) = installed {
        tracing::warn!(%error, "MCP tool list not refreshed");
    }
}
