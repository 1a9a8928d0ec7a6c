//! Tracing: every built-in layer opens one span per pass, with fields named after the
//! OpenTelemetry GenAI conventions, and message content stays out by default.
//!
//! This binary holds a single test because it installs a global subscriber.

#![allow(clippy::unwrap_used)]

mod scripted_tools;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use brute::{
    Completion, Env, Message, Model, Usage, brute_agent,
    middleware::{Loop, MaxIterations, SystemPrompt},
    providers::ScriptedModel,
};
use scripted_tools::{RunTools, echo_calls};

type FieldMap = HashMap<String, String>;

/// The scripted model, reporting usage.
struct UsageModel(ScriptedModel);

impl Model for UsageModel {
    async fn complete(&self, env: &Env) -> Result<Completion, brute::Error> {
        let mut completion = self.0.complete(env).await?;
        completion.usage = Some(Usage::new(120, 7));
        Ok(completion)
    }

    fn name(&self) -> &str {
        self.0.name()
    }
}

/// A minimal subscriber that records span names and fields.

#[derive(Default)]
struct Spans {
    next: AtomicU64,
    /// (name, fields) by span id.
    spans: Mutex<HashMap<u64, (String, FieldMap)>>,
    /// Fields of every event.
    events: Mutex<Vec<HashMap<String, String>>>,
    /// The spans entered, innermost last, with their metadata: what
    /// `Span::current()` reads (the test runs on one thread).
    entered: Mutex<Vec<(u64, &'static tracing::Metadata<'static>)>>,
    /// The metadata of each span, by id.
    metadata: Mutex<HashMap<u64, &'static tracing::Metadata<'static>>>,
}

struct Fields<'a>(&'a mut HashMap<String, String>);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().to_string(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

#[derive(Clone, Default)]
struct Collector(Arc<Spans>);

impl tracing::Subscriber for Collector {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let id = self.0.next.fetch_add(1, Ordering::Relaxed) + 1;
        let mut fields = HashMap::new();
        attrs.record(&mut Fields(&mut fields));
        self.0.metadata.lock().unwrap().insert(id, attrs.metadata());
        self.0
            .spans
            .lock()
            .unwrap()
            .insert(id, (attrs.metadata().name().to_string(), fields));
        tracing::span::Id::from_u64(id)
    }
    fn record(&self, span: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        if let Some((_, fields)) = self.0.spans.lock().unwrap().get_mut(&span.into_u64()) {
            values.record(&mut Fields(fields));
        }
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut fields = HashMap::new();
        event.record(&mut Fields(&mut fields));
        self.0.events.lock().unwrap().push(fields);
    }
    fn enter(&self, span: &tracing::span::Id) {
        let id = span.into_u64();
        if let Some(metadata) = self.0.metadata.lock().unwrap().get(&id).copied() {
            self.0.entered.lock().unwrap().push((id, metadata));
        }
    }
    fn exit(&self, span: &tracing::span::Id) {
        let mut entered = self.0.entered.lock().unwrap();
        if let Some(at) = entered.iter().rposition(|(id, _)| *id == span.into_u64()) {
            entered.remove(at);
        }
    }
    fn current_span(&self) -> tracing_core::span::Current {
        match self.0.entered.lock().unwrap().last() {
            Some((id, metadata)) => {
                tracing_core::span::Current::new(tracing::span::Id::from_u64(*id), metadata)
            }
            None => tracing_core::span::Current::none(),
        }
    }
}

