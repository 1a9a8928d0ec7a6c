//! `DefaultToolPipeline`: concurrency, order, same-file serialisation, timeouts,
//! panics, approval, truncation, events, and a model that corrects itself.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use brute::structured::{schemars, serde};
use brute::tools::{Approval, Decision, Tool, ToolContext, ToolError, ToolOutput, Truncation};
use brute::{
    Event, EventKind, Message, Role, ToolCall, brute_agent,
    middleware::{Loop, MaxIterations},
    providers::ScriptedModel,
    tool,
    tools::DefaultToolPipeline,
};
use serde_json::json;

/// Sleeps, then returns its label.
#[tool]
async fn sleep(
    /// Milliseconds to sleep.
    ms: u64,
    /// What to return.
    label: String,
) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    Ok(label)
}

/// Always panics.
#[tool]
async fn explode(reason: String) -> Result<String, ToolError> {
    panic!("boom: {reason}");
}

/// Fails with a message.
#[tool]
async fn fail(message: String) -> Result<String, ToolError> {
    Err(ToolError::failed(message))
}

/// Prints many lines.
#[tool]
async fn spam(lines: usize) -> Result<String, ToolError> {
    Ok((0..lines).map(|i| format!("line {i}\n")).collect())
}

/// Arguments of [`Touch`].
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(crate = "brute::structured::serde")]
#[schemars(crate = "brute::structured::schemars")]
struct TouchArgs {
    /// The file.
    path: String,
}

/// Records how many calls on the same file overlap.
struct Touch {
    in_flight: Arc<AtomicUsize>,
    max_seen: Arc<AtomicUsize>,
}

impl Tool for Touch {
    type Args = TouchArgs;
    fn name(&self) -> &str {
        "touch"
    }
    fn description(&self) -> &str {
        "Touches a file slowly."
    }
    fn mutates<'a>(&self, args: &'a TouchArgs) -> Option<&'a str> {
        Some(&args.path)
    }
    fn truncation(&self) -> Truncation {
        Truncation::Tail
    }
    async fn call(&self, args: TouchArgs, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_seen.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(50)).await;
        let path = cx.resolve(&args.path)?;
        let old = std::fs::read_to_string(&path).unwrap_or_default();
        std::fs::write(&path, format!("{old}x")).map_err(|e| ToolError::failed(e.to_string()))?;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        Ok(ToolOutput::text("touched"))
    }
}

fn call(id: &str, name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall::new(id, name, args)
}

fn tool_results(messages: &[Message]) -> Vec<(&str, &str)> {
    messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| (m.tool_call_id.as_deref().unwrap_or(""), m.content.as_str()))
        .collect()
}

/// Arguments of [`Meet`].
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(crate = "brute::structured::serde")]
#[schemars(crate = "brute::structured::schemars")]
struct MeetArgs {
    /// What to return.
    label: String,
}

/// Waits until every call of the batch has started, then returns its label: a batch of
/// them finishes only if its calls run at the same time (run one after the other, the
/// first would wait for the others forever, here until the pipeline's timeout).
struct Meet {
    all: Arc<tokio::sync::Barrier>,
}

impl Tool for Meet {
    type Args = MeetArgs;
    fn name(&self) -> &str {
        "meet"
    }
    fn description(&self) -> &str {
        "Waits for the other calls."
    }
    async fn call(&self, args: MeetArgs, _cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.all.wait().await;
        Ok(ToolOutput::text(args.label))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_calls_run_concurrently_and_keep_call_order() {
    let dir = tempfile::tempdir().unwrap();
    let calls: Vec<ToolCall> = (0..8)
        .map(|i| call(&format!("c{i}"), "meet", json!({"label": format!("r{i}")})))
        .collect();
    let model =
        ScriptedModel::per_turn([Message::tool_calls("", calls), Message::assistant("done")]);
    let meet = Meet {
        all: Arc::new(tokio::sync::Barrier::new(8)),
    };
    let agent = brute_agent! {
        use Loop::ToolResult;
        // The timeout only ends a failing run: calls that do not overlap never meet.
        use DefaultToolPipeline { tools: (meet,), root: dir.path(), timeout: Duration::from_secs(60) };
        run model;
    };
    let outcome = agent.start("go").await.unwrap();
    let got: Vec<(String, String)> = tool_results(&outcome.env.messages)
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    let expected: Vec<(String, String)> =
        (0..8).map(|i| (format!("c{i}"), format!("r{i}"))).collect();
    assert_eq!(got, expected);
    assert_eq!(outcome.text(), Some("done"));
}

#[tokio::test]
async fn results_keep_call_order_when_later_calls_finish_first() {
    let dir = tempfile::tempdir().unwrap();
    let calls: Vec<ToolCall> = (0..6)
        .map(|i| {
            call(
                &format!("c{i}"),
                "sleep",
                json!({"ms": 60 - i * 10, "label": format!("r{i}")}),
            )
        })
        .collect();
    let model =
        ScriptedModel::per_turn([Message::tool_calls("", calls), Message::assistant("done")]);
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: (Sleep,), root: dir.path() };
        run model;
    };
    let outcome = agent.start("go").await.unwrap();
    let labels: Vec<&str> = tool_results(&outcome.env.messages)
        .iter()
        .map(|r| r.1)
        .collect();
    assert_eq!(labels, ["r0", "r1", "r2", "r3", "r4", "r5"]);
}

