//! AG-UI 1.0 from brute-serve, driven by the official client (`@ag-ui/client`'s
//! `HttpAgent`, whose runs check every event against the protocol's schemas and
//! sequence rules) through `tests/agui_client/run.cjs`: a streamed answer, a thread
//! that the session remembers between runs, a server tool's call and result, an
//! approval pause as an `interrupt` outcome, a failed turn as `RUN_ERROR`, front-end
//! tools (offered to the model, the run ending on their calls, the next run's `tool`
//! messages resuming the turn, once per call; beside a server tool in one reply),
//! and the server's auth. A run that ends in the middle of its streamed text, done or
//! failed, ends the text message before the run (read from the raw stream). The client is installed by `cargo xtask test` into `.ci/npm`; a
//! missing client fails the test with that command.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use brute::session::{JsonlStore, SessionStore};
use brute::tools::{Approval, DefaultToolPipeline, ToolError};
use brute::{
    Env, Event, Message, Role, ToolCall, brute_agent,
    middleware::{Loop, MaxIterations, SessionLog},
    providers::ScriptedModel,
};
use brute_serve::Server;
use serde_json::{Value, json};
use support::{Running, TOKEN, post};

/// Tells the time in a city.
#[brute::tool]
async fn clock(
    /// The city.
    city: String,
) -> Result<String, ToolError> {
    Ok(format!("noon in {city}"))
}

/// Asks the clock about Paris, then reports what it said.
fn clock_script(env: &Env) -> Message {
    match env.messages.last() {
        Some(m) if m.role == Role::User => Message::tool_calls(
            "asking the clock",
            vec![ToolCall::new("c1", "clock", json!({ "city": "Paris" }))],
        ),
        Some(m) => Message::assistant(format!("it is {}", m.content)),
        None => Message::assistant("nothing to do"),
    }
}

/// Asks the front end's `confirm`, showing the tools it was offered; then reports
/// the answer.
fn confirm_script(env: &Env) -> Message {
    match env.messages.last() {
        Some(m) if m.role == Role::User => {
            let offered: Vec<Value> = env
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "parameters": *t.parameters}))
                .collect();
            Message::tool_calls(
                json!(offered).to_string(),
                vec![ToolCall::new("f1", "confirm", json!({ "question": "go?" }))],
            )
        }
        Some(m) => Message::assistant(format!("the user said {}", m.content)),
        None => Message::assistant("nothing to do"),
    }
}

/// Calls the server's clock and the front end's `confirm` in one reply; then reports
/// both results.
fn mixed_script(env: &Env) -> Message {
    let result = |id: &str| {
        env.messages
            .iter()
            .find(|m| m.tool_call_id.as_deref() == Some(id))
            .map(|m| m.content.clone())
            .unwrap_or_default()
    };
    match env.messages.last() {
        Some(m) if m.role == Role::User => Message::tool_calls(
            "",
            vec![
                ToolCall::new("m1", "clock", json!({ "city": "Paris" })),
                ToolCall::new("m2", "confirm", json!({ "question": "go?" })),
            ],
        ),
        _ => Message::assistant(format!("clock: {}; user: {}", result("m1"), result("m2"))),
    }
}

/// Calls the front end's `confirm` twice in one reply; then reports both answers.
fn twice_script(env: &Env) -> Message {
    match env.messages.last() {
        Some(m) if m.role == Role::User => Message::tool_calls(
            "",
            vec![
                ToolCall::new("t1", "confirm", json!({ "question": "this?" })),
                ToolCall::new("t2", "confirm", json!({ "question": "and that?" })),
            ],
        ),
        _ => {
            let answers: Vec<String> = env
                .messages
                .iter()
                .filter(|m| m.role == Role::Tool)
                .map(|m| format!("{}={}", m.tool_call_id.as_deref().unwrap_or("?"), m.content))
                .collect();
            Message::assistant(answers.join(", "))
        }
    }
}

/// The front end's tool, as the client offers it.
fn confirm_tool() -> Value {
    json!([{
        "name": "confirm",
        "description": "Asks the user to confirm.",
        "parameters": {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]},
    }])
}

/// A terminal written by hand: streams two pieces of text and stores the answer, but
/// reports no model response, so the run ends while its text message is open.
struct Cut;

impl brute::Handler<Env> for Cut {
    async fn call(&self, env: &mut Env) -> Result<(), brute::Error> {
        env.emit(Event::ContentDelta("half "));
        env.emit(Event::ContentDelta("an answer"));
        env.messages.push(Message::assistant("half an answer"));
        Ok(())
    }
}

