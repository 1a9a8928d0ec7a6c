//! OTLP export (feature `otlp`): brute's spans reach an OTLP/HTTP receiver as protobuf,
//! with their OpenTelemetry GenAI attributes, their parents and their status.
//!
//! The receiver is an axum server on 127.0.0.1 that takes `POST /v1/traces`, decodes
//! the body with the official protobuf messages (`opentelemetry-proto`) and hands each
//! request to the test over a channel. This binary holds a single test because
//! `Otlp::install` sets the process's global subscriber.

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::mpsc;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, header};
use brute::{
    Completion, Env, Message, Model, ModelError, ToolCall, Usage, brute_agent,
    middleware::{Loop, MaxIterations},
    otlp::Otlp,
    providers::ScriptedModel,
    tools::{DefaultToolPipeline, Tools},
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::{Span, span::SpanKind, status::StatusCode as Code};
use prost::Message as _;

/// One request the receiver took: its headers and its decoded body.
struct Export {
    headers: HeaderMap,
    request: ExportTraceServiceRequest,
}

/// Starts the receiver on 127.0.0.1 on `runtime`; its address and the channel it sends
/// every decoded request on (before it answers, so a flush that returned has sent it).
fn receiver(runtime: &tokio::runtime::Runtime) -> (std::net::SocketAddr, mpsc::Receiver<Export>) {
    let (sender, exports) = mpsc::channel();
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |headers: HeaderMap, body: Bytes| {
            let sender = sender.clone();
            async move {
                let Ok(request) = ExportTraceServiceRequest::decode(body) else {
                    return (StatusCode::BAD_REQUEST, Vec::new());
                };
                let _ = sender.send(Export { headers, request });
                let response = ExportTraceServiceResponse::default().encode_to_vec();
                (StatusCode::OK, response)
            }
        }),
    );
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let address = listener.local_addr().unwrap();
    runtime.spawn(async move { axum::serve(listener, app).await });
    (address, exports)
}

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

/// A model whose every call fails as a rate-limited provider's does.
struct RateLimited;

impl Model for RateLimited {
    async fn complete(&self, _: &Env) -> Result<Completion, brute::Error> {
        Err(ModelError::RateLimited { retry_after: None }.into())
    }

    fn name(&self) -> &str {
        "limited-model"
    }
}

/// A span's attributes by key.
fn attributes(span: &Span) -> HashMap<&str, &any_value::Value> {
    span.attributes
        .iter()
        .filter_map(|KeyValue { key, value, .. }| {
            let value = value.as_ref()?.value.as_ref()?;
            Some((key.as_str(), value))
        })
        .collect()
}

fn string(value: &str) -> any_value::Value {
    any_value::Value::StringValue(value.to_string())
}

fn status(span: &Span) -> (Code, &str) {
    let status = span.status.clone().unwrap_or_default();
    let code = Code::try_from(status.code).unwrap();
    let message = span
        .status
        .as_ref()
        .map(|s| s.message.as_str())
        .unwrap_or_default();
    (code, message)
}

