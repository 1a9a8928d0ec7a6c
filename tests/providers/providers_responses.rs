//! The Responses API provider against a local server speaking its wire format: request
//! bodies checked field by field, replies built from the API reference's items, every
//! scenario run both non-streamed (one response object) and streamed (the documented
//! events: `response.created`, `response.output_item.added`, the deltas,
//! `response.output_item.done`, `response.completed`).

#![allow(clippy::unwrap_used)]

use crate::providers_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use brute::{
    Completion, Env, Error, EventKind, Message, Model, ModelError, ToolCall, brute_agent,
    message::Part,
    model::ToolSpec,
    providers::{Replay, Responses},
    structured::OutputSchema,
};
use providers_support::{Reply, Server};
use serde_json::{Value, json};

const KEY: &str = "sk-test-5d1e8a7c3f";

fn model(server: &Server, stream: bool) -> Responses {
    Responses::compatible(format!("{}/v1", server.url()), "gpt-5")
        .api_key(KEY)
        .stream(stream)
        .timeout(Duration::from_secs(20))
}

fn usage(input: u64, output: u64, cached: u64) -> Value {
    json!({
        "input_tokens": input, "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input + output
    })
}

fn response_object(status: &str, output: &[Value], usage: Value) -> Value {
    json!({
        "id": "resp_67ccd2bed1ec8190b14f964abc054267", "object": "response",
        "created_at": 1741476542, "status": status, "error": null, "incomplete_details": null,
        "model": "gpt-5-2025-08-07", "output": output, "parallel_tool_calls": true,
        "store": false, "usage": usage
    })
}