#[tokio::test]
async fn the_concurrency_limit_bounds_calls_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let in_flight = Arc::new(AtomicUsize::new(0));
    let max_seen = Arc::new(AtomicUsize::new(0));
    let touch = Touch {
        in_flight: in_flight.clone(),
        max_seen: max_seen.clone(),
    };
    // Different files, but only two at a time.
    let calls: Vec<ToolCall> = (0..6)
        .map(|i| call(&format!("c{i}"), "touch", json!({"path": format!("f{i}")})))
        .collect();
    let model = ScriptedModel::per_turn([Message::tool_calls("", calls), Message::assistant("ok")]);
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: (touch,), root: dir.path(), concurrency: 2 };
        run model;
    };
    agent.start("go").await.unwrap();
    assert_eq!(max_seen.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn calls_on_the_same_file_are_serialised_and_others_run_in_parallel() {
    let dir = tempfile::tempdir().unwrap();
    let same_max = Arc::new(AtomicUsize::new(0));
    let touch = Touch {
        in_flight: Arc::new(AtomicUsize::new(0)),
        max_seen: same_max.clone(),
    };
    // `a.txt` and `./a.txt` are the same file.
    let calls = vec![
        call("1", "touch", json!({"path": "a.txt"})),
        call("2", "touch", json!({"path": "./a.txt"})),
        call("3", "touch", json!({"path": "sub/../a.txt"})),
    ];
    let model = ScriptedModel::per_turn([Message::tool_calls("", calls), Message::assistant("ok")]);
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: (touch,), root: dir.path() };
        run model;
    };
    agent.start("go").await.unwrap();
    assert_eq!(
        same_max.load(Ordering::SeqCst),
        1,
        "calls on one file overlapped"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "xxx"
    );

    let diff_max = Arc::new(AtomicUsize::new(0));
    let touch = Touch {
        in_flight: Arc::new(AtomicUsize::new(0)),
        max_seen: diff_max.clone(),
    };
    let calls = vec![
        call("1", "touch", json!({"path": "b.txt"})),
        call("2", "touch", json!({"path": "c.txt"})),
        call("3", "touch", json!({"path": "d.txt"})),
    ];
    let model = ScriptedModel::per_turn([Message::tool_calls("", calls), Message::assistant("ok")]);
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: (touch,), root: dir.path() };
        run model;
    };
    agent.start("go").await.unwrap();
    assert_eq!(
        diff_max.load(Ordering::SeqCst),
        3,
        "calls on different files did not overlap"
    );
}

