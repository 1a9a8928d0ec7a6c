//! The chat-completions facade honours the whole request: client `tools` come back as
//! `tool_calls` (the agent's own tools still run on the server), `response_format`
//! reaches the model as an output schema, `stream_options.include_usage` ends the
//! stream with the usage, an approval pause is an answer a client can act on, and a
//! chat completion of an agent without a session touches no store.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use brute::session::{JsonlStore, SessionError, SessionStore};
use brute::structured::OutputSchema;
use brute::tools::{Approval, DefaultToolPipeline, ToolError};
use brute::{
    Completion, Env, Message, Role, ToolCall, Usage, brute_agent, middleware::Loop,
    middleware::SessionLog, tool,
};
use brute_serve::Server;
use serde_json::{Value, json};
use support::{Running, TOKEN, events, post};

/// How often the server-side `add` ran.
static ADDED: AtomicUsize = AtomicUsize::new(0);

/// Adds two numbers (a tool of the agent's own: it runs on the server).
#[tool]
async fn add(
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
) -> Result<String, ToolError> {
    ADDED.fetch_add(1, Ordering::SeqCst);
    Ok((a + b).to_string())
}

/// Deploys (a tool that waits for a person's approval).
#[tool]
async fn deploy() -> Result<String, ToolError> {
    Ok("ok".into())
}

/// The model: answers a client tool's result with it; asked for JSON, answers in the
/// shape of the output schema it was given; asked about the weather, calls `add` (the
/// agent's) and `get_weather` (the client's) in one reply, if it was shown the latter.
fn assistant(env: &Env) -> Message {
    let Some(last) = env.messages.last() else {
        return Message::assistant("nothing");
    };
    if last.role == Role::Tool {
        return Message::assistant(format!("It is {}.", last.content));
    }
    if last.content.contains("JSON") {
        return match env.extensions.get::<OutputSchema>() {
            Some(s) if s.schema()["properties"].get("population").is_some() => {
                Message::assistant(r#"{"name": "Paris", "population": 2102650}"#)
            }
            Some(s) => Message::assistant(
                json!({"schema": s.name(), "strict": s.is_strict(), "type": s.schema()["type"]})
                    .to_string(),
            ),
            None => Message::assistant("no schema"),
        };
    }
    if env.tools.iter().any(|t| t.name == "get_weather") {
        Message::tool_calls(
            "",
            vec![
                ToolCall::new("call_add", "add", json!({"a": 2, "b": 3})),
                ToolCall::new("call_w", "get_weather", json!({"city": "Paris"})),
            ],
        )
    } else {
        Message::assistant("I have no weather tool.")
    }
}

fn usage(message: Message) -> Completion {
    Completion {
        message,
        usage: Some(Usage::new(10, 2)),
    }
}

/// A server with `assistant` (sessions on the server's store, `add` its own tool) and
/// `guarded` (its `deploy` waits for approval).
async fn start() -> (Running, Arc<JsonlStore>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(JsonlStore::new(dir.path()));
    let root = dir.path().to_path_buf();
    let agent = brute_agent! {
        use SessionLog { store: store.clone() };
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: (Add,), root: root.clone(), env_secrets: false };
        run |env: &Env| {
            let reply = usage(assistant(env));
            async move { Ok(reply) }
        };
    };
    let guarded = brute_agent! {
        use SessionLog { store: store.clone() };
        use Loop::ToolResult;
        use DefaultToolPipeline {
            tools: (Deploy,),
            root: root.clone(),
            env_secrets: false,
            approval: Approval::ask(["deploy"]),
        };
        run |env: &Env| {
            let reply = match env.messages.last() {
                Some(m) if m.role == Role::Tool => Message::assistant(format!("deployed: {}", m.content)),
                _ => Message::tool_calls("", vec![ToolCall::new("call_d", "deploy", json!({}))]),
            };
            async move { Ok(reply) }
        };
    };
    let server = Server::new(store.clone())
        .agent("assistant", agent)
        .agent("guarded", guarded)
        .bearer_token(TOKEN);
    (Running::start(server).await, store, dir)
}

const WEATHER: &str = "What is the weather in Paris?";