/// The reply whose output is `output`: one response object, or the events a server
/// streams for it (each item added empty, filled by deltas, then done).
fn reply(output: &[Value], usage: Value, stream: bool) -> Reply {
    if !stream {
        return Reply::json(&response_object("completed", output, usage).to_string());
    }
    let mut events = vec![json!({"type": "response.created", "sequence_number": 0,
        "response": response_object("in_progress", &[], Value::Null)})];
    for (index, item) in output.iter().enumerate() {
        let mut begun = item.clone();
        match item["type"].as_str().unwrap() {
            "message" => begun["content"] = json!([]),
            "function_call" => begun["arguments"] = json!(""),
            _ => begun["summary"] = json!([]),
        }
        begun["status"] = json!("in_progress");
        events.push(
            json!({"type": "response.output_item.added", "output_index": index, "item": begun}),
        );
        match item["type"].as_str().unwrap() {
            "message" => {
                let text = item["content"][0]["text"].as_str().unwrap();
                events.push(
                    json!({"type": "response.content_part.added", "output_index": index,
                    "item_id": item["id"], "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []}}),
                );
                for word in text.split_inclusive(' ') {
                    events.push(
                        json!({"type": "response.output_text.delta", "output_index": index,
                        "item_id": item["id"], "content_index": 0, "delta": word}),
                    );
                }
                events.push(
                    json!({"type": "response.output_text.done", "output_index": index,
                    "item_id": item["id"], "content_index": 0, "text": text}),
                );
            }
            "function_call" => {
                let arguments = item["arguments"].as_str().unwrap();
                let (a, b) = arguments.split_at(arguments.len() / 2);
                for delta in [a, b] {
                    events.push(json!({"type": "response.function_call_arguments.delta",
                        "output_index": index, "item_id": item["id"], "delta": delta}));
                }
                events.push(json!({"type": "response.function_call_arguments.done",
                    "output_index": index, "item_id": item["id"], "arguments": arguments}));
            }
            _ => {
                for (part, summary) in item["summary"].as_array().unwrap().iter().enumerate() {
                    events.push(json!({"type": "response.reasoning_summary_part.added",
                        "output_index": index, "item_id": item["id"], "summary_index": part,
                        "part": {"type": "summary_text", "text": ""}}));
                    for word in summary["text"].as_str().unwrap().split_inclusive(' ') {
                        events.push(json!({"type": "response.reasoning_summary_text.delta",
                            "output_index": index, "item_id": item["id"], "summary_index": part,
                            "delta": word}));
                    }
                }
            }
        }
        events.push(
            json!({"type": "response.output_item.done", "output_index": index, "item": item}),
        );
    }
    events.push(json!({"type": "response.completed",
        "response": response_object("completed", output, usage)}));
    let mut text = String::new();
    for (n, event) in events.iter_mut().enumerate() {
        event["sequence_number"] = json!(n);
        text.push_str(&format!(
            "event: {}\ndata: {event}\n\n",
            event["type"].as_str().unwrap()
        ));
    }
    Reply::stream_split(&text, 11)
}

fn message_item(text: &str) -> Value {
    json!({"type": "message", "id": "msg_67ccd2bf17f0819081ff3bb2cf6508e6", "status": "completed",
        "role": "assistant", "content": [{"type": "output_text", "text": text, "annotations": []}]})
}

fn reasoning_item() -> Value {
    json!({"type": "reasoning", "id": "rs_6820f383d7c08191846711c5df8233bc", "status": "completed",
        "summary": [
            {"type": "summary_text", "text": "The user wants the weather."},
            {"type": "summary_text", "text": "I will call get_weather."}
        ],
        "encrypted_content": "gAAAAABoIPOEtZ2Qk1kD0aZBrgNN0A"})
}

fn call_item(call_id: &str, arguments: &str) -> Value {
    json!({"type": "function_call", "id": format!("fc_{call_id}"), "call_id": call_id,
        "name": "get_weather", "arguments": arguments, "status": "completed"})
}

fn weather_tool() -> ToolSpec {
    ToolSpec::new(
        "get_weather",
        "Get current temperature for a given location.",
        json!({"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}),
    )
}

fn model_error(result: Result<Completion, Error>) -> ModelError {
    match result {
        Err(Error::Model(error)) => error,
        other => panic!("expected a model error, got {other:?}"),
    }
}

#[tokio::test]
async fn plain_reply_streamed_and_not_gives_the_same_message() {
    let mut results = Vec::new();
    for stream in [false, true] {
        let text = "Hello! How can I help you today?";
        let server = Server::start(vec![reply(
            &[message_item(text)],
            usage(36, 10, 32),
            stream,
        )])
        .await;
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let log = seen.clone();
        let model = model(&server, stream)
            .temperature(0.5)
            .max_output_tokens(300);
        let mut agent = brute_agent! { run model; };
        agent.on(EventKind::ContentDelta, move |_env, event| {
            if let brute::Event::ContentDelta(text) = event {
                log.lock().unwrap().push(text.to_string());
            }
        });
        let mut env = agent.env();
        env.messages.push(Message::system("Be kind."));
        env.messages.push(Message::user("Hello!"));
        let outcome = agent.turn(env).await.unwrap();

        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        assert_eq!(requests[0].path, "/v1/responses");
        assert_eq!(
            requests[0].header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
        let mut expected = json!({
            "model": "gpt-5",
            "input": [
                {"type": "message", "role": "system", "content": "Be kind."},
                {"type": "message", "role": "user", "content": "Hello!"}
            ],
            "store": false,
            "include": ["reasoning.encrypted_content"],
            "temperature": 0.5,
            "max_output_tokens": 300
        });
        if stream {
            expected["stream"] = json!(true);
        }
        assert_eq!(requests[0].json(), expected, "stream: {stream}");

        let reply = outcome.message().unwrap().clone();
        assert_eq!(reply, Message::assistant(text));
        assert_eq!(outcome.env.usage().input_tokens, 36);
        assert_eq!(outcome.env.usage().output_tokens, 10);
        assert_eq!(outcome.env.usage().cached_tokens, 32);
        let seen = seen.lock().unwrap().clone();
        if stream {
            assert!(seen.len() > 3, "one event per delta: {seen:?}");
            assert_eq!(seen.concat(), text);
        } else {
            assert!(seen.is_empty());
        }
        results.push(reply);
    }
    assert_eq!(results[0], results[1]);
}

/// A reasoning model calls two tools, then answers; returns the conversation.
async fn tool_round_trip(stream: bool, record: Option<&std::path::Path>) -> Vec<Message> {
    let first = [
        reasoning_item(),
        call_item("call_paris", r#"{"location":"Paris, France"}"#),
        call_item("call_bogota", r#"{"location":"Bogotá, Colombia"}"#),
    ];
    let answer = "It is 14°C in Paris and 19°C in Bogotá.";
    let server = Server::start(vec![
        reply(&first, usage(80, 40, 0), stream),
        reply(&[message_item(answer)], usage(150, 12, 64), stream),
    ])
    .await;
    let reasoning = Arc::new(Mutex::new(String::new()));
    let log = reasoning.clone();
    let mut model = model(&server, stream)
        .reasoning_effort("low")
        .reasoning_summary("auto")
        .parallel_tool_calls(true);
    if let Some(path) = record {
        model = model.record_to(path);
    }
    let listening = model.clone();
    let mut agent = brute_agent! { run listening; };
    agent.on(EventKind::ReasoningDelta, move |_env, event| {
        if let brute::Event::ReasoningDelta(text) = event {
            log.lock().unwrap().push_str(text);
        }
    });
    let mut env = agent.env();
    env.tools.push(weather_tool());
    env.messages
        .push(Message::user("Weather in Paris and Bogotá?"));
    let first = model.complete(&env).await.unwrap();
    assert_eq!(
        first.message.tool_calls,
        [
            ToolCall::new(
                "call_paris",
                "get_weather",
                json!({"location": "Paris, France"})
            ),
            ToolCall::new(
                "call_bogota",
                "get_weather",
                json!({"location": "Bogotá, Colombia"})
            ),
        ]
    );
    let summary = "The user wants the weather.\n\nI will call get_weather.";
    assert_eq!(first.message.reasoning(), Some(summary));
    if stream {
        assert_eq!(*reasoning.lock().unwrap(), summary);
    }
    env.messages.push(first.message);
    env.messages.push(Message::tool_result(
        "call_paris",
        r#"{"temperature_c":14}"#,
    ));
    env.messages.push(Message::tool_result(
        "call_bogota",
        r#"{"temperature_c":19}"#,
    ));
    let second = model.complete(&env).await.unwrap();
    assert_eq!(second.message, Message::assistant(answer));
    assert_eq!(second.usage.unwrap().cached_tokens, 64);
    env.messages.push(second.message);

    let requests = server.requests();
    let first_body = requests[0].json();
    assert_eq!(
        first_body["tools"],
        json!([{"type": "function", "name": "get_weather",
            "description": "Get current temperature for a given location.",
            "parameters": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]},
            "strict": false}])
    );
    assert_eq!(
        first_body["reasoning"],
        json!({"effort": "low", "summary": "auto"})
    );
    assert_eq!(first_body["parallel_tool_calls"], json!(true));
    // The reasoning item goes back as it came, with its encrypted content, before the
    // calls it led to; each result names its call.
    let mut sent_back = reasoning_item();
    sent_back.as_object_mut().unwrap().remove("status");
    assert_eq!(
        requests[1].json()["input"],
        json!([
            {"type": "message", "role": "user", "content": "Weather in Paris and Bogotá?"},
            sent_back,
            {"type": "function_call", "call_id": "call_paris", "name": "get_weather", "arguments": "{\"location\":\"Paris, France\"}"},
            {"type": "function_call", "call_id": "call_bogota", "name": "get_weather", "arguments": "{\"location\":\"Bogotá, Colombia\"}"},
            {"type": "function_call_output", "call_id": "call_paris", "output": "{\"temperature_c\":14}"},
            {"type": "function_call_output", "call_id": "call_bogota", "output": "{\"temperature_c\":19}"}
        ])
    );
    env.messages.into_vec()
}

#[tokio::test]
async fn function_calls_and_reasoning_go_back_the_same_streamed_and_not() {
    let plain = tool_round_trip(false, None).await;
    let streamed = tool_round_trip(true, None).await;
    assert_eq!(plain, streamed);
    // The carried reasoning survives the session's JSON form.
    let line = serde_json::to_string(&plain[1]).unwrap();
    let back: Message = serde_json::from_str(&line).unwrap();
    assert_eq!(back, plain[1]);
}

#[tokio::test]
async fn structured_output_images_and_documents_are_sent_in_the_apis_shapes() {
    for stream in [false, true] {
        let server = Server::start(vec![reply(
            &[message_item(r#"{"city":"Paris"}"#)],
            usage(900, 6, 0),
            stream,
        )])
        .await;
        let model = model(&server, stream).store(true);
        let mut env = Env::new();
        env.extensions.insert(OutputSchema::new(
            "city",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}),
        ));
        env.messages.push(
            Message::user("Which city?")
                .with_part(Part::image("image/png", b"\x89PNG").unwrap())
                .with_part(Part::image_url("https://example.com/eiffel.jpg"))
                .with_part(Part::pdf(b"%PDF-1.7").titled("guide.pdf"))
                .with_part(Part::document_url("https://example.com/map.pdf")),
        );
        env.messages.push(Message::tool_calls(
            "",
            vec![ToolCall::new("call_1", "look", json!({}))],
        ));
        env.messages.push(
            Message::tool_result("call_1", "the photo")
                .with_part(Part::image("image/jpeg", b"\xff\xd8").unwrap()),
        );
        let reply = model.complete(&env).await.unwrap();
        assert_eq!(reply.message.content, r#"{"city":"Paris"}"#);
        let body = server.requests()[0].json();
        assert_eq!(body["store"], json!(true));
        assert_eq!(body.get("include"), None, "stored: no encrypted reasoning");
        assert_eq!(
            body["text"],
            json!({"format": {"type": "json_schema", "name": "city", "strict": true,
                "schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}}})
        );
        assert_eq!(
            body["input"][0]["content"],
            json!([
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw==", "detail": "auto"},
                {"type": "input_image", "image_url": "https://example.com/eiffel.jpg", "detail": "auto"},
                {"type": "input_file", "filename": "guide.pdf", "file_data": "data:application/pdf;base64,JVBERi0xLjc="},
                {"type": "input_file", "file_url": "https://example.com/map.pdf"},
                {"type": "input_text", "text": "Which city?"}
            ])
        );
        assert_eq!(
            body["input"][2],
            json!({"type": "function_call_output", "call_id": "call_1", "output": [
                {"type": "input_text", "text": "the photo"},
                {"type": "input_image", "image_url": "data:image/jpeg;base64,/9g=", "detail": "auto"}
            ]})
        );
    }
}

#[tokio::test]
async fn a_bad_key_is_an_authentication_error_that_does_not_repeat_it() {
    let server = Server::start(vec![Reply::status(
        401,
        &[],
        &format!(
            r#"{{"error":{{"message":"Incorrect API key provided: {KEY}.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}}}"#
        ),
    )])
    .await;
    let model = model(&server, false);
    let mut env = Env::new();
    env.messages.push(Message::user("Hello!"));
    let result = model.complete(&env).await;
    let shown = format!("{result:?} {}", result.as_ref().err().unwrap());
    assert!(!shown.contains(KEY), "{shown}");
    assert!(
        shown.contains("Incorrect API key provided: [redacted]"),
        "{shown}"
    );
    assert!(matches!(model_error(result), ModelError::Authentication(_)));
}

#[tokio::test]
async fn failures_in_a_stream_are_typed_errors_without_the_key() {
    let failed = format!(
        "event: response.created\ndata: {}\n\nevent: response.failed\ndata: {}\n\n",
        json!({"type": "response.created", "response": response_object("in_progress", &[], Value::Null)}),
        json!({"type": "response.failed", "response": {"id": "resp_1", "status": "failed",
            "error": {"code": "server_error", "message": format!("The server had an error ({KEY})")}, "output": []}}),
    );
    let error_event = format!(
        "event: error\ndata: {}\n\n",
        json!({"type": "error", "code": "rate_limit_exceeded", "message": "Slow down", "param": null})
    );
    let items = [message_item("Hello there, friend.")];
    let Reply::Stream { pieces } = reply(&items, usage(1, 1, 0), true) else {
        unreachable!()
    };
    let whole: Vec<u8> = pieces.concat();
    let cut = String::from_utf8_lossy(&whole[..whole.len() - 120]).into_owned();
    let server = Server::start(vec![
        Reply::stream_split(&failed, 9),
        Reply::stream_split(&error_event, 9),
        Reply::stream_split(&cut, 13),
    ])
    .await;
    let model = model(&server, true);
    let mut env = Env::new();
    env.messages.push(Message::user("Hello!"));

    let failed = model.complete(&env).await;
    // What the server did, should the call end otherwise than by the stream's error.
    let shown = format!("{failed:?}\nthe server:\n{}", server.timeline());
    assert!(!shown.contains(KEY), "{shown}");
    assert!(
        matches!(model_error(failed), ModelError::Server { status: 500, ref message } if message.contains("The server had an error")),
        "{shown}"
    );
    let error = model_error(model.complete(&env).await);
    assert!(matches!(error, ModelError::RateLimited { .. }), "{error:?}");
    let cut = model_error(model.complete(&env).await);
    assert!(matches!(cut, ModelError::Connection(_)), "{cut:?}");
}

#[tokio::test]
async fn the_stream_size_limit_applies() {
    let long = "word ".repeat(400);
    let server = Server::start(vec![reply(&[message_item(&long)], usage(1, 400, 0), true)]).await;
    let model = model(&server, true).max_stream_bytes(4096);
    let mut env = Env::new();
    env.messages.push(Message::user("Talk."));
    let error = model_error(model.complete(&env).await);
    assert!(
        matches!(error, ModelError::TooLarge { limit: 4096, .. }),
        "{error:?}"
    );
}

/// A streamed reply is held to the response size limit by what it keeps (its text, or a
/// call's arguments), the stream itself far below its own limit.
#[tokio::test]
async fn a_streamed_reply_is_held_to_the_response_size_limit() {
    let long = "word ".repeat(2000);
    let arguments = json!({"city": "x".repeat(10_000)}).to_string();
    for item in [message_item(&long), call_item("call_1", &arguments)] {
        let server = Server::start(vec![reply(&[item], usage(1, 2000, 0), true)]).await;
        let model = model(&server, true).max_response_bytes(4096);
        let mut env = Env::new();
        env.messages.push(Message::user("Talk."));
        let error = model_error(model.complete(&env).await);
        assert!(
            matches!(&error, ModelError::TooLarge { limit: 4096, message } if message.contains("streamed reply")),
            "{error:?}"
        );
    }
}

#[tokio::test]
async fn recorded_responses_replay_identically() {
    for stream in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let tape = dir.path().join("tape.jsonl");
        let live = tool_round_trip(stream, Some(&tape)).await;
        let text = std::fs::read_to_string(&tape).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(text.contains(r#""provider":"responses""#), "{text}");
        let replay = Replay::from_file(&tape).unwrap();
        let mut env = Env::new();
        env.messages.push(live[0].clone());
        for expected in [&live[1], &live[4]] {
            let completion = replay.complete(&env).await.unwrap();
            assert_eq!(&completion.message, expected, "stream: {stream}");
            env.messages.push(completion.message);
        }
    }
}