#[tokio::test]
async fn a_model_that_corrects_itself_sees_every_result() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::per_turn([
        Message::tool_calls("", vec![call("u1", "slep", json!({"ms": 1, "label": "x"}))]),
        Message::tool_calls(
            "",
            vec![call("u2", "sleep", json!({"ms": "soon", "label": "x"}))],
        ),
        Message::tool_calls(
            "",
            vec![call("u3", "sleep", json!({"ms": 1, "label": "fixed"}))],
        ),
        Message::assistant("all good"),
    ]);
    let session = dir.path().join("session.jsonl");
    let mut agent = brute_agent! {
        use brute::middleware::SessionLog { path: session.clone() };
        use Loop::ToolResult;
        use MaxIterations { max: 10 };
        use DefaultToolPipeline { tools: (Sleep, Fail), root: dir.path() };
        run model;
    };
    let log = Arc::new(Mutex::new(Vec::new()));
    let sink = log.clone();
    agent.on(EventKind::ToolResult, move |_env, event| {
        if let Event::ToolResult { call, is_error, .. } = event {
            sink.lock().unwrap().push((call.id.clone(), *is_error));
        }
    });
    let starts = Arc::new(AtomicUsize::new(0));
    let counter = starts.clone();
    agent.on(EventKind::ToolCallStart, move |_env, _event| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    let outcome = agent.start("sleep a bit").await.unwrap();
    assert_eq!(outcome.text(), Some("all good"));
    let results = tool_results(&outcome.env.messages);
    assert_eq!(results.len(), 3);
    assert_eq!(results[0].0, "u1");
    assert!(
        results[0]
            .1
            .starts_with("Error: tool `slep`: unknown tool `slep`"),
        "{}",
        results[0].1
    );
    assert!(results[0].1.contains("sleep, fail"), "{}", results[0].1);
    assert_eq!(results[1].0, "u2");
    assert!(
        results[1].1.contains("tool `sleep`")
            && results[1].1.contains("`ms`")
            && results[1].1.contains("expected u64"),
        "{}",
        results[1].1
    );
    assert_eq!(results[2], ("u3", "fixed"));
    assert_eq!(
        *log.lock().unwrap(),
        [
            ("u1".to_string(), true),
            ("u2".to_string(), true),
            ("u3".to_string(), false)
        ]
    );
    assert_eq!(starts.load(Ordering::SeqCst), 3);
    // Tools are advertised once, not once per pass.
    assert_eq!(outcome.env.tools.len(), 2);
    // The session log holds the three results, each after its call.
    let lines: Vec<Message> = std::fs::read_to_string(&session)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let logged: Vec<&str> = lines
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.tool_call_id.as_deref().unwrap())
        .collect();
    assert_eq!(logged, ["u1", "u2", "u3"]);
    let roles: Vec<Role> = lines.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::Tool,
            Role::Assistant
        ]
    );
}

#[tokio::test]
async fn failures_become_error_results_and_the_turn_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let calls = vec![
        call("p", "explode", json!({"reason": "kaboom"})),
        call("f", "fail", json!({"message": "disk on fire"})),
        call("t", "sleep", json!({"ms": 5000, "label": "late"})),
        call("j", "sleep", json!("{\"ms\": ")),
        call("ok", "sleep", json!({"ms": 1, "label": "fine"})),
    ];
    let model = ScriptedModel::per_turn([
        Message::tool_calls("", calls),
        Message::assistant("recovered"),
    ]);
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline {
            tools: (Sleep, Explode, Fail),
            root: dir.path(),
            timeouts: [("sleep", Duration::from_millis(200))],
        };
        run model;
    };
    let outcome = agent.start("go").await.unwrap();
    assert_eq!(outcome.text(), Some("recovered"));
    let results = tool_results(&outcome.env.messages);
    let ids: Vec<&str> = results.iter().map(|r| r.0).collect();
    assert_eq!(ids, ["p", "f", "t", "j", "ok"]);
    assert_eq!(
        results[0].1,
        "Error: tool `explode`: panicked: boom: kaboom"
    );
    assert_eq!(results[1].1, "Error: tool `fail`: disk on fire");
    assert_eq!(
        results[2].1,
        "Error: tool `sleep`: timed out after 0.2s and was cancelled"
    );
    assert!(
        results[3]
            .1
            .starts_with("Error: tool `sleep`: the arguments are not valid JSON"),
        "{}",
        results[3].1
    );
    assert_eq!(results[4].1, "fine");
}

