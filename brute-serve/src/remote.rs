//! [`RemoteAgent`]: a tool that hands a task to an agent on another brute server.

use std::time::Duration;

use brute::stream::{TurnItem, TurnResult};
use brute::tools::{Tool, ToolContext, ToolError, ToolOutput};
use serde::Deserialize;

/// The arguments of a [`RemoteAgent`] call.
#[derive(Debug, Deserialize, brute::structured::schemars::JsonSchema)]
#[schemars(crate = "brute::structured::schemars")]
pub struct RemoteTask {
    /// The task for the other agent, in full: it sees only this message (and what its
    /// session holds).
    pub task: String,
}

/// Why a call of a [`RemoteAgent`] failed; the model sees the message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteError {
    /// The request did not get an answer.
    #[error("remote agent `{tool}`: {url}: {source}")]
    Http {
        /// The tool.
        tool: String,
        /// The URL called.
        url: String,
        /// The transport error.
        source: reqwest::Error,
    },
    /// The server answered with an error status.
    #[error("remote agent `{tool}`: {url} answered {status}: {body}")]
    Status {
        /// The tool.
        tool: String,
        /// The URL called.
        url: String,
        /// The status.
        status: u16,
        /// The body (the server's error message).
        body: String,
    },
    /// The remote turn did not complete.
    #[error("remote agent `{tool}`: session `{session}`: {what}")]
    Turn {
        /// The tool.
        tool: String,
        /// The remote session.
        session: String,
        /// What happened (failed, paused for approval, ended early).
        what: String,
    },
}

/// A tool that runs a turn of an agent on another brute server
/// (`POST {base}/v1/sessions/{session}/turns`) and returns that agent's answer: one
/// agent delegates to another over HTTP.
///
/// Each call uses a fresh remote session unless [`session`](RemoteAgent::session)
/// fixes one (then the other agent remembers earlier tasks). A remote turn that
/// pauses for approval, fails or ends early is a failed call naming the remote
/// session, so the model can say so.
///
/// ```no_run
/// use brute_serve::RemoteAgent;
///
/// let researcher = RemoteAgent::new("ask_researcher", "http://127.0.0.1:8081")
///     .describe("Asks the research agent a question; give it the whole question.")
///     .token("s3cret")
///     .agent("researcher");
/// # let _ = researcher;
/// ```
#[derive(Clone, Debug)]
pub struct RemoteAgent {
    name: String,
    description: String,
    base: String,
    token: Option<String>,
    agent: Option<String>,
    session: Option<String>,
    client: reqwest::Client,
}

impl RemoteAgent {
    /// The tool `name`, calling the server at `base` (`http://host:port`). Calls time
    /// out after 10 minutes; see [`RemoteAgent::timeout`].
    pub fn new(name: impl Into<String>, base: impl Into<String>) -> RemoteAgent {
        let name = name.into();
        RemoteAgent {
            description: format!(
                "Hands a task to the remote agent `{name}` and returns its answer."
            ),
            name,
            base: base.into().trim_end_matches('/').to_owned(),
            token: None,
            agent: None,
            session: None,
            client: client(Duration::from_secs(600)),
        }
    }

    /// What the model is told the tool does.
    pub fn describe(mut self, description: impl Into<String>) -> RemoteAgent {
        self.description = description.into();
        self
    }

    /// The bearer token of the remote server.
    pub fn token(mut self, token: impl Into<String>) -> RemoteAgent {
        self.token = Some(token.into());
        self
    }

    /// The remote agent's name (the remote server's default when unset).
    pub fn agent(mut self, agent: impl Into<String>) -> RemoteAgent {
        self.agent = Some(agent.into());
        self
    }

    /// One remote session for every call, instead of a fresh one each.
    pub fn session(mut self, session: impl Into<String>) -> RemoteAgent {
        self.session = Some(session.into());
        self
    }

    /// How long one call may take.
    pub fn timeout(mut self, timeout: Duration) -> RemoteAgent {
        self.client = client(timeout);
        self
    }

    /// Runs `task` as a turn of the remote agent; its answer.
    pub async fn ask(&self, task: &str) -> Result<String, RemoteError> {
        let session = self.session.clone().unwrap_or_else(fresh_session);
        let url = format!("{}/v1/sessions/{session}/turns", self.base);
        let http = |source| RemoteError::Http {
            tool: self.name.clone(),
            url: url.clone(),
            source,
        };
        let body = serde_json::json!({ "input": task, "agent": self.agent });
        let mut request = self
            .client
            .post(&url)
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let response = request.send().await.map_err(http)?;
        let status = response.status();
        let text = response.text().await.map_err(http)?;
        if !status.is_success() {
            return Err(RemoteError::Status {
                tool: self.name.clone(),
                url,
                status: status.as_u16(),
                body: text,
            });
        }
        let turn = |what: String| RemoteError::Turn {
            tool: self.name.clone(),
            session: session.clone(),
            what,
        };
        let end = crate::sse::parse(&text)
            .into_iter()
            .filter(|(name, _)| name == "end")
            .find_map(|(_, data)| serde_json::from_str::<TurnItem>(&data).ok());
        match end {
            Some(TurnItem::End { result }) => match result {
                TurnResult::Completed { text } => Ok(text.unwrap_or_default()),
                TurnResult::Paused { pending } => Err(turn(format!(
                    "the remote turn waits for approval of tool calls {}",
                    pending.join(", ")
                ))),
                TurnResult::Exited { reason } => {
                    Err(turn(format!("the remote turn ended early: {reason}")))
                }
                TurnResult::Failed { error } => {
                    Err(turn(format!("the remote turn failed: {error}")))
                }
                other => Err(turn(format!("the remote turn did not complete: {other:?}"))),
            },
            _ => Err(turn("the stream ended without an `end` event".to_owned())),
        }
    }
}

impl Tool for RemoteAgent {
    type Args = RemoteTask;

    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    async fn call(&self, args: RemoteTask, _cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.ask(&args.task)
            .await
            .map(ToolOutput::from)
            .map_err(|e| ToolError::failed(e.to_string()))
    }

    fn snapshots(&self) -> bool {
        false
    }
}

/// A plain-HTTP client. reqwest may be built with rustls by another crate of the
/// build (brute's providers); it then needs a crypto provider: ring, as brute's own.
pub(crate) fn client(timeout: Duration) -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(timeout)
        .build()
        .unwrap_or_default()
}

/// A remote session id unique across processes.
fn fresh_session() -> String {
    crate::ids::unique_id("remote")
}