/// Streams an echo of the last user message and the count of messages it was given.
fn echo(env: &Env) -> String {
    let last = env
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| m.content.clone())
        .unwrap_or_default();
    format!("echo: {last} ({} messages)", env.messages.len())
}

const CLIENT: &str = ".ci/npm/node_modules/@ag-ui/client/package.json";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Checks that node and the client are there; the command that installs them if not.
fn node_modules() -> PathBuf {
    assert!(
        root().join(CLIENT).is_file(),
        "{CLIENT} is missing: run `cargo xtask test` (or `npm install --prefix .ci/npm @ag-ui/client@1.0.0`)"
    );
    root().join(".ci/npm/node_modules")
}

async fn start(dir: &Path) -> Running {
    let store = Arc::new(JsonlStore::new(dir.join("sessions")));
    let echo = brute_agent! {
        use SessionLog { store: store.clone() };
        run |env: &Env| {
            let text = echo(env);
            let (head, tail) = text.split_at(6);
            env.emit(Event::ContentDelta(head));
            env.emit(Event::ContentDelta(tail));
            async move { Ok(Message::assistant(text)) }
        };
    };
    let clock = brute_agent! {
        use SessionLog { store: store.clone() };
        use Loop::ToolResult;
        use MaxIterations { max: 5 };
        use DefaultToolPipeline { tools: (Clock,), root: dir, env_secrets: false };
        run ScriptedModel::from_fn(clock_script);
    };
    let guarded = brute_agent! {
        use SessionLog { store: store.clone() };
        use Loop::ToolResult;
        use MaxIterations { max: 5 };
        use DefaultToolPipeline { tools: (Clock,), root: dir, env_secrets: false, approval: Approval::ask(["clock"]) };
        run ScriptedModel::from_fn(clock_script);
    };
    let front = brute_agent! {
        use SessionLog { store: store.clone() };
        use Loop::ToolResult;
        use MaxIterations { max: 5 };
        use DefaultToolPipeline { tools: (Clock,), root: dir, env_secrets: false };
        run ScriptedModel::from_fn(confirm_script);
    };
    let mixed = brute_agent! {
        use SessionLog { store: store.clone() };
        use Loop::ToolResult;
        use MaxIterations { max: 5 };
        use DefaultToolPipeline { tools: (Clock,), root: dir, env_secrets: false };
        run ScriptedModel::from_fn(mixed_script);
    };
    let twice = brute_agent! {
        use SessionLog { store: store.clone() };
        use Loop::ToolResult;
        use MaxIterations { max: 5 };
        use DefaultToolPipeline { tools: (Clock,), root: dir, env_secrets: false };
        run ScriptedModel::from_fn(twice_script);
    };
    let broken = brute_agent! {
        use SessionLog { store: store.clone() };
        run |_env: &Env| async {
            Err::<Message, _>(brute::Error::layer("model", "the model is down"))
        };
    };
    let cut = brute::Agent::new(brute::pipeline! {
        use SessionLog { store: store.clone() };
        run Cut;
    });
    // A model that fails half-way through its streamed answer.
    let cut_fails = brute_agent! {
        use SessionLog { store: store.clone() };
        run |env: &Env| {
            env.emit(Event::ContentDelta("half an "));
            async { Err::<Message, _>(brute::Error::layer("model", "the stream broke")) }
        };
    };
    let server = Server::new(store)
        .agent("echo", echo)
        .agent("cut", cut)
        .agent("cut_fails", cut_fails)
        .agent("clock", clock)
        .agent("guarded", guarded)
        .agent("front", front)
        .agent("mixed", mixed)
        .agent("twice", twice)
        .agent("broken", broken)
        .bearer_token(TOKEN);
    Running::start(server).await
}

/// Runs `inputs` on `thread` with the official client, one run each; one JSON value
/// per run (`events` and `newMessages`, or `error`).
async fn client_runs(url: &str, token: &str, thread: &str, inputs: &[&str]) -> Vec<Value> {
    front_end_runs(url, token, thread, &json!([]), inputs).await
}