#[tokio::test]
async fn approval_allows_denies_and_rewrites() {
    let dir = tempfile::tempdir().unwrap();
    let calls = vec![
        call("a", "sleep", json!({"ms": 1, "label": "allowed"})),
        call("d", "fail", json!({"message": "never runs"})),
        call("r", "sleep", json!({"ms": 1, "label": "original"})),
    ];
    let model = ScriptedModel::per_turn([Message::tool_calls("", calls), Message::assistant("ok")]);
    let policy = Approval::new(|call| match (call.name.as_str(), call.id.as_str()) {
        ("fail", _) => Decision::Deny("failing is not allowed today".into()),
        (_, "r") => Decision::Rewrite(json!({"ms": 1, "label": "rewritten"})),
        _ => Decision::Allow,
    });
    let mut agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: (Sleep, Fail), root: dir.path(), approval: policy };
        run model;
    };
    // Every call the policy decided on (none is asked about) is reported as started.
    let started = Arc::new(Mutex::new(Vec::new()));
    let sink = started.clone();
    agent.on(EventKind::ToolCallStart, move |_env, event| {
        if let Event::ToolCallStart { call } = event {
            sink.lock().unwrap().push(call.id.clone());
        }
    });
    let outcome = agent.start("go").await.unwrap();
    assert_eq!(*started.lock().unwrap(), ["a", "d", "r"]);
    let results = tool_results(&outcome.env.messages);
    assert_eq!(results[0], ("a", "allowed"));
    assert_eq!(
        results[1],
        (
            "d",
            "Error: tool `fail`: the call was denied: failing is not allowed today"
        )
    );
    assert_eq!(results[2], ("r", "rewritten"));
    // The rewrite applies to the run, not to the record: the reply keeps the call the
    // model made (the pipeline copies a call only to rewrite it).
    assert_eq!(
        outcome.env.messages[1].tool_calls[2].arguments,
        json!({"ms": 1, "label": "original"})
    );
}

#[tokio::test]
async fn a_single_call_is_rewritten_for_its_run_only_and_reported_with_the_reply() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::per_turn([
        Message::tool_calls(
            "",
            vec![call("one", "sleep", json!({"ms": 1, "label": "asked"}))],
        ),
        Message::assistant("ok"),
    ]);
    let policy = Approval::new(|_| Decision::Rewrite(json!({"ms": 1, "label": "approved"})));
    let mut agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: (Sleep,), root: dir.path(), approval: policy, timeout: None };
        run model;
    };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let events = seen.clone();
    agent.on(EventKind::ToolResult, move |_env, event| {
        if let Event::ToolResult { call, result, .. } = event {
            events.lock().unwrap().push((
                call.id.clone(),
                call.arguments["label"].clone(),
                result.content.clone(),
            ));
        }
    });
    let outcome = agent.start("go").await.unwrap();
    assert_eq!(tool_results(&outcome.env.messages), [("one", "approved")]);
    assert_eq!(
        outcome.env.messages[1].tool_calls[0].arguments["label"],
        "asked"
    );
    // The event names the call as the model made it, with the result of the run.
    assert_eq!(
        *seen.lock().unwrap(),
        [("one".to_string(), json!("asked"), "approved".to_string())]
    );
}

#[tokio::test]
async fn long_outputs_are_cut_and_saved_in_full() {
    let dir = tempfile::tempdir().unwrap();
    let saved = tempfile::tempdir().unwrap();
    let model = ScriptedModel::per_turn([
        Message::tool_calls("", vec![call("s", "spam", json!({"lines": 5000}))]),
        Message::assistant("ok"),
    ]);
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: (Spam,), root: dir.path(), output_dir: saved.path() };
        run model;
    };
    let outcome = agent.start("go").await.unwrap();
    let result = tool_results(&outcome.env.messages)[0].1;
    assert!(result.starts_with("line 0\nline 1\n"));
    assert!(
        result.contains(
            "[Output truncated: showing 2000 of 5000 lines, 18890 of 48890 bytes; 30000 bytes not shown]"
        ),
        "{}",
        &result[result.len() - 300..]
    );
    let path = result
        .split("Full output saved to: ")
        .nth(1)
        .unwrap()
        .split(". Use")
        .next()
        .unwrap();
    assert!(path.starts_with(saved.path().to_str().unwrap()));
    let full = std::fs::read_to_string(path).unwrap();
    assert_eq!(full.lines().count(), 5000);
}

