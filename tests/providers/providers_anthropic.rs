//! The Anthropic provider against a local server speaking the Messages wire format:
//! request bodies checked field by field, responses from the API reference's examples,
//! every scenario run both non-streamed and streamed.

#![allow(clippy::unwrap_used)]

use crate::providers_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use brute::{
    Completion, Env, Error, Event, EventKind, Message, Model, ModelError, ToolCall, brute_agent,
    model::ToolSpec, providers::Anthropic,
};
use providers_support::{Reply, Server};
use serde_json::{Value, json};

const KEY: &str = "sk-ant-api03-test-4d9e1f";

fn model(server: &Server, stream: bool) -> Anthropic {
    Anthropic::new("claude-sonnet-4-5")
        .base_url(server.url())
        .api_key(KEY)
        .stream(stream)
        .timeout(Duration::from_secs(20))
}

/// `event: {type}` / `data: {event}` pairs, as the Messages stream sends them.
fn sse(events: &[Value]) -> String {
    let mut text = String::new();
    for event in events {
        text.push_str(&format!(
            "event: {}\ndata: {event}\n\n",
            event["type"].as_str().unwrap()
        ));
    }
    text
}

fn message_start(input_tokens: u64) -> Value {
    json!({"type": "message_start", "message": {
        "id": "msg_014p7gG3wDgGV9EUtLvnow3U", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5", "stop_sequence": null, "content": [], "stop_reason": null,
        "usage": {"input_tokens": input_tokens, "output_tokens": 2}
    }})
}

fn text_delta(index: u64, text: &str) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}})
}

fn block_stop(index: u64) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

fn message_end(stop_reason: &str, output_tokens: u64) -> [Value; 2] {
    [
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": output_tokens}}),
        json!({"type": "message_stop"}),
    ]
}

fn hello_reply(stream: bool) -> Reply {
    if !stream {
        return Reply::json(
            r#"{
  "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
  "type": "message",
  "role": "assistant",
  "content": [{"type": "text", "text": "Hello! How can I help you today?"}],
  "model": "claude-sonnet-4-5",
  "stop_reason": "end_turn",
  "stop_sequence": null,
  "usage": {"input_tokens": 12, "output_tokens": 6}
}"#,
        );
    }
    let mut events = vec![
        message_start(12),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "ping"}),
    ];
    for piece in ["Hello", "! How can", " I help", " you today?"] {
        events.push(text_delta(0, piece));
    }
    events.push(block_stop(0));
    events.extend(message_end("end_turn", 6));
    Reply::stream_split(&sse(&events), 11)
}

fn weather_tool() -> ToolSpec {
    ToolSpec::new(
        "get_weather",
        "Get the current weather in a given location",
        json!({
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
            },
            "required": ["location"]
        }),
    )
}

const SIGNATURE: &str = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds5Ao8Gk";
const THINKING: &str =
    "The user wants the weather in San Francisco and in Zürich. I'll call get_weather twice.";

