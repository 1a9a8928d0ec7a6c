//! [`A2aAgent`]: a tool that hands a task to any A2A v1.0 server (brute-serve's or
//! another's) over its JSON-RPC binding, found through the server's agent card.

use std::time::Duration;

use brute::tools::{Tool, ToolContext, ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::OnceCell;

use super::wire::{self, Artifact, Part, StreamResponse, Task, TaskState, TaskStatus};

/// The arguments of an [`A2aAgent`] call.
#[derive(Debug, Deserialize, brute::structured::schemars::JsonSchema)]
#[schemars(crate = "brute::structured::schemars")]
pub struct A2aTask {
    /// The message for the other agent: a whole task, or the answer to its question.
    pub task: String,
    /// To answer a remote agent that asked for input: the task id it gave.
    #[serde(default)]
    pub task_id: Option<String>,
}

/// Why a call of an [`A2aAgent`] failed; the model sees the message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum A2aCallError {
    /// The request did not get an answer.
    #[error("A2A agent `{tool}`: {url}: {source}")]
    Http {
        /// The tool.
        tool: String,
        /// The URL called.
        url: String,
        /// The transport error.
        source: reqwest::Error,
    },
    /// The server answered with an error status.
    #[error("A2A agent `{tool}`: {url} answered {status}: {body}")]
    Status {
        /// The tool.
        tool: String,
        /// The URL called.
        url: String,
        /// The status.
        status: u16,
        /// The body, cut after 500 characters.
        body: String,
    },
    /// The agent card offers no interface this client speaks, or is no card.
    #[error("A2A agent `{tool}`: the agent card at {url}: {what}")]
    Card {
        /// The tool.
        tool: String,
        /// The card's URL.
        url: String,
        /// What is wrong with it.
        what: String,
    },
    /// The server answered with a JSON-RPC error.
    #[error("A2A agent `{tool}`: {method} at {url}: error {code}: {message}")]
    Rpc {
        /// The tool.
        tool: String,
        /// The endpoint.
        url: String,
        /// The method called.
        method: String,
        /// The JSON-RPC error code (A2A's: -32001 task not found, ..).
        code: i64,
        /// The server's message.
        message: String,
    },
    /// The answer is not what A2A v1.0 answers.
    #[error("A2A agent `{tool}`: {url}: the answer is not A2A 1.0: {what}")]
    Reply {
        /// The tool.
        tool: String,
        /// The endpoint.
        url: String,
        /// What is wrong with it.
        what: String,
    },
}

/// The state of a remote task, as [`A2aReply`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum A2aState {
    /// The task is done; the text is its answer.
    Completed,
    /// The remote agent asks a question (the text); answer with
    /// [`A2aAgent::send`] on the same task id.
    InputRequired,
    /// The remote agent needs the caller to authenticate.
    AuthRequired,
    /// The task is still running (the server answered before it ended).
    Working,
    /// The task failed; the text says why.
    Failed,
    /// The task was canceled.
    Canceled,
    /// The remote agent refused the task.
    Rejected,
    /// A state this client does not know, by its wire name.
    Other(String),
}

/// What the remote agent answered to a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct A2aReply {
    /// The remote task (absent when the agent answered with a plain message).
    pub task_id: Option<String>,
    /// The remote context: pass it again to continue the conversation.
    pub context_id: Option<String>,
    /// The task's state ([`A2aState::Completed`] for a plain message).
    pub state: A2aState,
    /// The answer: the artifacts' text, else the status message's.
    pub text: String,
}

/// A tool that sends a task to an agent of any A2A v1.0 server and returns its
/// answer. The agent card (`{base}/.well-known/agent-card.json`) is fetched on the
/// first call and names the JSON-RPC endpoint. A remote task that asks for input
/// (`TASK_STATE_INPUT_REQUIRED`, brute-serve's approval pause among them) is returned to
/// the model as the question with its task id, so the model can answer it by calling
/// the tool again with `task_id`. Failed, canceled and rejected tasks are failed calls.
///
/// ```no_run
/// use brute_serve::A2aAgent;
///
/// let planner = A2aAgent::new("ask_planner", "http://127.0.0.1:9999")
///     .describe("Asks the planning agent; give it the whole task.")
///     .token("s3cret");
/// # let _ = planner;
/// ```
#[derive(Clone, Debug)]
pub struct A2aAgent {
    name: String,
    description: String,
    base: String,
    token: Option<String>,
    context: Option<String>,
    client: reqwest::Client,
    streaming: bool,
    endpoint: OnceCell<Endpoint>,
}