#[test]
fn every_layer_opens_a_span_per_pass_with_gen_ai_fields_and_no_content() {
    let collector = Collector::default();
    let state = collector.0.clone();
    // Global, and alone in this test binary: tracing caches per-callsite interest
    // process-wide, so a scoped subscriber races with tests running on other threads.
    tracing::subscriber::set_global_default(collector).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    tool_retry_attempts_are_in_the_call_span(&runtime, &state, dir.path());
    state.spans.lock().unwrap().clear();
    state.events.lock().unwrap().clear();
    let path = dir.path().join("s.jsonl");
    let script = ScriptedModel::per_turn([
        echo_calls("a", &["secret tool input"]),
        Message::assistant("a secret answer"),
    ])
    .named("test-model");
    let model = UsageModel(script);
    let mut agent = brute_agent! {
        use brute::middleware::SessionLog { path: path.clone() };
        use SystemPrompt { prompt: "sys" };
        use Loop::ToolResult;
        use MaxIterations { max: 5 };
        use RunTools;
        use brute::middleware::Retry;
        run model;
    };
    // Content capture is explicit; this function reads the OpenTelemetry variable.
    agent.capture_content_from_env();
    runtime.block_on(agent.start("a secret prompt")).unwrap();

    // The built-in tool pipeline: a span per pass, and one `execute_tool` per call.
    std::fs::write(dir.path().join("notes.txt"), "hello\n").unwrap();
    let reader = ScriptedModel::per_turn([
        Message::tool_calls(
            "",
            vec![brute::ToolCall::new(
                "r1",
                "read",
                serde_json::json!({"file_path": "notes.txt"}),
            )],
        ),
        Message::assistant("read it"),
    ]);
    let tools_agent = brute_agent! {
        use Loop::ToolResult;
        use brute::tools::DefaultToolPipeline { tools: brute::tools::Tools::READ_ONLY, root: dir.path() };
        run reader;
    };
    runtime.block_on(tools_agent.start("read")).unwrap();

    let spans = state.spans.lock().unwrap();
    let tools: Vec<_> = spans
        .values()
        .filter(|(n, _)| n == "execute_tool")
        .collect();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].1["gen_ai.tool.name"], "read");
    assert_eq!(tools[0].1["gen_ai.tool.call.id"], "r1");
    assert_eq!(tools[0].1["gen_ai.operation.name"], "execute_tool");
    assert_eq!(
        spans
            .values()
            .filter(|(n, _)| n == "brute.tool_pipeline")
            .count(),
        2
    );
    let count = |name: &str| spans.values().filter(|(n, _)| n == name).count();
    assert_eq!(count("invoke_agent"), 2);
    assert_eq!(count("brute.session_log"), 1);
    assert_eq!(count("brute.system_prompt"), 1);
    assert_eq!(count("brute.loop"), 2);
    // Two passes each: one span per pass for the pass and for every layer inside the loop.
    assert_eq!(count("brute.iteration"), 4);
    assert_eq!(count("brute.max_iterations"), 2);
    assert_eq!(count("brute.retry"), 2);
    assert_eq!(count("chat"), 4);
    for (name, fields) in spans
        .values()
        .filter(|(n, f)| n == "chat" && f["gen_ai.request.model"] == "test-model")
    {
        assert_eq!(fields["gen_ai.operation.name"], "chat", "{name}");
        assert_eq!(fields["gen_ai.request.model"], "test-model");
        assert_eq!(fields["otel.name"], "chat test-model");
        assert_eq!(fields["gen_ai.usage.input_tokens"], "120");
        assert_eq!(fields["gen_ai.usage.output_tokens"], "7");
    }
    let agent_span = spans.values().find(|(n, _)| n == "invoke_agent").unwrap();
    assert_eq!(
        spans
            .values()
            .filter(|(n, f)| n == "chat" && f["gen_ai.request.model"] == "test-model")
            .count(),
        2
    );
    assert_eq!(agent_span.1["gen_ai.operation.name"], "invoke_agent");
    let session = spans
        .values()
        .find(|(n, _)| n == "brute.session_log")
        .unwrap();
    assert_eq!(session.1["brute.session.loaded"], "0");
    // Message content stays out of traces unless capture is switched on (here through
    // `capture_content_from_env` and the OpenTelemetry variable).
    let events = state.events.lock().unwrap();
    let everything = format!("{:?} {:?}", *spans, *events);
    if std::env::var(CAPTURE).is_ok() {
        assert!(
            events.iter().any(|e| e
                .get("gen_ai.output.content")
                .is_some_and(|c| c == "a secret answer")),
            "content not captured: {everything}"
        );
        return;
    }
    assert!(
        !everything.contains("secret"),
        "content leaked into traces: {everything}"
    );
    // The same test with capture switched on, in a fresh process with the variable set
    // (the subscriber is global to the process).
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "every_layer_opens_a_span_per_pass_with_gen_ai_fields_and_no_content",
        ])
        .env(CAPTURE, "true")
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(
        status.success(),
        "with {CAPTURE}=true the content was not captured"
    );
}

/// Busy on its first call (a retryable failure), then answers.
#[brute::tool]
async fn busy_once() -> Result<String, brute::tools::ToolError> {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    if CALLS.fetch_add(1, Ordering::Relaxed) == 0 {
        return Err(brute::tools::ToolError::retryable("busy"));
    }
    Ok("done".into())
}

/// `ToolRetry`: the call's `execute_tool` span says how many attempts it took, and
/// the retry is an event in it.
fn tool_retry_attempts_are_in_the_call_span(
    runtime: &tokio::runtime::Runtime,
    state: &Spans,
    root: &std::path::Path,
) {
    use brute::tools::{DefaultToolPipeline, Execute, ToolRetry, Validate};
    let model = ScriptedModel::per_turn([
        Message::tool_calls(
            "",
            vec![brute::ToolCall::new(
                "b1",
                "busy_once",
                serde_json::json!({}),
            )],
        ),
        Message::assistant("ok"),
    ]);
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline {
            tools: (BusyOnce,),
            root: root,
            pipeline: brute::pipeline! {
                use Validate;
                use ToolRetry { base_delay: std::time::Duration::ZERO };
                run Execute;
            },
        };
        run model;
    };
    runtime.block_on(agent.start("go")).unwrap();
    let spans = state.spans.lock().unwrap();
    let call = spans
        .values()
        .find(|(n, f)| n == "execute_tool" && f["gen_ai.tool.call.id"] == "b1")
        .unwrap();
    assert_eq!(call.1["brute.tool.attempts"], "2");
    let events = state.events.lock().unwrap();
    assert!(
        events
            .iter()
            .any(|e| e.get("brute.tool.attempt").is_some_and(|a| a == "1")),
        "{events:?}"
    );
}

const CAPTURE: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";