fn tools() -> Value {
    json!([{
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(feature = "services"),
    ignore = "needs the OpenAI Python client: cargo xtask test"
)]
async fn the_official_openai_python_client_runs_its_tool_loop_and_parses_structured_output() {
    let python = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `cargo xtask test`, which installs the OpenAI Python client there",
        python.display()
    );
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/chat_tools.py");
    let (running, store, _dir) = start().await;
    let before = ADDED.load(Ordering::SeqCst);
    let output = tokio::process::Command::new(&python)
        .arg(&script)
        .arg(&running.base)
        .arg(TOKEN)
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "python failed: {}\n{}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        "first: tool_calls ['get_weather']\n\
         second: stop It is sunny in Paris.\n\
         streamed: tool_calls ['get_weather'] usage 12\n\
         streamed second: It is sunny in Paris.\n\
         parsed: name='Paris' population=2102650\n"
    );
    // The agent's own tool of each mixed reply ran on the server, once per reply.
    assert!(ADDED.load(Ordering::SeqCst) >= before + 2);
    assert_eq!(store.list().await.unwrap(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_tool_calls_have_openai_s_exact_wire_shape_streamed_and_not() {
    let (running, _store, _dir) = start().await;
    let client = support::client();
    let url = format!("{}/v1/chat/completions", running.base);
    let request = json!({
        "model": "assistant",
        "messages": [{"role": "user", "content": WEATHER}],
        "tools": tools(),
        "tool_choice": "auto",
    });
    let completion: Value = post(&client, url.clone(), request.clone())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
        .parse::<Value>()
        .unwrap();
    let call = json!({
        "id": "call_w",
        "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
    });
    assert_eq!(
        completion["choices"][0],
        json!({
            "index": 0,
            "message": {"role": "assistant", "content": null, "tool_calls": [call]},
            "finish_reason": "tool_calls",
        })
    );
    assert_eq!(
        completion["usage"],
        json!({"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12})
    );

    let mut streamed = request.clone();
    streamed["stream"] = json!(true);
    streamed["stream_options"] = json!({"include_usage": true});
    let body = post(&client, url.clone(), streamed)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let chunks: Vec<Value> = events(&body).into_iter().map(|(_, v)| v).collect();
    let deltas: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c["choices"].get(0))
        .map(|c| &c["delta"])
        .filter(|d| d.get("tool_calls").is_some())
        .collect();
    let mut indexed = call.clone();
    indexed["index"] = json!(0);
    assert_eq!(deltas, [&json!({"tool_calls": [indexed]})], "{body}");
    let n = chunks.len();
    assert_eq!(chunks[n - 1], Value::Null, "[DONE] last: {body}");
    assert_eq!(
        chunks[n - 2]["choices"],
        json!([]),
        "the usage chunk has no choice: {body}"
    );
    assert_eq!(chunks[n - 2]["usage"]["total_tokens"], 12, "{body}");
    assert_eq!(chunks[n - 2]["object"], "chat.completion.chunk");
    assert_eq!(
        chunks[n - 3]["choices"][0]["finish_reason"],
        "tool_calls",
        "{body}"
    );

    // Without include_usage, no usage chunk; without tools, the model sees none.
    let mut plain = json!({
        "model": "assistant",
        "messages": [{"role": "user", "content": WEATHER}],
        "stream": true,
    });
    let body = post(&client, url.clone(), plain.clone())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!body.contains("usage"), "{body}");
    assert!(body.contains("I have no weather tool."), "{body}");
    // `null` for an optional field is its absence, as OpenAI takes it.
    let nulls = json!({
        "model": "assistant",
        "messages": [{"role": "user", "content": WEATHER}],
        "stream": null, "tools": null, "response_format": null, "stream_options": null,
    });
    let answer = post(&client, url.clone(), nulls).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    assert!(
        answer
            .text()
            .await
            .unwrap()
            .contains("I have no weather tool.")
    );
    plain["stream"] = json!(false);
    plain["tools"] = json!([{"type": "retrieval"}]);
    let bad = post(&client, url, plain).send().await.unwrap();
    assert_eq!(bad.status(), 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_format_json_object_and_json_schema_reach_the_model() {
    let (running, _store, _dir) = start().await;
    let client = support::client();
    let url = format!("{}/v1/chat/completions", running.base);
    let ask = |format: Value| {
        json!({
            "model": "assistant",
            "messages": [{"role": "user", "content": "Answer in JSON."}],
            "response_format": format,
        })
    };
    let answer = |completion: Value| -> Value {
        serde_json::from_str(
            completion["choices"][0]["message"]["content"]
                .as_str()
                .unwrap(),
        )
        .unwrap()
    };
    let object: Value = post(&client, url.clone(), ask(json!({"type": "json_object"})))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
        .parse::<Value>()
        .unwrap();
    assert_eq!(
        answer(object),
        json!({"schema": "json_object", "strict": false, "type": "object"})
    );
    let schema = json!({
        "type": "json_schema",
        "json_schema": {"name": "reply", "strict": true, "schema": {"type": "object", "properties": {"a": {"type": "string"}}}},
    });
    let schema: Value = post(&client, url.clone(), ask(schema))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
        .parse::<Value>()
        .unwrap();
    assert_eq!(
        answer(schema),
        json!({"schema": "reply", "strict": true, "type": "object"})
    );
    let text: Value = post(&client, url, ask(json!({"type": "text"})))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
        .parse::<Value>()
        .unwrap();
    assert_eq!(text["choices"][0]["message"]["content"], "no schema");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_pause_is_an_approval_required_error_and_its_session_waits_for_the_decision() {
    let (running, store, _dir) = start().await;
    let client = support::client();
    let url = format!("{}/v1/chat/completions", running.base);
    let request = json!({"model": "guarded", "messages": [{"role": "user", "content": "ship it"}]});
    let response = post(&client, url.clone(), request.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    let body: Value = response.text().await.unwrap().parse::<Value>().unwrap();
    let error = &body["error"];
    assert_eq!(error["code"], "approval_required", "{body}");
    assert_eq!(error["type"], "approval_required");
    assert_eq!(error["agent"], "guarded");
    assert_eq!(error["pending"][0]["id"], "call_d");
    assert_eq!(error["pending"][0]["function"]["name"], "deploy");
    let session = error["session"].as_str().unwrap().to_owned();
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains(&format!("/v1/sessions/{session}/approvals/call_d")),
        "{body}"
    );
    assert_eq!(
        store.list().await.unwrap(),
        std::slice::from_ref(&session),
        "kept"
    );

    // The decision the error names resumes the turn.
    let decided = post(
        &client,
        format!(
            "{}/v1/sessions/{session}/approvals/call_d?agent=guarded",
            running.base
        ),
        json!({"decision": "approve"}),
    )
    .send()
    .await
    .unwrap()
    .text()
    .await
    .unwrap();
    let end = events(&decided).pop().unwrap().1;
    assert_eq!(
        end["result"],
        json!({"status": "completed", "text": "deployed: ok"}),
        "{decided}"
    );

    // Streamed: the stream ends with the same error, never `finish_reason: "length"`.
    let mut streamed = request;
    streamed["stream"] = json!(true);
    let body = post(&client, url, streamed)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!body.contains("\"length\""), "{body}");
    let chunks: Vec<Value> = events(&body).into_iter().map(|(_, v)| v).collect();
    let error = &chunks[chunks.len() - 2]["error"];
    assert_eq!(error["code"], "approval_required", "{body}");
    let session = error["session"].as_str().unwrap();
    assert!(store.list().await.unwrap().iter().any(|s| s == session));
}

/// A store that counts every operation on it (and holds nothing).
#[derive(Default)]
struct Counting(AtomicUsize);

impl Counting {
    fn touched(&self) -> SessionError {
        self.0.fetch_add(1, Ordering::SeqCst);
        SessionError::BadId {
            id: String::new(),
            reason: "counting store",
        }
    }
}

impl SessionStore for Counting {
    type Lease = ();
    async fn open(&self, _: &str) -> Result<((), Vec<Message>), SessionError> {
        Err(self.touched())
    }
    async fn append(&self, _: &mut (), _: &[Message]) -> Result<(), SessionError> {
        Err(self.touched())
    }
    async fn rewrite(&self, _: &mut (), _: usize, _: &[Message]) -> Result<(), SessionError> {
        Err(self.touched())
    }
    async fn release(&self, _: ()) -> Result<(), SessionError> {
        Err(self.touched())
    }
    async fn load(&self, _: &str) -> Result<Vec<Message>, SessionError> {
        Err(self.touched())
    }
    async fn list(&self) -> Result<Vec<String>, SessionError> {
        Err(self.touched())
    }
    async fn delete(&self, _: &str) -> Result<(), SessionError> {
        Err(self.touched())
    }
}

fn bare() -> brute::Agent<impl brute::Handler<Env>> {
    brute_agent! {
        run |env: &Env| {
            let reply = usage(assistant(env));
            async move { Ok(reply) }
        };
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_completion_of_an_agent_without_a_session_touches_no_store() {
    let counting = Arc::new(Counting::default());
    let running = Running::start(
        Server::new(counting.clone())
            .agent("bare", bare())
            .bearer_token(TOKEN),
    )
    .await;
    let client = support::client();
    let url = format!("{}/v1/chat/completions", running.base);
    for stream in [false, true] {
        let body = post(
            &client,
            url.clone(),
            json!({"model": "bare", "messages": [{"role": "user", "content": WEATHER}], "tools": tools(), "stream": stream}),
        )
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
        // A stack without a loop: the client's call still comes back.
        assert!(body.contains("\"tool_calls\""), "{body}");
        assert!(body.contains("get_weather"), "{body}");
    }
    assert_eq!(counting.0.load(Ordering::SeqCst), 0, "no store traffic");

    // A server built without a store serves it too, and has no sessions.
    let running = Running::start(
        Server::without_store()
            .agent("bare", bare())
            .bearer_token(TOKEN),
    )
    .await;
    let completion: Value = post(
        &client,
        format!("{}/v1/chat/completions", running.base),
        json!({"model": "bare", "messages": [{"role": "user", "content": WEATHER}]}),
    )
    .send()
    .await
    .unwrap()
    .text()
    .await
    .unwrap()
    .parse::<Value>()
    .unwrap();
    assert_eq!(
        completion["choices"][0]["message"]["content"],
        "I have no weather tool."
    );
    let session = client
        .get(format!("{}/v1/sessions/alice", running.base))
        .header("authorization", format!("Bearer {TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(session.status(), 404);
    let ready = client
        .get(format!("{}/readyz", running.base))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 200);
}