/// [`client_runs`] with the front-end tools `tools` offered in every run (`@answer:TEXT`
/// answers their open calls, `@replay` sends the last result again: see run.cjs).
async fn front_end_runs(
    url: &str,
    token: &str,
    thread: &str,
    tools: &Value,
    inputs: &[&str],
) -> Vec<Value> {
    let modules = node_modules();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agui_client/run.cjs");
    let output = tokio::process::Command::new("node")
        .arg(script)
        .args([url, token, thread])
        .args(inputs)
        .env("NODE_PATH", modules)
        .env("AGUI_TOOLS", tools.to_string())
        .output()
        .await
        .unwrap_or_else(|e| panic!("node does not start ({e}): run `cargo xtask test`"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the client script failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}")))
        .collect()
}

fn types(run: &Value) -> Vec<String> {
    run["events"]
        .as_array()
        .unwrap_or_else(|| panic!("no events: {run}"))
        .iter()
        .map(|e| e["type"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn the_official_client_streams_a_run_and_the_thread_remembers() {
    let _no_scale_run = crate::ALONE.read().await;
    let dir = tempfile::tempdir().unwrap();
    let running = start(dir.path()).await;
    let runs = client_runs(
        &format!("{}/agui", running.base),
        TOKEN,
        "thread-1",
        &["hello", "again"],
    )
    .await;
    assert_eq!(runs.len(), 2);
    assert!(runs[0]["error"].is_null(), "{}", runs[0]);
    assert_eq!(
        types(&runs[0]),
        [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED"
        ]
    );
    let events = &runs[0]["events"];
    assert_eq!(events[0]["threadId"], "thread-1");
    assert_eq!(events[0]["runId"], "run-1");
    assert_eq!(events[5]["outcome"]["type"], "success");
    assert_eq!(
        runs[0]["newMessages"][0]["content"],
        "echo: hello (1 messages)"
    );
    // The session kept the first run: the second turn sees three messages.
    assert!(runs[1]["error"].is_null(), "{}", runs[1]);
    assert_eq!(
        runs[1]["newMessages"][0]["content"],
        "echo: again (3 messages)"
    );
}

#[tokio::test]
async fn a_server_tool_is_a_call_with_its_result() {
    let _no_scale_run = crate::ALONE.read().await;
    let dir = tempfile::tempdir().unwrap();
    let running = start(dir.path()).await;
    let runs = client_runs(
        &format!("{}/agui/clock", running.base),
        TOKEN,
        "thread-clock",
        &["what time is it in Paris?"],
    )
    .await;
    let run = &runs[0];
    assert!(run["error"].is_null(), "{run}");
    assert_eq!(
        types(run),
        [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "TOOL_CALL_RESULT",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED"
        ]
    );
    let events = &run["events"];
    assert_eq!(events[4]["toolCallName"], "clock");
    assert_eq!(events[4]["parentMessageId"], events[1]["messageId"]);
    let args: Value = serde_json::from_str(events[5]["delta"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"city": "Paris"}));
    assert_eq!(events[7]["toolCallId"], "c1");
    assert_eq!(events[7]["content"], "noon in Paris");
    assert_eq!(events[9]["delta"], "it is noon in Paris");
    // The client built the conversation from the events: the call, its result, the answer.
    let messages = run["newMessages"].as_array().unwrap();
    assert_eq!(messages[0]["toolCalls"][0]["function"]["name"], "clock");
    assert_eq!(messages[1]["role"], "tool");
    assert_eq!(messages[2]["content"], "it is noon in Paris");
}

#[tokio::test]
async fn an_approval_pause_is_an_interrupt_and_a_failed_turn_a_run_error() {
    let _no_scale_run = crate::ALONE.read().await;
    let dir = tempfile::tempdir().unwrap();
    let running = start(dir.path()).await;
    let paused = client_runs(
        &format!("{}/agui/guarded", running.base),
        TOKEN,
        "thread-guarded",
        &["what time is it?"],
    )
    .await;
    let run = &paused[0];
    assert!(run["error"].is_null(), "{run}");
    let last = run["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["type"], "RUN_FINISHED");
    assert_eq!(last["outcome"]["type"], "interrupt");
    assert_eq!(last["outcome"]["interrupts"][0]["toolCallId"], "c1");
    assert!(
        !types(run).contains(&"TOOL_CALL_RESULT".to_owned()),
        "{run}"
    );

    let failed = client_runs(
        &format!("{}/agui/broken", running.base),
        TOKEN,
        "thread-broken",
        &["hi"],
    )
    .await;
    let run = &failed[0];
    assert_eq!(types(run), ["RUN_STARTED", "RUN_ERROR"], "{run}");
    // The client sees the kind and the layer, never the layer's own message (the
    // server's log has it).
    let error = &run["events"][1];
    assert_eq!(error["code"], "layer", "{run}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("the layer `model` failed"), "{message}");
    assert!(!message.contains("the model is down"), "{message}");
}

#[tokio::test]
async fn the_endpoint_needs_the_token_and_refuses_what_it_cannot_honour() {
    let _no_scale_run = crate::ALONE.read().await;
    let dir = tempfile::tempdir().unwrap();
    let running = start(dir.path()).await;
    let runs = client_runs(
        &format!("{}/agui", running.base),
        "wrong",
        "thread-x",
        &["hi"],
    )
    .await;
    let error = runs[0]["error"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", runs[0]));
    assert!(error.contains("401"), "{error}");

    let client = support::client();
    let input = |extra: Value| {
        let mut input = json!({
            "threadId": "thread-y", "runId": "r1", "state": {}, "context": [], "forwardedProps": {},
            "tools": [], "messages": [{"id": "u1", "role": "user", "content": "hi"}],
        });
        if let (Some(i), Some(extra)) = (input.as_object_mut(), extra.as_object()) {
            i.extend(extra.clone());
        }
        input
    };
    let refused = [
        (
            json!({"tools": [
                {"name": "confirm", "description": "asks"},
                {"name": "confirm", "description": "asks again"},
            ]}),
            "tools[1].name: `confirm` is given twice",
        ),
        (
            json!({"tools": [{"name": "confirm", "description": "asks", "parameters": "none"}]}),
            "tools[0].parameters",
        ),
        (
            json!({"messages": [{"id": "t1", "role": "tool", "content": "x"}]}),
            "messages[0].toolCallId",
        ),
        (
            json!({"messages": [{"id": "a1", "role": "assistant", "content": "x"}]}),
            "messages[0]",
        ),
        (json!({"threadId": "../etc"}), "threadId"),
    ];
    for (extra, names) in refused {
        let response = post(
            &client,
            format!("{}/agui", running.base),
            input(extra.clone()),
        )
        .send()
        .await
        .unwrap();
        assert_eq!(response.status(), 400, "{extra}");
        let body: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(names), "{message}");
    }
    // A front-end tool may not take the name of one of the agent's own.
    let response = post(
        &client,
        format!("{}/agui/clock", running.base),
        input(json!({"tools": [{"name": "clock", "description": "the front end's clock"}]})),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("`clock`"), "{message}");
    // The tool pipeline refuses it for any caller: the chat-completions facade too.
    for stream in [false, true] {
        let response = post(
            &client,
            format!("{}/v1/chat/completions", running.base),
            json!({
                "model": "clock", "stream": stream,
                "messages": [{"role": "user", "content": "hi"}],
                "tools": [{"type": "function", "function": {"name": "clock"}}],
            }),
        )
        .send()
        .await
        .unwrap();
        assert_eq!(response.status(), 400, "stream: {stream}");
        let body = response.text().await.unwrap();
        assert!(body.contains("`clock`"), "{body}");
    }
}

/// Every event of `run` of type `kind`.
fn of_type<'a>(run: &'a Value, kind: &str) -> Vec<&'a Value> {
    run["events"]
        .as_array()
        .unwrap_or_else(|| panic!("no events: {run}"))
        .iter()
        .filter(|e| e["type"] == kind)
        .collect()
}

#[tokio::test]
async fn a_front_end_tool_call_ends_the_run_and_its_result_resumes_the_turn_once() {
    let _no_scale_run = crate::ALONE.read().await;
    let dir = tempfile::tempdir().unwrap();
    let running = start(dir.path()).await;
    let tools = confirm_tool();
    let runs = front_end_runs(
        &format!("{}/agui/front", running.base),
        TOKEN,
        "thread-front",
        &tools,
        &["may I?", "@answer:yes", "@replay"],
    )
    .await;

    // The model was offered the front end's tool as given, beside the agent's own.
    let run = &runs[0];
    assert!(run["error"].is_null(), "{run}");
    let text = of_type(run, "TEXT_MESSAGE_CONTENT")[0]["delta"]
        .as_str()
        .unwrap();
    let offered: Vec<Value> = serde_json::from_str(text).unwrap();
    assert!(offered.contains(&tools[0]), "{offered:?}");
    assert!(offered.iter().any(|t| t["name"] == "clock"), "{offered:?}");
    // Its call is shown, is not run, and the run finishes waiting for it.
    assert_eq!(
        types(run),
        [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "RUN_FINISHED"
        ]
    );
    let events = &run["events"];
    assert_eq!(events[4]["toolCallName"], "confirm");
    assert_eq!(events[4]["toolCallId"], "f1");
    assert_eq!(
        events[7]["outcome"],
        json!({"type": "success", "pendingToolCallIds": ["f1"]})
    );

    // The next run's `tool` message answers it: the model goes on from the result.
    let run = &runs[1];
    assert!(run["error"].is_null(), "{run}");
    assert_eq!(
        types(run),
        [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED"
        ]
    );
    assert_eq!(run["newMessages"][0]["content"], "the user said yes");
    assert_eq!(
        of_type(run, "RUN_FINISHED")[0]["outcome"]["type"],
        "success"
    );

    // A second answer to the same call is refused, in the protocol.
    let run = &runs[2];
    assert_eq!(types(run), ["RUN_STARTED", "RUN_ERROR"], "{run}");
    let error = &of_type(run, "RUN_ERROR")[0];
    assert_eq!(error["code"], "not_pending");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("`f1`") && message.contains("already"),
        "{message}"
    );

    // The session holds the call and its result once each.
    let store = JsonlStore::new(dir.path().join("sessions"));
    let history = store.load("thread-front").await.unwrap();
    let calls = history
        .iter()
        .flat_map(|m| &m.tool_calls)
        .filter(|c| c.id == "f1")
        .count();
    let results: Vec<&Message> = history
        .iter()
        .filter(|m| m.tool_call_id.as_deref() == Some("f1"))
        .collect();
    assert_eq!(calls, 1, "{history:?}");
    assert_eq!(results.len(), 1, "{history:?}");
    assert_eq!(results[0].content, "yes");
    assert!(!results[0].awaiting_approval());
    assert_eq!(
        history.last().map(|m| m.content.as_str()),
        Some("the user said yes")
    );
}

#[tokio::test]
async fn a_reply_with_a_server_and_a_front_end_call_runs_one_and_waits_for_the_other() {
    let _no_scale_run = crate::ALONE.read().await;
    let dir = tempfile::tempdir().unwrap();
    let running = start(dir.path()).await;
    let runs = front_end_runs(
        &format!("{}/agui/mixed", running.base),
        TOKEN,
        "thread-mixed",
        &confirm_tool(),
        &["what time is it, and may I?", "@answer:yes"],
    )
    .await;
    let run = &runs[0];
    assert!(run["error"].is_null(), "{run}");
    let starts: Vec<&Value> = of_type(run, "TOOL_CALL_START");
    assert_eq!(starts.len(), 2, "{run}");
    // The server's tool ran; the front end's did not.
    let results = of_type(run, "TOOL_CALL_RESULT");
    assert_eq!(results.len(), 1, "{run}");
    assert_eq!(results[0]["toolCallId"], "m1");
    assert_eq!(results[0]["content"], "noon in Paris");
    assert_eq!(
        of_type(run, "RUN_FINISHED")[0]["outcome"],
        json!({"type": "success", "pendingToolCallIds": ["m2"]})
    );
    // The client sends both results back (the server's it was shown, and its own):
    // the turn takes its own, and the model sees each once.
    let run = &runs[1];
    assert!(run["error"].is_null(), "{run}");
    assert!(of_type(run, "TOOL_CALL_RESULT").is_empty(), "{run}");
    assert_eq!(
        run["newMessages"][0]["content"],
        "clock: noon in Paris; user: yes"
    );
    let history = JsonlStore::new(dir.path().join("sessions"))
        .load("thread-mixed")
        .await
        .unwrap();
    for id in ["m1", "m2"] {
        let n = history
            .iter()
            .filter(|m| m.tool_call_id.as_deref() == Some(id))
            .count();
        assert_eq!(n, 1, "{id}: {history:?}");
    }
}

#[tokio::test]
async fn two_front_end_calls_of_one_reply_are_answered_in_one_run() {
    let _no_scale_run = crate::ALONE.read().await;
    let dir = tempfile::tempdir().unwrap();
    let running = start(dir.path()).await;
    let runs = front_end_runs(
        &format!("{}/agui/twice", running.base),
        TOKEN,
        "thread-twice",
        &confirm_tool(),
        &["may I do both?", "@answer:yes"],
    )
    .await;
    assert_eq!(
        of_type(&runs[0], "RUN_FINISHED")[0]["outcome"],
        json!({"type": "success", "pendingToolCallIds": ["t1", "t2"]}),
        "{}",
        runs[0]
    );
    let run = &runs[1];
    assert!(run["error"].is_null(), "{run}");
    assert_eq!(run["newMessages"][0]["content"], "t1=yes, t2=yes");
    assert_eq!(
        of_type(run, "RUN_FINISHED")[0]["outcome"]["type"],
        "success"
    );
}

/// The events of an AG-UI response body (one JSON per `data:` line).
fn sse_events(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| serde_json::from_str(data.trim()).unwrap())
        .collect()
}

#[tokio::test]
async fn results_for_calls_that_do_not_wait_for_the_front_end_are_refused() {
    let _no_scale_run = crate::ALONE.read().await;
    let dir = tempfile::tempdir().unwrap();
    let running = start(dir.path()).await;
    let client = support::client();
    let run = |thread: &str, messages: Value| {
        json!({
            "threadId": thread, "runId": "r1", "state": {}, "context": [], "forwardedProps": {},
            "tools": confirm_tool(), "messages": messages,
        })
    };
    // A result for a call the thread never had.
    let response = post(
        &client,
        format!("{}/agui/front", running.base),
        run(
            "thread-unknown",
            json!([{"id": "t1", "role": "tool", "toolCallId": "nope", "content": "yes"}]),
        ),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(response.status(), 200);
    let events = sse_events(&response.text().await.unwrap());
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[1]["type"], "RUN_ERROR");
    let message = events[1]["message"].as_str().unwrap();
    assert!(message.contains("no tool call `nope`"), "{message}");

    // A result for a call of the agent's own that waits for a person's approval.
    let paused = client_runs(
        &format!("{}/agui/guarded", running.base),
        TOKEN,
        "thread-asks",
        &["what time is it?"],
    )
    .await;
    assert!(paused[0]["error"].is_null(), "{}", paused[0]);
    let response = post(
        &client,
        format!("{}/agui/guarded", running.base),
        run(
            "thread-asks",
            json!([{"id": "t1", "role": "tool", "toolCallId": "c1", "content": "midnight"}]),
        ),
    )
    .send()
    .await
    .unwrap();
    let events = sse_events(&response.text().await.unwrap());
    assert_eq!(events[1]["type"], "RUN_ERROR", "{events:?}");
    let message = events[1]["message"].as_str().unwrap();
    assert!(message.contains("approvals/c1"), "{message}");
    // Nor does the approval endpoint take a result for it: the pipeline answers only
    // calls of tools the client runs.
    let response = post(
        &client,
        format!(
            "{}/v1/sessions/thread-asks/approvals/c1?agent=guarded",
            running.base
        ),
        json!({"decision": "answer", "content": "midnight"}),
    )
    .send()
    .await
    .unwrap();
    let status = response.status();
    let body = response.text().await.unwrap();
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("not a tool the client runs"), "{body}");
    let history = JsonlStore::new(dir.path().join("sessions"))
        .load("thread-asks")
        .await
        .unwrap();
    assert!(
        history.iter().all(|m| m.content != "midnight"),
        "{history:?}"
    );
}

