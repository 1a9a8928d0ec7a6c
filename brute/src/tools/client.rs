//! Tools that run on the client: [`ClientTools`], the names of tools a caller of the
//! agent (an OpenAI-compatible client, a UI) runs itself, left in the env's extensions.

use std::sync::Arc;

use super::pipeline::{Approval, Decision};
use crate::env::Extensions;
use crate::message::ToolCall;

/// The names of tools that the caller of a turn runs, not the agent: put it in
/// [`Env::extensions`](crate::Env::extensions) (and the tools' specs in
/// [`Env::tools`](crate::Env::tools), so that the model sees them).
///
/// `DefaultToolPipeline` runs no call to one of these tools: it pauses on it as on a
/// call that waits for approval (a placeholder result marked `awaiting_approval`, an
/// [`ApprovalRequired`](crate::stream::TurnItem::ApprovalRequired) item, the turn ends
/// [`Paused`](crate::stream::TurnResult::Paused)), while the agent's own calls of the
/// same reply run at once. The caller tells the two pauses apart by the call's name,
/// runs its calls, and sends their results in the next turn.
///
/// ```
/// use brute::tools::ClientTools;
///
/// let client = ClientTools::new(["get_weather"]);
/// assert!(client.contains("get_weather"));
/// assert!(!client.contains("read"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct ClientTools(Arc<[String]>);

impl ClientTools {
    /// The tools named `names` run on the client.
    pub fn new<I, S>(names: I) -> ClientTools
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ClientTools(names.into_iter().map(Into::into).collect())
    }

    /// Whether the tool `name` runs on the client.
    pub fn contains(&self, name: &str) -> bool {
        self.0.iter().any(|n| n == name)
    }

    /// The names, in the order given.
    pub fn names(&self) -> &[String] {
        &self.0
    }
}

/// The decision on `call`: a pause for a client tool named in `extensions`, the
/// approval policy's otherwise.
pub(crate) fn decide(approval: &Approval, extensions: &Extensions, call: &ToolCall) -> Decision {
    match extensions.get::<ClientTools>() {
        Some(client) if client.contains(&call.name) => Decision::Ask,
        _ => approval.decide(call),
    }
}