/// Extended thinking, a text block and two tool_use blocks, as in the tool-use and
/// extended-thinking guides.
fn tool_use_reply(stream: bool) -> Reply {
    if !stream {
        return Reply::json(
            &json!({
                "id": "msg_01Aq9w938a90dw8q",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "stop_reason": "tool_use",
                "stop_sequence": null,
                "content": [
                    {"type": "thinking", "thinking": THINKING, "signature": SIGNATURE},
                    {"type": "text", "text": "I'll check the current weather in both cities for you."},
                    {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather", "input": {"location": "San Francisco, CA", "unit": "celsius"}},
                    {"type": "tool_use", "id": "toolu_01B7x2kLmn3Pq8Rs4Tu6Vw9X", "name": "get_weather", "input": {"location": "Zürich, CH"}}
                ],
                "usage": {"input_tokens": 472, "output_tokens": 89, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 0}
            })
            .to_string(),
        );
    }
    let mut start = message_start(472);
    start["message"]["usage"]["cache_read_input_tokens"] = json!(100);
    start["message"]["usage"]["cache_creation_input_tokens"] = json!(0);
    let mut events = vec![
        start,
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
    ];
    let (a, b) = THINKING.split_at(30);
    for piece in [a, b] {
        events.push(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": piece}}));
    }
    events.push(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": SIGNATURE}}));
    events.push(block_stop(0));
    events.push(json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}));
    events.push(text_delta(1, "I'll check the current weather"));
    events.push(text_delta(1, " in both cities for you."));
    events.push(block_stop(1));
    events.push(json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather", "input": {}}}));
    for piece in [
        "",
        "{\"location\":",
        " \"San Francisco, CA\"",
        ", \"unit\": \"celsius\"}",
    ] {
        events.push(json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": piece}}));
    }
    events.push(block_stop(2));
    events.push(json!({"type": "content_block_start", "index": 3, "content_block": {"type": "tool_use", "id": "toolu_01B7x2kLmn3Pq8Rs4Tu6Vw9X", "name": "get_weather", "input": {}}}));
    for piece in ["{\"locati", "on\": \"Zü", "rich, CH\"}"] {
        events.push(json!({"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": piece}}));
    }
    events.push(block_stop(3));
    events.extend(message_end("tool_use", 89));
    // Six-byte pieces cut event lines, JSON and the two bytes of "ü".
    Reply::stream_split(&sse(&events), 6)
}

fn answer_reply(stream: bool) -> Reply {
    let text = "San Francisco: 15°C. Zürich: 9°C.";
    if !stream {
        return Reply::json(
            &json!({
                "id": "msg_02", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn", "stop_sequence": null,
                "usage": {"input_tokens": 620, "output_tokens": 14}
            })
            .to_string(),
        );
    }
    let mut events = vec![
        message_start(620),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        text_delta(0, "San Francisco: 15°C."),
        text_delta(0, " Zürich: 9°C."),
        block_stop(0),
    ];
    events.extend(message_end("end_turn", 14));
    Reply::stream_split(&sse(&events), 4)
}

async fn complete(model: &Anthropic, env: &Env) -> Result<Completion, Error> {
    model.complete(env).await
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
        let server = Server::start(vec![hello_reply(stream)]).await;
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let log = seen.clone();
        let model = model(&server, stream).max_tokens(1024).temperature(0.5);
        let mut agent = brute_agent! { run model; };
        agent.on(EventKind::ContentDelta, move |_env, event| {
            if let Event::ContentDelta(text) = event {
                log.lock().unwrap().push(text.to_string());
            }
        });
        let mut env = agent.env();
        env.messages
            .push(Message::system("You are a helpful assistant."));
        env.messages.push(Message::user("Hello, Claude"));
        let outcome = agent.turn(env).await.unwrap();

        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        let request = &requests[0];
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, "/v1/messages");
        assert_eq!(request.header("x-api-key"), Some(KEY));
        assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(request.header("content-type"), Some("application/json"));
        assert_eq!(request.header("authorization"), None);
        // Prompt caching is on by default: breakpoints on the system prompt and on the
        // conversation's last block (no tools here).
        let mut expected = json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 1024,
            "system": [{"type": "text", "text": "You are a helpful assistant.", "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "Hello, Claude", "cache_control": {"type": "ephemeral"}}
            ]}],
            "temperature": 0.5
        });
        if stream {
            expected["stream"] = json!(true);
        }
        assert_eq!(request.json(), expected, "stream: {stream}");

        let reply = outcome.message().unwrap().clone();
        assert_eq!(
            reply,
            Message::assistant("Hello! How can I help you today?")
        );
        assert_eq!(outcome.env.usage(), brute::Usage::new(12, 6));
        let seen = seen.lock().unwrap().clone();
        if stream {
            assert_eq!(seen.len(), 4, "{seen:?}");
            assert_eq!(seen.concat(), reply.content);
        } else {
            assert!(seen.is_empty());
        }
        results.push(reply);
    }
    assert_eq!(results[0], results[1]);
}