#[tokio::test]
async fn a_stack_without_tool_calls_only_advertises() {
    let dir = tempfile::tempdir().unwrap();
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: brute::tools::Tools::ALL, root: dir.path() };
        run |env| {
            let advertised = env.tools.len();
            async move { Ok(Message::assistant(format!("{advertised} tools"))) }
        };
    };
    let outcome = agent.start("hi").await.unwrap();
    assert_eq!(outcome.text(), Some("12 tools"));
    // The schemas are shared, not copied per pass.
    let again = agent.start("hi").await.unwrap();
    assert!(Arc::ptr_eq(
        &outcome.env.tools[0].parameters,
        &again.env.tools[0].parameters
    ));
}

#[tokio::test]
async fn secrets_are_redacted_from_results() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::per_turn([
        Message::tool_calls(
            "",
            vec![
                call(
                    "ok",
                    "sleep",
                    json!({"ms": 1, "label": "token=hunter2-hunter2"}),
                ),
                call("err", "fail", json!({"message": "bad hunter2-hunter2"})),
            ],
        ),
        Message::assistant("ok"),
    ]);
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: (Sleep, Fail), root: dir.path(), redact: ["hunter2-hunter2"] };
        run model;
    };
    let outcome = agent.start("go").await.unwrap();
    let results = tool_results(&outcome.env.messages);
    assert_eq!(results[0].1, "token=[redacted]");
    assert_eq!(results[1].1, "Error: tool `fail`: bad [redacted]");
}

#[tokio::test]
async fn a_full_stack_with_every_builtin_tool_runs_a_tool_turn() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "hello\n").unwrap();
    let log = dir.path().join("session.jsonl");
    let model = ScriptedModel::per_turn([
        Message::tool_calls(
            "",
            vec![
                call("r", "read", json!({"file_path": "notes.txt"})),
                call(
                    "w",
                    "write",
                    json!({"file_path": "out.txt", "content": "bye\n"}),
                ),
                call(
                    "s",
                    "shell",
                    json!({"command": "cat out.txt 2>/dev/null || echo none"}),
                ),
            ],
        ),
        Message::assistant("done"),
    ]);
    let agent = brute_agent! {
        use brute::middleware::SessionLog { path: log.clone() };
        use brute::middleware::SystemPrompt { prompt: "Be brief." };
        use Loop::ToolResult;
        use MaxIterations { max: 8 };
        use DefaultToolPipeline {
            tools: brute::tools::Tools::ALL,
            root: dir.path(),
            concurrency: 4,
            timeout: Duration::from_secs(30),
        };
        use brute::middleware::Retry { attempts: 2 };
        run model;
    };
    let outcome = agent.start("go").await.unwrap();
    assert_eq!(outcome.text(), Some("done"));
    let results = tool_results(&outcome.env.messages);
    assert_eq!(results[0], ("r", "1\thello"));
    assert!(
        results[1].1.starts_with("Wrote 4 bytes to out.txt."),
        "{}",
        results[1].1
    );
    assert!(
        results[2].1 == "bye\n" || results[2].1 == "none\n",
        "{}",
        results[2].1
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.txt")).unwrap(),
        "bye\n"
    );
}

/// A stage of one's own in the per-call pipeline: records every call that reaches it
/// and refuses `fail` calls. It reads checked calls only, so it declares that it sits
/// inside `Validate` (placing it above is a compile error).
#[derive(brute::Middleware)]
#[middleware(inside = brute::tools::ToolValidation)]
struct Audit<A> {
    app: A,
    seen: Arc<Mutex<Vec<String>>>,
}

impl<'a, A, T> brute::Handler<brute::tools::ToolCallEnv<'a, T>> for Audit<A>
where
    A: brute::Handler<brute::tools::ToolCallEnv<'a, T>>,
    T: brute::tools::ToolSet,
{
    async fn call(&self, env: &mut brute::tools::ToolCallEnv<'a, T>) -> Result<(), brute::Error> {
        self.seen.lock().unwrap().push(env.call.name.clone());
        if env.call.name == "fail" {
            env.result = Some(Err(ToolError::Denied("the audit refuses it".into())));
            return Ok(());
        }
        self.app.call(env).await
    }
}

