//! Tools that run on the client: [`ClientTools`], the names of tools a caller of the
//! agent (an OpenAI-compatible client, a UI) runs itself, left in the env's extensions.

use std::sync::Arc;

use crate::tool::ToolSpec;

/// The names of tools that the caller of a turn runs, not the agent: put it in
/// [`Env::extensions`](crate::Env::extensions) (and the tools' specs in
/// [`Env::tools`](crate::Env::tools), so that the model sees them).
///
/// `DefaultToolPipeline` runs no call to one of these tools: it pauses on it as on a
/// call that waits for approval (a placeholder result marked `awaiting_approval`, an
/// [`ApprovalRequired`](crate::stream::TurnItem::ApprovalRequired) item, the turn ends
/// [`Paused`](crate::stream::TurnResult::Paused)), while the agent's own calls of the
/// same reply run at once. The caller tells the two pauses apart by the call's name,
/// runs its calls, and sends their results in the next turn: an
/// [`ApprovalDecision`](crate::stream::ApprovalDecision) with
/// [`Verdict::Answer`](crate::stream::Verdict::Answer) per call, the env again carrying
/// these `ClientTools`. A client tool must not share a name with one of the
/// pipeline's own: the turn is refused with [`ClientToolClash`] before the model is
/// called.
///
/// ```
/// use brute::model::ToolSpec;
/// use brute::stream::Verdict;
/// use brute::tools::{ClientTools, DefaultToolPipeline, ToolError};
/// use brute::{Message, Role, ToolCall, brute_agent, middleware::Loop, providers::ScriptedModel, tool};
/// use serde_json::json;
///
/// /// Adds two numbers.
/// #[tool]
/// async fn add(a: i64, b: i64) -> Result<String, ToolError> {
///     Ok((a + b).to_string())
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// // One reply calls the agent's `add` and the client's `get_weather`.
/// let model = ScriptedModel::from_fn(|env| match env.messages.last() {
///     Some(m) if m.role == Role::Tool => Message::assistant(format!("It is {}.", m.content)),
///     _ => Message::tool_calls("", vec![
///         ToolCall::new("c1", "add", json!({"a": 2, "b": 3})),
///         ToolCall::new("c2", "get_weather", json!({"city": "Paris"})),
///     ]),
/// });
/// # let root = tempfile::tempdir()?;
/// let agent = brute_agent! {
///     use Loop::ToolResult;
///     use DefaultToolPipeline { tools: (Add,), root: root.path(), env_secrets: false };
///     run model;
/// };
/// let mut env = agent.env();
/// env.tools.push(ToolSpec::new("get_weather", "The weather in a city.", json!({"type": "object"})));
/// env.extensions.insert(ClientTools::new(["get_weather"]));
/// env.messages.push(Message::user("Weather in Paris? And 2 + 3?"));
/// let outcome = agent.turn(env).await?;
/// // `add` ran here; the turn waits for the client's `get_weather`.
/// assert_eq!(outcome.stop.awaiting_approval(), Some(&["c2".to_string()][..]));
/// let result = |id| outcome.env.messages.iter().find(|m| m.tool_call_id.as_deref() == Some(id));
/// assert_eq!(result("c1").map(|m| m.content.as_str()), Some("5"));
/// assert!(result("c2").is_some_and(|m| m.awaiting_approval()));
///
/// // The client ran it: its result resumes the turn (the env still has `ClientTools`).
/// let outcome = agent.decide(outcome.env, "c2", Verdict::Answer { content: "sunny".into() }).await?;
/// assert_eq!(outcome.text(), Some("It is sunny."));
/// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
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

    /// Refuses these names when one of `specs` (the agent's own tools) has one of
    /// them too, naming the first such name.
    pub(crate) fn clash(&self, specs: &[ToolSpec]) -> Result<(), ClientToolClash> {
        match specs.iter().find(|spec| self.contains(&spec.name)) {
            Some(spec) => Err(ClientToolClash {
                name: spec.name.clone(),
            }),
            None => Ok(()),
        }
    }
}

/// Why a turn with [`ClientTools`] was refused: a client tool has the name of one of
/// the agent's own tools, so a call to it could not be told apart.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the client's tool `{name}` has the name of one of the agent's own tools: give the client's tool another name"
)]
pub struct ClientToolClash {
    /// The name both have.
    pub name: String,
}