/// What the card says of the JSON-RPC interface.
#[derive(Clone, Debug)]
struct Endpoint {
    url: String,
    streams: bool,
}

impl A2aAgent {
    /// The tool `name`, calling the agent whose card is at
    /// `{base}/.well-known/agent-card.json`. Calls time out after 10 minutes.
    pub fn new(name: impl Into<String>, base: impl Into<String>) -> A2aAgent {
        let name = name.into();
        A2aAgent {
            description: format!(
                "Sends a task to the remote agent `{name}` and returns its answer or its question."
            ),
            name,
            base: base.into().trim_end_matches('/').to_owned(),
            token: None,
            context: None,
            client: crate::remote::client(Duration::from_secs(600)),
            streaming: false,
            endpoint: OnceCell::new(),
        }
    }

    /// What the model is told the tool does.
    pub fn describe(mut self, description: impl Into<String>) -> A2aAgent {
        self.description = description.into();
        self
    }

    /// A bearer token for the server (the card's `securitySchemes` name its kind).
    pub fn token(mut self, token: impl Into<String>) -> A2aAgent {
        self.token = Some(token.into());
        self
    }

    /// One remote context (conversation) for every call, so the other agent remembers
    /// earlier tasks; each call starts a fresh one otherwise.
    pub fn context(mut self, context: impl Into<String>) -> A2aAgent {
        self.context = Some(context.into());
        self
    }

    /// Sends with `SendStreamingMessage` when the card says the agent streams (and with
    /// `SendMessage` otherwise), folding the task's events into its reply: for servers
    /// that answer `SendMessage` only once a long task ends, or not at all.
    pub fn streaming(mut self, on: bool) -> A2aAgent {
        self.streaming = on;
        self
    }

    /// How long one call may take.
    pub fn timeout(mut self, timeout: Duration) -> A2aAgent {
        self.client = crate::remote::client(timeout);
        self
    }

    fn request(&self, builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let builder = builder.header("a2a-version", wire::VERSION);
        match &self.token {
            Some(token) => builder.header("authorization", format!("Bearer {token}")),
            None => builder,
        }
    }

    async fn fetch(
        &self,
        request: reqwest::RequestBuilder,
        url: &str,
    ) -> Result<String, A2aCallError> {
        let http = |source| A2aCallError::Http {
            tool: self.name.clone(),
            url: url.to_owned(),
            source,
        };
        let response = self.request(request).send().await.map_err(http)?;
        let status = response.status();
        let text = response.text().await.map_err(http)?;
        if !status.is_success() {
            return Err(A2aCallError::Status {
                tool: self.name.clone(),
                url: url.to_owned(),
                status: status.as_u16(),
                body: text.chars().take(500).collect(),
            });
        }
        Ok(text)
    }

    /// The JSON-RPC endpoint that the agent card names (fetched once).
    pub async fn endpoint(&self) -> Result<&str, A2aCallError> {
        self.card().await.map(|e| e.url.as_str())
    }

    async fn card(&self) -> Result<&Endpoint, A2aCallError> {
        self.endpoint
            .get_or_try_init(|| async {
                let url = format!("{}/.well-known/agent-card.json", self.base);
                let card = self.fetch(self.client.get(&url), &url).await?;
                let bad = |what: String| A2aCallError::Card {
                    tool: self.name.clone(),
                    url: url.clone(),
                    what,
                };
                let card: Value =
                    serde_json::from_str(&card).map_err(|e| bad(format!("not JSON: {e}")))?;
                let interfaces = card["supportedInterfaces"].as_array().cloned().unwrap_or_default();
                interfaces
                    .iter()
                    .find(|i| {
                        i["protocolBinding"] == "JSONRPC"
                            && i["protocolVersion"]
                                .as_str()
                                .is_none_or(|v| v.is_empty() || v.split('.').next() == Some("1"))
                    })
                    .and_then(|i| i["url"].as_str())
                    .map(|url| Endpoint {
                        url: url.to_owned(),
                        streams: card["capabilities"]["streaming"] == true,
                    })
                    .ok_or_else(|| {
                        bad("no JSON-RPC interface of protocol version 1.x in `supportedInterfaces`".to_owned())
                    })
            })
            .await
    }