#[tokio::test]
async fn a_run_that_ends_in_the_middle_of_its_text_ends_the_text_first() {
    let _no_scale_run = crate::ALONE.read().await;
    let dir = tempfile::tempdir().unwrap();
    let running = start(dir.path()).await;
    let client = support::client();
    for (agent, last) in [("cut", "RUN_FINISHED"), ("cut_fails", "RUN_ERROR")] {
        let input = json!({
            "threadId": format!("thread-{agent}"), "runId": "r1", "state": {}, "context": [],
            "forwardedProps": {}, "tools": [],
            "messages": [{"id": "u1", "role": "user", "content": "hi"}],
        });
        let response = post(&client, format!("{}/agui/{agent}", running.base), input)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{agent}");
        let events = sse_events(&response.text().await.unwrap());
        let kinds: Vec<&str> = events
            .iter()
            .map(|e| e["type"].as_str().unwrap_or_default())
            .collect();
        let content = if agent == "cut" { 2 } else { 1 };
        let mut expected = vec!["RUN_STARTED", "TEXT_MESSAGE_START"];
        expected.extend(std::iter::repeat_n("TEXT_MESSAGE_CONTENT", content));
        expected.extend(["TEXT_MESSAGE_END", last]);
        assert_eq!(kinds, expected, "{agent}: {events:?}");
        let end = &events[events.len() - 2];
        assert_eq!(end["messageId"], events[1]["messageId"], "{agent}");
    }
}