#[tokio::test]
async fn the_per_call_pipeline_takes_stages_of_ones_own() {
    use brute::tools::{Execute, Snapshot, Validate};
    let dir = tempfile::tempdir().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let calls = vec![
        call("a", "sleep", json!({"ms": 1, "label": "ran"})),
        call("b", "fail", json!({"message": "x"})),
        call("c", "nope", json!({})),
    ];
    let model = ScriptedModel::per_turn([Message::tool_calls("", calls), Message::assistant("ok")]);
    let per_call = brute::pipeline! {
        use Validate;
        use Audit { seen: seen.clone() };
        use Snapshot;
        run Execute;
    };
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: (Sleep, Fail), root: dir.path(), pipeline: per_call };
        run model;
    };
    let outcome = agent.start("go").await.unwrap();
    let results = tool_results(&outcome.env.messages);
    assert_eq!(results[0], ("a", "ran"));
    assert_eq!(
        results[1],
        (
            "b",
            "Error: tool `fail`: the call was denied: the audit refuses it"
        )
    );
    assert!(results[2].1.contains("unknown tool `nope`"));
    // The unknown tool stopped at `Validate`, before the audit.
    assert_eq!(*seen.lock().unwrap(), ["sleep", "fail"]);
}

/// A scripted model holding an API key, as an HTTP provider does.
struct Keyed(ScriptedModel, &'static str);

const KEYED_KEY: &str = "sk-keyed-model-5e1f0a";

impl brute::Model for Keyed {
    async fn complete(&self, env: &brute::Env) -> Result<brute::Completion, brute::Error> {
        self.0.complete(env).await
    }

    fn secrets(&self) -> Vec<&str> {
        vec![self.1]
    }
}

/// A model that reads `k.txt` (call `c1`), then says it is done.
fn reads_the_key_file() -> ScriptedModel {
    ScriptedModel::per_turn([
        Message::tool_calls("", vec![call("c1", "read", json!({"file_path": "k.txt"}))]),
        Message::assistant("done"),
    ])
}

/// A turn that resumes an approved call runs it before any model call: the pipeline
/// hides the key the terminal handed over on an earlier pass of this agent, although
/// the env it resumes (as one loaded from a store would be) carries none.
#[tokio::test]
async fn a_resumed_call_hides_the_key_the_model_handed_over_earlier() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.txt"), KEYED_KEY).unwrap();
    let model = Keyed(reads_the_key_file(), KEYED_KEY);
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline {
            tools: brute::tools::Tools::ALL,
            root: dir.path(),
            env_secrets: false,
            approval: Approval::ask(["read"]),
        };
        run model;
    };
    let paused = agent.start("go").await.unwrap();
    assert!(paused.stop.awaiting_approval().is_some());
    let mut fresh = brute::Env::new();
    fresh.messages = paused.env.messages.clone();
    let outcome = agent
        .decide(fresh, "c1", brute::stream::Verdict::Approve)
        .await
        .unwrap();
    let result = tool_results(&outcome.env.messages)[0].1.to_string();
    assert!(!result.contains(KEYED_KEY), "{result}");
    assert!(result.contains("[redacted api key]"), "{result}");
}

/// An env carried from an agent whose model holds one key to an agent whose model
/// holds another (an application that switches models between turns): the pipeline
/// hides the key of the model that runs now, not only the one handed over first.
#[tokio::test]
async fn a_turn_on_another_model_hides_that_models_key() {
    const OTHER_KEY: &str = "sk-other-model-93c4d2";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.txt"), OTHER_KEY).unwrap();
    let first = Keyed(ScriptedModel::new([Message::assistant("hello")]), KEYED_KEY);
    let first = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: brute::tools::Tools::ALL, root: dir.path(), env_secrets: false };
        run first;
    };
    let mut env = first.start("hi").await.unwrap().env;
    let other = Keyed(reads_the_key_file(), OTHER_KEY);
    let other = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: brute::tools::Tools::ALL, root: dir.path(), env_secrets: false };
        run other;
    };
    env.messages.push(Message::user("read k.txt"));
    let outcome = other.turn(env).await.unwrap();
    let result = tool_results(&outcome.env.messages)[0].1.to_string();
    assert!(!result.contains(OTHER_KEY), "{result}");
    assert!(result.contains("[redacted api key]"), "{result}");
}