#[test]
fn a_turn_is_exported_over_otlp_http_with_gen_ai_attributes_parents_and_status() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (address, exports) = receiver(&runtime);
    // The README's three lines, with Langfuse's basic auth.
    let traces = Otlp::new(format!("http://{address}"), "otlp-test")
        .basic_auth("pk-lf-test", "sk-lf-test")
        .install()
        .unwrap();

    // A turn with two tool calls at once, one of which fails, then a single failing
    // call (the pipeline runs one call on a path of its own), then an answer.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "hello\n").unwrap();
    let script = ScriptedModel::per_turn([
        Message::tool_calls(
            "",
            vec![
                ToolCall::new("r1", "read", serde_json::json!({"file_path": "notes.txt"})),
                ToolCall::new(
                    "r2",
                    "read",
                    serde_json::json!({"file_path": "missing.txt"}),
                ),
            ],
        ),
        Message::tool_calls(
            "",
            vec![ToolCall::new(
                "r3",
                "read",
                serde_json::json!({"file_path": "gone.txt"}),
            )],
        ),
        Message::assistant("a secret answer"),
    ])
    .named("test-model");
    let model = UsageModel(script);
    let agent = brute_agent! {
        use Loop::ToolResult;
        use MaxIterations { max: 5 };
        use DefaultToolPipeline { tools: Tools::READ_ONLY, root: dir.path() };
        run model;
    };
    runtime.block_on(agent.start("a secret prompt")).unwrap();
    // A turn whose model call fails.
    let failing = brute_agent! { run RateLimited; };
    assert!(
        runtime
            .block_on(failing.start("a secret question"))
            .is_err()
    );

    traces.flush().unwrap();
    // Flushed: every export has reached the receiver, which sent it before answering.
    let received: Vec<Export> = exports.try_iter().collect();
    assert!(!received.is_empty(), "the receiver got no export");

    for export in &received {
        assert_eq!(
            export.headers[header::CONTENT_TYPE],
            "application/x-protobuf"
        );
        // base64("pk-lf-test:sk-lf-test")
        assert_eq!(
            export.headers[header::AUTHORIZATION],
            "Basic cGstbGYtdGVzdDpzay1sZi10ZXN0"
        );
    }
    let bytes: Vec<u8> = received
        .iter()
        .flat_map(|e| e.request.encode_to_vec())
        .collect();
    assert!(
        !String::from_utf8_lossy(&bytes).contains("secret"),
        "message content reached the export"
    );
    let mut spans: Vec<&Span> = Vec::new();
    for resource_spans in received.iter().flat_map(|e| &e.request.resource_spans) {
        let resource = resource_spans.resource.as_ref().unwrap();
        assert!(
            resource.attributes.iter().any(|a| a.key == "service.name"
                && a.value
                    == Some(AnyValue {
                        value: Some(string("otlp-test"))
                    })),
            "no service.name: {:?}",
            resource.attributes
        );
        for scope_spans in &resource_spans.scope_spans {
            assert_eq!(scope_spans.scope.as_ref().unwrap().name, "brute");
            spans.extend(&scope_spans.spans);
        }
    }
    let by_id: HashMap<&[u8], &Span> = spans.iter().map(|s| (&s.span_id[..], *s)).collect();
    let parent = |span: &Span| by_id.get(&span.parent_span_id[..]).copied();
    let ancestors = |span: &Span| -> Vec<String> {
        std::iter::successors(parent(span), |s| parent(s))
            .map(|s| s.name.clone())
            .collect()
    };
    let named =
        |name: &str| -> Vec<&Span> { spans.iter().copied().filter(|s| s.name == name).collect() };

    // The turns: roots of their own traces.
    let turns = named("invoke_agent");
    assert_eq!(
        turns.len(),
        2,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    for turn in &turns {
        assert!(turn.parent_span_id.is_empty());
        assert_eq!(turn.kind, SpanKind::Internal as i32);
        assert_eq!(
            attributes(turn)["gen_ai.operation.name"],
            &string("invoke_agent")
        );
    }
    assert_ne!(turns[0].trace_id, turns[1].trace_id);
    let (ok_turn, failed_turn) = match status(turns[0]).0 {
        Code::Error => (turns[1], turns[0]),
        _ => (turns[0], turns[1]),
    };
    assert_eq!(status(ok_turn), (Code::Unset, ""));

    // The model calls of the first turn: named `chat {model}`, clients, children of the
    // turn through the layers, with the model and the usage.
    let chats = named("chat test-model");
    assert_eq!(chats.len(), 3);
    for chat in &chats {
        assert_eq!(chat.trace_id, ok_turn.trace_id);
        assert_eq!(chat.kind, SpanKind::Client as i32);
        let chain = ancestors(chat);
        assert_eq!(
            chain.last().map(String::as_str),
            Some("invoke_agent"),
            "{chain:?}"
        );
        for layer in ["brute.loop", "brute.max_iterations", "brute.tool_pipeline"] {
            assert!(
                chain.iter().any(|n| n == layer),
                "{layer} not above chat: {chain:?}"
            );
        }
        let attributes = attributes(chat);
        assert_eq!(attributes["gen_ai.operation.name"], &string("chat"));
        assert_eq!(attributes["gen_ai.request.model"], &string("test-model"));
        assert_eq!(
            attributes["gen_ai.usage.input_tokens"],
            &any_value::Value::IntValue(120)
        );
        assert_eq!(
            attributes["gen_ai.usage.output_tokens"],
            &any_value::Value::IntValue(7)
        );
        assert_eq!(status(chat), (Code::Unset, ""));
    }

    // The tool calls: children of the pipeline's span, named by tool and call id; the
    // failed ones have the status `ERROR`.
    let tools = named("execute_tool");
    assert_eq!(tools.len(), 3);
    for tool in &tools {
        assert_eq!(tool.trace_id, ok_turn.trace_id);
        assert_eq!(
            parent(tool).map(|p| p.name.as_str()),
            Some("brute.tool_pipeline")
        );
        let attributes = attributes(tool);
        assert_eq!(attributes["gen_ai.operation.name"], &string("execute_tool"));
        assert_eq!(attributes["gen_ai.tool.name"], &string("read"));
        let id = &attributes["gen_ai.tool.call.id"];
        if *id == &string("r1") {
            assert_eq!(status(tool), (Code::Unset, ""));
            assert!(!attributes.contains_key("error.type"));
        } else {
            assert!(*id == &string("r2") || *id == &string("r3"), "{id:?}");
            assert_eq!(status(tool).0, Code::Error);
            assert_eq!(attributes["error.type"], &string("tool_error"));
        }
    }

    let mut ids: Vec<_> = tools
        .iter()
        .map(|tool| attributes(tool)["gen_ai.tool.call.id"].clone())
        .collect();
    ids.sort_by_key(|id| format!("{id:?}"));
    assert_eq!(ids, [string("r1"), string("r2"), string("r3")]);

    // The failed turn: its model call and the turn itself have the status `ERROR` with
    // the error's message and class.
    let failed_chats = named("chat limited-model");
    assert_eq!(failed_chats.len(), 1);
    let failed_chat = failed_chats[0];
    assert_eq!(
        parent(failed_chat).map(|p| p.span_id.clone()),
        Some(failed_turn.span_id.clone())
    );
    for span in [failed_chat, failed_turn] {
        assert_eq!(status(span), (Code::Error, "rate limited"), "{}", span.name);
        assert_eq!(attributes(span)["error.type"], &string("rate_limited"));
    }

    // Dropping the guard flushes and stops the export without an error or a hang.
    drop(traces);
}