    /// Posts the JSON-RPC request `method`; the endpoint and the body of the answer.
    async fn post(&self, method: &str, params: Value) -> Result<(String, String), A2aCallError> {
        let url = self.endpoint().await?.to_owned();
        let body = json!({"jsonrpc": "2.0", "id": crate::ids::unique_id("rpc"), "method": method, "params": params});
        let request = self
            .client
            .post(&url)
            .header("content-type", "application/json")
            .body(body.to_string());
        let text = self.fetch(request, &url).await?;
        Ok((url, text))
    }

    async fn call(&self, method: &str, params: Value) -> Result<(String, Value), A2aCallError> {
        let (url, text) = self.post(method, params).await?;
        let result = self.result(&url, method, &text)?;
        Ok((url, result))
    }

    /// The `result` of one JSON-RPC response `text`, or its error.
    fn result(&self, url: &str, method: &str, text: &str) -> Result<Value, A2aCallError> {
        let reply = |what: String| A2aCallError::Reply {
            tool: self.name.clone(),
            url: url.to_owned(),
            what,
        };
        let answer: Value =
            serde_json::from_str(text).map_err(|e| reply(format!("not JSON: {e}")))?;
        if let Some(error) = answer.get("error") {
            return Err(A2aCallError::Rpc {
                tool: self.name.clone(),
                url: url.to_owned(),
                method: method.to_owned(),
                code: error["code"].as_i64().unwrap_or(0),
                message: error["message"].as_str().unwrap_or("").to_owned(),
            });
        }
        match answer.get("result") {
            Some(result) => Ok(result.clone()),
            None => Err(reply("neither `result` nor `error`".to_owned())),
        }
    }

    /// Sends `text` (`SendMessage`): on `task_id` to answer a task that asked for
    /// input, in `context_id` (or the fixed [`context`](A2aAgent::context)) to go on
    /// with a conversation.
    pub async fn send(
        &self,
        text: &str,
        task_id: Option<&str>,
        context_id: Option<&str>,
    ) -> Result<A2aReply, A2aCallError> {
        let mut message = json!({
            "messageId": crate::ids::unique_id("msg"),
            "role": wire::ROLE_USER,
            "parts": [{"text": text}],
        });
        if let Some(task_id) = task_id {
            message["taskId"] = json!(task_id);
        }
        if let Some(context) = context_id.or(self.context.as_deref()) {
            message["contextId"] = json!(context);
        }
        let params = json!({ "message": message });
        if self.streaming && self.card().await?.streams {
            return self.send_streaming(params).await;
        }
        let (url, result) = self.call("SendMessage", params).await?;
        let parsed: StreamResponse =
            serde_json::from_value(result).map_err(|e| A2aCallError::Reply {
                tool: self.name.clone(),
                url: url.clone(),
                what: format!("a SendMessage result is a `task` or a `message`: {e}"),
            })?;
        match parsed {
            StreamResponse::Task(task) => Ok(reply_of(&task)),
            StreamResponse::Message(message) => Ok(A2aReply {
                task_id: message.task_id.clone(),
                context_id: message.context_id.clone(),
                state: A2aState::Completed,
                text: texts(&message.parts),
            }),
            _ => Err(A2aCallError::Reply {
                tool: self.name.clone(),
                url,
                what: "a SendMessage result is a `task` or a `message`".to_owned(),
            }),
        }
    }
}

impl A2aAgent {
    /// `SendStreamingMessage`: the task's events, folded into the task they leave.
    async fn send_streaming(&self, params: Value) -> Result<A2aReply, A2aCallError> {
        let method = "SendStreamingMessage";
        let (url, text) = self.post(method, params).await?;
        let reply = |what: String| A2aCallError::Reply {
            tool: self.name.clone(),
            url: url.clone(),
            what,
        };
        // A server may answer an error before the stream with plain JSON.
        let events = match crate::sse::parse(&text) {
            events if events.is_empty() => vec![(String::new(), text.clone())],
            events => events,
        };
        let mut task: Option<Task> = None;
        for (_, data) in events {
            let result = self.result(&url, method, &data)?;
            let event: StreamResponse = serde_json::from_value(result)
                .map_err(|e| reply(format!("a stream event: {e}")))?;
            // An update may come first (a task that goes on): it names the task.
            let (id, context) = match &event {
                StreamResponse::StatusUpdate(u) => (u.task_id.clone(), u.context_id.clone()),
                StreamResponse::ArtifactUpdate(u) => (u.task_id.clone(), u.context_id.clone()),
                _ => (String::new(), String::new()),
            };
            let seen = || Task {
                id,
                context_id: context,
                status: TaskStatus {
                    state: TaskState::Working,
                    message: None,
                },
                artifacts: Vec::new(),
                history: Vec::new(),
            };
            match event {
                StreamResponse::Task(new) => task = Some(new),
                StreamResponse::Message(message) => {
                    return Ok(A2aReply {
                        task_id: message.task_id.clone(),
                        context_id: message.context_id.clone(),
                        state: A2aState::Completed,
                        text: texts(&message.parts),
                    });
                }
                StreamResponse::StatusUpdate(update) => {
                    task.get_or_insert_with(seen).status = update.status;
                }
                StreamResponse::ArtifactUpdate(update) => {
                    let task = task.get_or_insert_with(seen);
                    let id = update.artifact.artifact_id.clone();
                    match task.artifacts.iter_mut().find(|a| a.artifact_id == id) {
                        Some(artifact) if update.append => append(artifact, update.artifact.parts),
                        Some(artifact) => *artifact = update.artifact,
                        None => task.artifacts.push(update.artifact),
                    }
                }
            }
        }
        task.map(|task| reply_of(&task))
            .ok_or_else(|| reply("the stream ended without a task".to_owned()))
    }
}