/// A call of a tool that runs on the client (`ClientTools`, as the server's chat
/// endpoint sets them) pauses the turn as an asked call does, even under a policy that
/// never asks (`AllowAll`, the default), while the other calls of the reply run; the
/// client's tool is advertised once, as the client gave it, beside the pipeline's own.
#[tokio::test]
async fn a_client_tools_call_pauses_the_turn_under_a_policy_that_never_asks() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::per_turn([
        Message::tool_calls(
            "",
            vec![
                call("c1", "remote", json!({})),
                call("c2", "sleep", json!({"ms": 1, "label": "local"})),
            ],
        ),
        Message::assistant("never reached"),
    ]);
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: Sleep, root: dir.path() };
        run model;
    };
    let mut env = agent.env();
    env.messages.push(Message::user("go"));
    env.tools.push(brute::model::ToolSpec::new(
        "remote",
        "Runs on the client.",
        json!({"type": "object", "properties": {}}),
    ));
    env.extensions
        .insert(brute::tools::ClientTools::new(["remote".to_string()]));
    let outcome = agent.turn(env).await.unwrap();
    assert_eq!(
        outcome.stop.awaiting_approval(),
        Some(&["c1".to_string()][..])
    );
    let results = tool_results(&outcome.env.messages);
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0].0, "c1");
    assert!(
        outcome.env.messages.iter().any(|m| m.awaiting_approval()),
        "{results:?}"
    );
    assert_eq!(results[1], ("c2", "local"));
    let names: Vec<&str> = outcome.env.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["remote", "sleep"]);
    assert_eq!(outcome.env.tools[0].description, "Runs on the client.");
}

/// A tool set whose one tool is renamed whenever `revision` changes, as an MCP
/// server's may be while an agent runs (it is only advertised: no call reaches it).
struct Renamed {
    revision: Arc<std::sync::atomic::AtomicU64>,
}

impl brute::tools::ToolSet for Renamed {
    // The empty set's call, which has no value: no call reaches this set.
    type Call<'s> = <() as brute::tools::ToolSet>::Call<'s>;

    fn specs(&self, out: &mut Vec<brute::model::ToolSpec>) {
        let name = format!("tool_v{}", self.revision.load(Ordering::SeqCst));
        out.push(brute::model::ToolSpec::new(
            name,
            "renamed on every revision",
            json!({"type": "object"}),
        ));
    }

    fn contains(&self, _name: &str) -> bool {
        false
    }

    fn names<'a>(&'a self, _out: &mut Vec<&'a str>) {}

    fn prepare(&self, _call: &ToolCall) -> Option<Result<Self::Call<'_>, ToolError>> {
        None
    }

    fn revision(&self) -> u64 {
        self.revision.load(Ordering::SeqCst)
    }
}

/// A set whose tools change between turns is advertised as it is now, not as the
/// pipeline first saw it (the specs computed once are reused only while the revision
/// is the same).
#[tokio::test]
async fn a_tool_set_that_changes_is_advertised_anew() {
    let dir = tempfile::tempdir().unwrap();
    let revision = Arc::new(std::sync::atomic::AtomicU64::new(1));
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline {
            tools: Renamed { revision: revision.clone() },
            root: dir.path(),
        };
        run |env| {
            let names: Vec<String> = env.tools.iter().map(|t| t.name.clone()).collect();
            async move { Ok(Message::assistant(names.join(","))) }
        };
    };
    assert_eq!(agent.start("hi").await.unwrap().text(), Some("tool_v1"));
    revision.store(2, Ordering::SeqCst);
    assert_eq!(agent.start("hi").await.unwrap().text(), Some("tool_v2"));
}

#[tokio::test]
async fn a_per_call_pipeline_without_validate_is_validated_by_execute() {
    use brute::tools::Execute;
    let dir = tempfile::tempdir().unwrap();
    let calls = vec![
        call("a", "sleep", json!({"ms": 1, "label": "ran"})),
        call("b", "nope", json!({})),
        call("c", "sleep", json!({"ms": "soon"})),
    ];
    let model = ScriptedModel::per_turn([Message::tool_calls("", calls), Message::assistant("ok")]);
    let per_call = brute::pipeline! {
        run Execute;
    };
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: (Sleep,), root: dir.path(), pipeline: per_call };
        run model;
    };
    let outcome = agent.start("go").await.unwrap();
    let results = tool_results(&outcome.env.messages);
    assert_eq!(results[0], ("a", "ran"));
    assert!(results[1].1.contains("unknown tool `nope`"), "{results:?}");
    assert!(results[2].1.contains("ms"), "{results:?}");
}