async fn tool_round_trip(stream: bool) -> (Vec<Message>, Vec<brute::Usage>, Vec<String>) {
    let server = Server::start(vec![tool_use_reply(stream), answer_reply(stream)]).await;
    let model = model(&server, stream)
        .max_tokens(16000)
        .thinking(10000)
        .stop(["END"])
        .param("tool_choice", json!({"type": "auto"}))
        // The wire shapes of this round trip without cache breakpoints (those are
        // checked by `cache_breakpoints_*`).
        .prompt_caching(false);
    let reasoning = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = reasoning.clone();
    let mut agent = brute_agent! { run model.clone(); };
    agent.on(EventKind::ReasoningDelta, move |_env, event| {
        if let Event::ReasoningDelta(text) = event {
            log.lock().unwrap().push(text.to_string());
        }
    });
    let mut env = agent.env();
    env.tools.push(weather_tool());
    env.messages.push(Message::system("You are a weather bot."));
    env.messages.push(Message::user(
        "What's the weather like in San Francisco and Zürich?",
    ));
    let mut usage = Vec::new();

    let first = complete(&model, &env).await.unwrap();
    usage.push(first.usage.unwrap());
    let mut expected = Message::tool_calls(
        "I'll check the current weather in both cities for you.",
        vec![
            ToolCall::new(
                "toolu_01A09q90qw90lq917835lq9",
                "get_weather",
                json!({"location": "San Francisco, CA", "unit": "celsius"}),
            ),
            ToolCall::new(
                "toolu_01B7x2kLmn3Pq8Rs4Tu6Vw9X",
                "get_weather",
                json!({"location": "Zürich, CH"}),
            ),
        ],
    );
    expected.set_reasoning(Some(THINKING.into()));
    expected.set_reasoning_signature(Some(SIGNATURE.into()));
    assert_eq!(first.message, expected, "stream: {stream}");
    env.messages.push(first.message);
    env.messages.push(Message::tool_result(
        "toolu_01A09q90qw90lq917835lq9",
        "15 degrees",
    ));
    env.messages.push(Message::tool_result(
        "toolu_01B7x2kLmn3Pq8Rs4Tu6Vw9X",
        "9 degrees",
    ));
    let second = complete(&model, &env).await.unwrap();
    usage.push(second.usage.unwrap());
    env.messages.push(second.message);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let tools = json!([{
        "name": "get_weather",
        "description": "Get the current weather in a given location",
        "input_schema": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
            },
            "required": ["location"]
        }
    }]);
    let first_body = requests[0].json();
    assert_eq!(first_body["tools"], tools);
    assert_eq!(
        first_body["thinking"],
        json!({"type": "enabled", "budget_tokens": 10000})
    );
    assert_eq!(first_body["max_tokens"], json!(16000));
    assert_eq!(first_body["stop_sequences"], json!(["END"]));
    assert_eq!(first_body["tool_choice"], json!({"type": "auto"}));
    assert_eq!(first_body["model"], json!("claude-sonnet-4-5"));
    assert_eq!(
        first_body["stream"],
        if stream { json!(true) } else { Value::Null }
    );
    assert_eq!(first_body["system"], json!("You are a weather bot."));
    let second_body = requests[1].json();
    assert_eq!(second_body["tools"], tools);
    assert_eq!(second_body["system"], json!("You are a weather bot."));
    // The thinking block goes back first, with its signature; both results form one
    // user turn of tool_result blocks.
    assert_eq!(
        second_body["messages"],
        json!([
            {"role": "user", "content": "What's the weather like in San Francisco and Zürich?"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": THINKING, "signature": SIGNATURE},
                {"type": "text", "text": "I'll check the current weather in both cities for you."},
                {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather", "input": {"location": "San Francisco, CA", "unit": "celsius"}},
                {"type": "tool_use", "id": "toolu_01B7x2kLmn3Pq8Rs4Tu6Vw9X", "name": "get_weather", "input": {"location": "Zürich, CH"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01A09q90qw90lq917835lq9", "content": "15 degrees"},
                {"type": "tool_result", "tool_use_id": "toolu_01B7x2kLmn3Pq8Rs4Tu6Vw9X", "content": "9 degrees"}
            ]}
        ])
    );
    let reasoning = reasoning.lock().unwrap().clone();
    (env.messages.into_vec(), usage, reasoning)
}

#[tokio::test]
async fn tool_use_round_trip_streamed_and_not_gives_the_same_messages() {
    let (plain, plain_usage, plain_reasoning) = tool_round_trip(false).await;
    let (streamed, streamed_usage, streamed_reasoning) = tool_round_trip(true).await;
    assert_eq!(plain, streamed);
    assert_eq!(plain_usage, streamed_usage);
    assert_eq!(plain_usage[0], brute::Usage::new(572, 89).with_cached(100));
    assert!(plain_reasoning.is_empty());
    assert_eq!(streamed_reasoning.concat(), THINKING);
    assert_eq!(
        plain.last().unwrap().content,
        "San Francisco: 15°C. Zürich: 9°C."
    );
}

#[test]
fn the_signature_is_saved_with_the_session_and_absent_otherwise() {
    let mut message = Message::assistant("hi");
    assert_eq!(
        serde_json::to_string(&message).unwrap(),
        r#"{"role":"assistant","content":"hi"}"#
    );
    message.set_reasoning(Some("think".into()));
    message.set_reasoning_signature(Some("sig".into()));
    let line = serde_json::to_string(&message).unwrap();
    assert_eq!(
        line,
        r#"{"role":"assistant","content":"hi","reasoning":"think","reasoning_signature":"sig"}"#
    );
    assert_eq!(serde_json::from_str::<Message>(&line).unwrap(), message);
}

#[tokio::test]
async fn rate_limit_carries_retry_after_and_the_next_call_succeeds() {
    for stream in [false, true] {
        let server = Server::start(vec![
            Reply::status(
                429,
                &[("retry-after", "3"), ("anthropic-ratelimit-requests-remaining", "0")],
                r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#,
            ),
            hello_reply(stream),
        ])
        .await;
        let model = model(&server, stream);
        let mut env = Env::new();
        env.messages.push(Message::user("Hello, Claude"));
        let error = model_error(complete(&model, &env).await);
        assert_eq!(
            error,
            ModelError::RateLimited {
                retry_after: Some(Duration::from_secs(3))
            }
        );
        let completion = complete(&model, &env).await.unwrap();
        assert_eq!(
            completion.message.content,
            "Hello! How can I help you today?"
        );
    }
}

#[tokio::test]
async fn server_errors_and_overload_are_server_errors() {
    let server = Server::start(vec![
        Reply::status(500, &[], r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#),
        Reply::status(529, &[], r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#),
        // An error event in the middle of a stream.
        Reply::stream_split(
            &sse(&[
                message_start(5),
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
            ]),
            9,
        ),
    ])
    .await;
    let mut env = Env::new();
    env.messages.push(Message::user("Hello"));
    let error = model_error(complete(&model(&server, false), &env).await);
    assert!(
        matches!(&error, ModelError::Server { status: 500, message } if message.contains("Internal server error")),
        "{error:?}"
    );
    let error = model_error(complete(&model(&server, false), &env).await);
    assert!(
        matches!(error, ModelError::Server { status: 529, .. }),
        "{error:?}"
    );
    let error = model_error(complete(&model(&server, true), &env).await);
    assert!(
        matches!(error, ModelError::Server { status: 529, .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn authentication_and_context_errors_are_typed_and_never_show_the_key() {
    let server = Server::start(vec![
        Reply::status(
            401,
            &[],
            &format!(r#"{{"type":"error","error":{{"type":"authentication_error","message":"invalid x-api-key: {KEY}"}}}}"#),
        ),
        Reply::status(
            400,
            &[],
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}"#,
        ),
    ])
    .await;
    let model = model(&server, false);
    assert!(!format!("{model:?}").contains(KEY));
    let mut env = Env::new();
    env.messages.push(Message::user("Hello"));
    let result = complete(&model, &env).await;
    let shown = format!("{result:?} {}", result.as_ref().err().unwrap());
    assert!(!shown.contains(KEY), "{shown}");
    assert!(matches!(model_error(result), ModelError::Authentication(_)));
    assert!(matches!(
        model_error(complete(&model, &env).await),
        ModelError::ContextTooLong(_)
    ));
}

#[tokio::test]
async fn malformed_responses_are_malformed_errors() {
    let bad_json =
        Reply::json(r#"{"id":"msg_1","type":"message","content":[{"type":"text","text":"Hel"#);
    let bad_event = Reply::Stream {
        pieces: vec![
            format!(
                "{}event: content_block_delta\ndata: {{oops\n\n",
                sse(&[message_start(3)])
            )
            .into_bytes(),
        ],
    };
    for (reply, stream) in [(bad_json, false), (bad_event, true)] {
        let server = Server::start(vec![reply]).await;
        let mut env = Env::new();
        env.messages.push(Message::user("Hello"));
        let error = model_error(complete(&model(&server, stream), &env).await);
        assert!(
            matches!(error, ModelError::Malformed(_)),
            "stream {stream}: {error:?}"
        );
    }
}

#[tokio::test]
async fn a_stream_cut_mid_tool_use_is_a_connection_error() {
    let Reply::Stream { pieces } = tool_use_reply(true) else {
        unreachable!()
    };
    let text = String::from_utf8(pieces.concat()).unwrap();
    let cut = text.find("rich, CH").unwrap();
    let early_end = Reply::Stream {
        pieces: vec![text.as_bytes()[..cut].to_vec()],
    };
    for reply in [Reply::drop_after(&text, cut, 50), early_end] {
        let server = Server::start(vec![reply]).await;
        let mut env = Env::new();
        env.tools.push(weather_tool());
        env.messages.push(Message::user("Weather?"));
        let error = model_error(complete(&model(&server, true), &env).await);
        assert!(matches!(error, ModelError::Connection(_)), "{error:?}");
    }
}

#[tokio::test]
async fn a_silent_server_hits_the_timeout() {
    for stream in [false, true] {
        let server = Server::start(vec![Reply::Stall(Duration::from_secs(30))]).await;
        let model = model(&server, stream).timeout(Duration::from_millis(200));
        let mut env = Env::new();
        env.messages.push(Message::user("Hello"));
        let error = model_error(complete(&model, &env).await);
        assert_eq!(error, ModelError::Timeout(Duration::from_millis(200)));
    }
}

#[tokio::test]
async fn thinking_survives_the_session_file_and_the_key_never_reaches_it() {
    let thinking_reply = |stream: bool| {
        if stream {
            let mut events = vec![
                message_start(20),
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": THINKING}}),
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": SIGNATURE}}),
                block_stop(0),
                json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
                text_delta(1, "Noted."),
                block_stop(1),
            ];
            events.extend(message_end("end_turn", 30));
            Reply::stream_split(&sse(&events), 13)
        } else {
            Reply::json(
                &json!({
                    "id": "msg_t", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                    "content": [{"type": "thinking", "thinking": THINKING, "signature": SIGNATURE},
                                {"type": "text", "text": "Noted."}],
                    "stop_reason": "end_turn", "stop_sequence": null,
                    "usage": {"input_tokens": 20, "output_tokens": 30}
                })
                .to_string(),
            )
        }
    };
    for stream in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.jsonl");
        let server = Server::start(vec![thinking_reply(stream), hello_reply(stream)]).await;
        let model = model(&server, stream).thinking(2048).prompt_caching(false);
        let agent = brute_agent! {
            use brute::middleware::SessionLog { path: path.clone() };
            run model;
        };
        agent.start("Remember the number 7.").await.unwrap();
        agent.start("Hello, Claude").await.unwrap();

        let session = std::fs::read_to_string(&path).unwrap();
        assert!(!session.contains(KEY), "{session}");
        assert!(session.contains(SIGNATURE), "{session}");
        // The second call was built from the session file: the signed thinking block
        // went back with the assistant turn.
        let second = server.requests()[1].json();
        assert_eq!(
            second["messages"],
            json!([
                {"role": "user", "content": "Remember the number 7."},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": THINKING, "signature": SIGNATURE},
                    {"type": "text", "text": "Noted."}
                ]},
                {"role": "user", "content": "Hello, Claude"}
            ]),
            "stream: {stream}"
        );
    }
}

#[tokio::test]
async fn recorded_responses_replay_identically() {
    for stream in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let tape = dir.path().join("tape.jsonl");
        let server = Server::start(vec![tool_use_reply(stream)]).await;
        let model = model(&server, stream).record_to(&tape);
        let mut env = Env::new();
        env.tools.push(weather_tool());
        env.messages.push(Message::user(
            "What's the weather like in San Francisco and Zürich?",
        ));
        let live = complete(&model, &env).await.unwrap();

        let text = std::fs::read_to_string(&tape).unwrap();
        assert!(!text.contains(KEY));
        let line: Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(line["provider"], "anthropic");
        assert!(
            line.get(if stream { "sse" } else { "body" }).is_some(),
            "{line}"
        );

        let replay = brute::providers::Replay::from_file(&tape).unwrap();
        let seen = Arc::new(Mutex::new(String::new()));
        let log = seen.clone();
        let mut agent = brute_agent! { run replay; };
        agent.on(EventKind::ReasoningDelta, move |_env, event| {
            if let Event::ReasoningDelta(text) = event {
                log.lock().unwrap().push_str(text);
            }
        });
        let outcome = agent
            .start("What's the weather like in San Francisco and Zürich?")
            .await
            .unwrap();
        assert_eq!(
            outcome.message().unwrap(),
            &live.message,
            "stream: {stream}"
        );
        // A recorded stream replays as a stream: its deltas are emitted again.
        assert_eq!(*seen.lock().unwrap(), if stream { THINKING } else { "" });
    }
}