/// Appends a chunk to an artifact: its parts follow the artifact's (A2A: `append`
/// adds the chunk's parts), so a streamed artifact has the parts of the same artifact
/// read whole from a server that keeps its chunks.
fn append(artifact: &mut Artifact, parts: Vec<Part>) {
    artifact.parts.extend(parts);
}

/// The text parts of a message's `parts`, one a line.
fn texts(parts: &[Part]) -> String {
    parts
        .iter()
        .filter_map(|p| p.text.as_deref())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text of an artifact: its text parts, one after the other, as the chunks of a
/// streamed artifact make them (the same text whether the task was streamed or read
/// whole).
fn artifact_text(parts: &[Part]) -> String {
    parts.iter().filter_map(|p| p.text.as_deref()).collect()
}

fn reply_of(task: &Task) -> A2aReply {
    let artifacts: Vec<String> = task
        .artifacts
        .iter()
        .map(|a| artifact_text(&a.parts))
        .filter(|t| !t.is_empty())
        .collect();
    let status = task
        .status
        .message
        .as_ref()
        .map(|m| texts(&m.parts))
        .unwrap_or_default();
    let state = match task.status.state {
        TaskState::Completed => A2aState::Completed,
        TaskState::InputRequired => A2aState::InputRequired,
        TaskState::AuthRequired => A2aState::AuthRequired,
        TaskState::Working | TaskState::Submitted => A2aState::Working,
        TaskState::Failed => A2aState::Failed,
        TaskState::Canceled => A2aState::Canceled,
        TaskState::Rejected => A2aState::Rejected,
        other => A2aState::Other(other.name().to_owned()),
    };
    let text = if state == A2aState::Completed && !artifacts.is_empty() {
        artifacts.join("\n")
    } else {
        status
    };
    A2aReply {
        task_id: Some(task.id.clone()),
        context_id: Some(task.context_id.clone()),
        state,
        text,
    }
}

impl Tool for A2aAgent {
    type Args = A2aTask;

    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    async fn call(&self, args: A2aTask, _cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let reply = self
            .send(&args.task, args.task_id.as_deref(), None)
            .await
            .map_err(|e| ToolError::failed(e.to_string()))?;
        let task = reply.task_id.clone().unwrap_or_default();
        match reply.state {
            A2aState::Completed => Ok(ToolOutput::from(reply.text)),
            A2aState::InputRequired | A2aState::AuthRequired => Ok(ToolOutput::from(format!(
                "The remote agent `{}` needs input on task `{task}`:\n{}\n(Call this tool again with `task_id` \"{task}\" and the answer as `task`.)",
                self.name, reply.text
            ))),
            state => Err(ToolError::failed(format!(
                "remote agent `{}`: task `{task}` ended {}: {}",
                self.name,
                match state {
                    A2aState::Working => "before it was done (still working)".to_owned(),
                    A2aState::Failed => "failed".to_owned(),
                    A2aState::Canceled => "canceled".to_owned(),
                    A2aState::Rejected => "rejected".to_owned(),
                    A2aState::Other(name) => format!("in state {name}"),
                    _ => "without an answer".to_owned(),
                },
                reply.text
            ))),
        }
    }

    fn snapshots(&self) -> bool {
        false
    }
}
