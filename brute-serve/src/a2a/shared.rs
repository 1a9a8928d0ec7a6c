//! What the A2A handlers share: the server's state, the tasks running here, and
//! whether the server requires a bearer token (the cards say so).

use std::sync::Arc;

use super::tasks::Registry;
use crate::state::Shared;

/// What the A2A handlers share.
pub(crate) struct A2a {
    /// The server's state: agents, store, limits, running turns.
    pub(crate) shared: Arc<Shared>,
    /// The tasks whose turns run on this server.
    pub(crate) registry: Arc<Registry>,
    /// Whether the server requires `Authorization: Bearer`.
    pub(crate) bearer: bool,
}
