//! The OpenAI-compatible provider against a local server speaking the Chat Completions
//! wire format: request bodies checked field by field, responses from the API
//! reference's examples, every scenario run both non-streamed and streamed.

#![allow(clippy::unwrap_used)]

use crate::providers_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use brute::{
    Completion, Env, Error, EventKind, Message, Model, ModelError, ToolCall, brute_agent,
    model::ToolSpec,
    providers::{OpenAi, Replay},
};
use providers_support::{Reply, Server};
use serde_json::{Value, json};

const KEY: &str = "sk-test-7f3a9c2e1b";

fn model(server: &Server, stream: bool) -> OpenAi {
    OpenAi::compatible(format!("{}/v1", server.url()), "gpt-4.1")
        .api_key(KEY)
        .stream(stream)
        .timeout(Duration::from_secs(20))
}

/// `data: {chunk}` events, then `data: [DONE]`.
fn sse(chunks: &[Value]) -> String {
    let mut text = String::new();
    for chunk in chunks {
        text.push_str(&format!("data: {chunk}\n\n"));
    }
    text.push_str("data: [DONE]\n\n");
    text
}

fn chunk(delta: Value, finish_reason: Value) -> Value {
    json!({
        "id": "chatcmpl-123", "object": "chat.completion.chunk", "created": 1694268190,
        "model": "gpt-4.1", "system_fingerprint": "fp_44709d6fcb",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}]
    })
}

fn usage_chunk(prompt: u64, completion: u64, cached: u64) -> Value {
    json!({
        "id": "chatcmpl-123", "object": "chat.completion.chunk", "created": 1694268190,
        "model": "gpt-4.1", "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                  "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0}}
    })
}

/// The reply to "Hello!" from the API reference, as one JSON body or as a stream.
fn hello_reply(stream: bool) -> Reply {
    if !stream {
        return Reply::json(
            r#"{
  "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
  "object": "chat.completion",
  "created": 1741569952,
  "model": "gpt-4.1-2025-04-14",
  "choices": [
    {
      "index": 0,
      "message": {
        "role": "assistant",
        "content": "Hello! How can I assist you today?",
        "refusal": null,
        "annotations": []
      },
      "logprobs": null,
      "finish_reason": "stop"
    }
  ],
  "usage": {
    "prompt_tokens": 19,
    "completion_tokens": 10,
    "total_tokens": 29,
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
  },
  "service_tier": "default"
}"#,
        );
    }
    let mut chunks = vec![chunk(
        json!({"role": "assistant", "content": "", "refusal": null}),
        Value::Null,
    )];
    for piece in [
        "Hello", "!", " How", " can", " I", " assist", " you", " today", "?",
    ] {
        chunks.push(chunk(json!({"content": piece}), Value::Null));
    }
    chunks.push(chunk(json!({}), json!("stop")));
    chunks.push(usage_chunk(19, 10, 0));
    Reply::stream_split(&sse(&chunks), 7)
}

fn weather_tool() -> ToolSpec {
    ToolSpec::new(
        "get_weather",
        "Get current temperature for a given location.",
        json!({
            "type": "object",
            "properties": {"location": {"type": "string", "description": "City and country e.g. Bogotá, Colombia"}},
            "required": ["location"],
            "additionalProperties": false
        }),
    )
}

/// Two parallel calls of `get_weather`, as in the function-calling guide.
fn tool_calls_reply(stream: bool) -> Reply {
    if !stream {
        return Reply::json(
            r#"{
  "id": "chatcmpl-abc123",
  "object": "chat.completion",
  "created": 1699896916,
  "model": "gpt-4.1-2025-04-14",
  "choices": [
    {
      "index": 0,
      "message": {
        "role": "assistant",
        "content": null,
        "tool_calls": [
          {"id": "call_12345xyz", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\":\"Paris, France\"}"}},
          {"id": "call_67890abc", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\":\"Bogotá, Colombia\"}"}}
        ],
        "refusal": null
      },
      "logprobs": null,
      "finish_reason": "tool_calls"
    }
  ],
  "usage": {"prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99, "prompt_tokens_details": {"cached_tokens": 64}}
}"#,
        );
    }
    // The streaming guide's shape: the first delta of a call carries its id and name,
    // later ones only `arguments` fragments, all keyed by `index`.
    let call = |index: u64, id: Value, name: Value, arguments: &str| {
        json!({"tool_calls": [{"index": index, "id": id, "type": if id.is_null() { Value::Null } else { json!("function") },
                               "function": {"name": name, "arguments": arguments}}]})
    };
    let mut chunks = vec![chunk(
        json!({"role": "assistant", "content": null}),
        Value::Null,
    )];
    chunks.push(chunk(
        call(0, json!("call_12345xyz"), json!("get_weather"), ""),
        Value::Null,
    ));
    for fragment in ["{\"", "location", "\":\"", "Paris", ", France", "\"}"] {
        chunks.push(chunk(
            call(0, Value::Null, Value::Null, fragment),
            Value::Null,
        ));
    }
    chunks.push(chunk(
        call(1, json!("call_67890abc"), json!("get_weather"), ""),
        Value::Null,
    ));
    for fragment in ["{\"location\":", "\"Bogotá,", " Colombia\"}"] {
        chunks.push(chunk(
            call(1, Value::Null, Value::Null, fragment),
            Value::Null,
        ));
    }
    chunks.push(chunk(json!({}), json!("tool_calls")));
    chunks.push(usage_chunk(82, 17, 64));
    // Five-byte pieces cut lines, JSON and the two bytes of "á".
    Reply::stream_split(&sse(&chunks), 5)
}

fn weather_answer_reply(stream: bool) -> Reply {
    let text = "It is 14°C in Paris and 19°C in Bogotá.";
    if !stream {
        return Reply::json(
            &json!({
                "id": "chatcmpl-abc124", "object": "chat.completion", "created": 1699896917, "model": "gpt-4.1",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": null},
                             "logprobs": null, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 120, "completion_tokens": 15, "total_tokens": 135}
            })
            .to_string(),
        );
    }
    let mut chunks = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    for piece in ["It is 14°C", " in Paris and", " 19°C in Bogotá."] {
        chunks.push(chunk(json!({"content": piece}), Value::Null));
    }
    chunks.push(chunk(json!({}), json!("stop")));
    chunks.push(usage_chunk(120, 15, 0));
    Reply::stream_split(&sse(&chunks), 3)
}

async fn complete(model: &OpenAi, env: &Env) -> Result<Completion, Error> {
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
        let model = model(&server, stream).temperature(0.7);
        let mut agent = brute_agent! { run model; };
        agent.on(EventKind::ContentDelta, move |_env, event| {
            if let brute::Event::ContentDelta(text) = event {
                log.lock().unwrap().push(text.to_string());
            }
        });
        let mut env = agent.env();
        env.messages
            .push(Message::system("You are a helpful assistant."));
        env.messages.push(Message::user("Hello!"));
        let outcome = agent.turn(env).await.unwrap();

        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        let request = &requests[0];
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, "/v1/chat/completions");
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
        assert_eq!(request.header("content-type"), Some("application/json"));
        let mut expected = json!({
            "model": "gpt-4.1",
            "messages": [
                {"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "Hello!"}
            ],
            "temperature": 0.7
        });
        if stream {
            expected["stream"] = json!(true);
            expected["stream_options"] = json!({"include_usage": true});
        }
        assert_eq!(request.json(), expected, "stream: {stream}");

        let reply = outcome.message().unwrap().clone();
        assert_eq!(
            reply,
            Message::assistant("Hello! How can I assist you today?")
        );
        assert_eq!(outcome.env.usage(), brute::Usage::new(19, 10));
        let seen = seen.lock().unwrap().clone();
        if stream {
            assert!(seen.len() > 5, "one event per delta: {seen:?}");
            assert_eq!(seen.concat(), reply.content);
        } else {
            assert!(seen.is_empty());
        }
        results.push(reply);
    }
    assert_eq!(results[0], results[1]);
}

/// Runs the two-call tool round trip and returns the final conversation.
async fn tool_round_trip(
    stream: bool,
    record: Option<&std::path::Path>,
) -> (Vec<Message>, Vec<brute::Usage>) {
    let server = Server::start(vec![tool_calls_reply(stream), weather_answer_reply(stream)]).await;
    let mut model = model(&server, stream)
        .parallel_tool_calls(true)
        .max_completion_tokens(256)
        .seed(7)
        .reasoning_effort("low")
        .param("user", json!("user-1234"));
    if let Some(path) = record {
        model = model.record_to(path);
    }
    let mut env = Env::new();
    env.tools.push(weather_tool());
    env.messages.push(Message::user(
        "What's the weather like in Paris and Bogotá today?",
    ));
    let mut usage = Vec::new();

    let first = complete(&model, &env).await.unwrap();
    usage.push(first.usage.unwrap());
    assert_eq!(
        first.message,
        Message::tool_calls(
            "",
            vec![
                ToolCall::new(
                    "call_12345xyz",
                    "get_weather",
                    json!({"location": "Paris, France"})
                ),
                ToolCall::new(
                    "call_67890abc",
                    "get_weather",
                    json!({"location": "Bogotá, Colombia"})
                ),
            ]
        ),
        "stream: {stream}"
    );
    env.messages.push(first.message);
    env.messages.push(Message::tool_result(
        "call_12345xyz",
        r#"{"temperature_c":14}"#,
    ));
    env.messages.push(Message::tool_result(
        "call_67890abc",
        r#"{"temperature_c":19}"#,
    ));
    let second = complete(&model, &env).await.unwrap();
    usage.push(second.usage.unwrap());
    env.messages.push(second.message);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let tools = json!([{
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get current temperature for a given location.",
            "parameters": {
                "type": "object",
                "properties": {"location": {"type": "string", "description": "City and country e.g. Bogotá, Colombia"}},
                "required": ["location"],
                "additionalProperties": false
            }
        }
    }]);
    let first_body = requests[0].json();
    assert_eq!(first_body["tools"], tools);
    assert_eq!(first_body["parallel_tool_calls"], json!(true));
    assert_eq!(first_body["max_completion_tokens"], json!(256));
    assert_eq!(first_body["seed"], json!(7));
    assert_eq!(first_body["reasoning_effort"], json!("low"));
    assert_eq!(first_body["user"], json!("user-1234"));
    assert_eq!(first_body["model"], json!("gpt-4.1"));
    assert_eq!(first_body.get("max_tokens"), None);
    assert_eq!(first_body.get("temperature"), None);
    assert_eq!(
        first_body["stream"],
        if stream { json!(true) } else { Value::Null }
    );
    assert_eq!(
        first_body["messages"],
        json!([{"role": "user", "content": "What's the weather like in Paris and Bogotá today?"}])
    );
    let second_body = requests[1].json();
    assert_eq!(second_body["tools"], tools);
    assert_eq!(
        second_body["messages"],
        json!([
            {"role": "user", "content": "What's the weather like in Paris and Bogotá today?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_12345xyz", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\":\"Paris, France\"}"}},
                {"id": "call_67890abc", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\":\"Bogotá, Colombia\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_12345xyz", "content": "{\"temperature_c\":14}"},
            {"role": "tool", "tool_call_id": "call_67890abc", "content": "{\"temperature_c\":19}"}
        ])
    );
    (env.messages.into_vec(), usage)
}

#[tokio::test]
async fn tool_round_trip_streamed_and_not_gives_the_same_messages() {
    let (plain, plain_usage) = tool_round_trip(false, None).await;
    let (streamed, streamed_usage) = tool_round_trip(true, None).await;
    assert_eq!(plain, streamed);
    assert_eq!(plain_usage, streamed_usage);
    assert_eq!(plain_usage[0].cached_tokens, 64);
    assert_eq!(
        plain.last().unwrap().content,
        "It is 14°C in Paris and 19°C in Bogotá."
    );
}

#[tokio::test]
async fn recorded_responses_replay_identically() {
    for stream in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let tape = dir.path().join("tape.jsonl");
        let (live, _) = tool_round_trip(stream, Some(&tape)).await;
        let text = std::fs::read_to_string(&tape).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(!text.contains(KEY));

        let replay = Replay::from_file(&tape).unwrap();
        let mut env = Env::new();
        env.messages.push(live[0].clone());
        for expected in [&live[1], &live[4]] {
            let completion = replay.complete(&env).await.unwrap();
            assert_eq!(&completion.message, expected, "stream: {stream}");
            env.messages.push(completion.message);
        }
        assert!(replay.complete(&env).await.is_err());
    }
}

#[tokio::test]
async fn rate_limit_carries_retry_after_and_the_next_call_succeeds() {
    for stream in [false, true] {
        let body = r#"{"error":{"message":"Rate limit reached for gpt-4.1 in organization org-abc on tokens per min (TPM): Limit 30000, Used 30000, Requested 100. Please try again in 2s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#;
        let server = Server::start(vec![
            Reply::status(429, &[("retry-after", "2")], body),
            Reply::status(
                429,
                &[("retry-after-ms", "1500"), ("retry-after", "2")],
                body,
            ),
            hello_reply(stream),
        ])
        .await;
        let model = model(&server, stream);
        let mut env = Env::new();
        env.messages.push(Message::user("Hello!"));
        let error = model_error(complete(&model, &env).await);
        assert_eq!(
            error,
            ModelError::RateLimited {
                retry_after: Some(Duration::from_secs(2))
            }
        );
        assert!(error.is_transient());
        let error = model_error(complete(&model, &env).await);
        assert_eq!(error.retry_after(), Some(Duration::from_millis(1500)));
        let completion = complete(&model, &env).await.unwrap();
        assert_eq!(
            completion.message.content,
            "Hello! How can I assist you today?"
        );
    }
}

#[tokio::test]
async fn server_errors_are_typed_and_name_the_endpoint() {
    let server = Server::start(vec![Reply::status(
        500,
        &[],
        r#"{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}"#,
    )])
    .await;
    let model = model(&server, false);
    let mut env = Env::new();
    env.messages.push(Message::user("Hello!"));
    match model_error(complete(&model, &env).await) {
        ModelError::Server { status, message } => {
            assert_eq!(status, 500);
            assert!(message.contains("The server had an error"), "{message}");
            assert!(
                message.contains(&format!("POST {}/v1/chat/completions", server.url())),
                "{message}"
            );
        }
        other => panic!("expected a server error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_bad_key_is_an_authentication_error_that_does_not_repeat_it() {
    let server = Server::start(vec![Reply::status(
        401,
        &[],
        &format!(
            r#"{{"error":{{"message":"Incorrect API key provided: {KEY}. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}}}"#
        ),
    )])
    .await;
    let model = model(&server, false);
    assert!(!format!("{model:?}").contains(KEY), "{model:?}");
    let mut env = Env::new();
    env.messages.push(Message::user("Hello!"));
    let result = complete(&model, &env).await;
    let shown = format!("{result:?} {}", result.as_ref().err().unwrap());
    assert!(!shown.contains(KEY), "{shown}");
    assert!(
        shown.contains("Incorrect API key provided: [redacted]"),
        "{shown}"
    );
    assert!(matches!(model_error(result), ModelError::Authentication(_)));
}

#[tokio::test]
async fn context_too_long_is_its_own_error() {
    let server = Server::start(vec![Reply::status(
        400,
        &[],
        r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130532 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
    )])
    .await;
    let model = model(&server, false);
    let mut env = Env::new();
    env.messages.push(Message::user("Hello!"));
    assert!(matches!(
        model_error(complete(&model, &env).await),
        ModelError::ContextTooLong(_)
    ));
}

#[tokio::test]
async fn malformed_responses_are_malformed_errors() {
    let bad_json = Reply::json(
        r#"{"id":"chatcmpl-1","choices":[{"index":0,"message":{"role":"assistant","content":"Hel"#,
    );
    let bad_chunk = Reply::Stream {
        pieces: vec![b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: {not json}\n\n".to_vec()],
    };
    for (reply, stream) in [(bad_json, false), (bad_chunk, true)] {
        let server = Server::start(vec![reply]).await;
        let model = model(&server, stream);
        let mut env = Env::new();
        env.messages.push(Message::user("Hello!"));
        let error = model_error(complete(&model, &env).await);
        assert!(
            matches!(error, ModelError::Malformed(_)),
            "stream {stream}: {error:?}"
        );
        assert!(!error.is_transient());
    }
}

#[tokio::test]
async fn a_stream_cut_mid_tool_call_is_a_connection_error() {
    let Reply::Stream { pieces } = tool_calls_reply(true) else {
        unreachable!()
    };
    let text: Vec<u8> = pieces.concat();
    let text = String::from_utf8(text).unwrap();
    let cut = text.find("Bogot").unwrap();
    // The socket closes inside a chunk, or the body ends cleanly but early.
    let early_end = Reply::Stream {
        pieces: vec![text.as_bytes()[..cut].to_vec()],
    };
    for reply in [Reply::drop_after(&text, cut, 64), early_end] {
        let server = Server::start(vec![reply]).await;
        let model = model(&server, true);
        let mut env = Env::new();
        env.tools.push(weather_tool());
        env.messages.push(Message::user("Weather?"));
        let error = model_error(complete(&model, &env).await);
        assert!(matches!(error, ModelError::Connection(_)), "{error:?}");
        assert!(error.is_transient());
    }
}

#[tokio::test]
async fn a_silent_server_hits_the_timeout() {
    for stream in [false, true] {
        let server = Server::start(vec![Reply::Stall(Duration::from_secs(30))]).await;
        let model = model(&server, stream).timeout(Duration::from_millis(200));
        let mut env = Env::new();
        env.messages.push(Message::user("Hello!"));
        let error = model_error(complete(&model, &env).await);
        assert_eq!(error, ModelError::Timeout(Duration::from_millis(200)));
    }
    // A stream that starts, then goes silent longer than the timeout between chunks.
    let Reply::Stream { pieces } = hello_reply(true) else {
        unreachable!()
    };
    let server = Server::start(vec![Reply::StallMidStream {
        pieces: pieces[..4].to_vec(),
        stall: Duration::from_secs(30),
    }])
    .await;
    let model = model(&server, true).timeout(Duration::from_millis(200));
    let mut env = Env::new();
    env.messages.push(Message::user("Hello!"));
    let error = model_error(complete(&model, &env).await);
    assert_eq!(error, ModelError::Timeout(Duration::from_millis(200)));
}

#[tokio::test]
async fn tool_schemas_are_serialised_once_per_tool_list() {
    let codec = brute::providers::openai::Codec::new("m");
    let tools = vec![weather_tool()];
    let messages = [Message::user("hi")];
    let first = codec.encode(&messages, &tools, false).unwrap();
    // Same specs (the same Arc'd schemas): the cached JSON is reused, byte for byte.
    assert_eq!(
        codec.encode(&messages, &tools.clone(), false).unwrap(),
        first
    );
    // A different schema with the same name is noticed.
    let other = vec![ToolSpec::new(
        "get_weather",
        "Get current temperature for a given location.",
        json!({"type": "object"}),
    )];
    let body: Value =
        serde_json::from_slice(&codec.encode(&messages, &other, false).unwrap()).unwrap();
    assert_eq!(
        body["tools"][0]["function"]["parameters"],
        json!({"type": "object"})
    );
}

#[tokio::test]
async fn the_retry_layer_waits_the_servers_retry_after_and_the_turn_succeeds() {
    let server = Server::start(vec![
        Reply::status(
            429,
            &[("retry-after", "0.05")],
            r#"{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#,
        ),
        hello_reply(true),
    ])
    .await;
    let model = model(&server, true);
    let mut agent = brute_agent! {
        use brute::middleware::Retry { attempts: 3, base_delay: Duration::from_millis(1), jitter: false };
        run model;
    };
    let delays = Arc::new(Mutex::new(Vec::new()));
    let log = delays.clone();
    agent.on(EventKind::Retry, move |_env, event| {
        if let brute::Event::Retry { delay, error, .. } = event {
            log.lock().unwrap().push((*delay, error.retry_after()));
        }
    });
    let outcome = agent.start("Hello!").await.unwrap();
    assert_eq!(outcome.text(), Some("Hello! How can I assist you today?"));
    assert_eq!(outcome.env.messages.len(), 2);
    let hint = Some(Duration::from_millis(50));
    assert_eq!(*delays.lock().unwrap(), [(Duration::from_millis(50), hint)]);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn reasoning_of_compatible_servers_is_kept_and_streamed() {
    // DeepSeek, vLLM and llama.cpp put it in `reasoning_content`; Ollama and OpenRouter
    // in `reasoning`.
    for field in ["reasoning_content", "reasoning"] {
        let mut results = Vec::new();
        for stream in [false, true] {
            let reply = if stream {
                let chunks = [
                    chunk(
                        json!({"role": "assistant", "content": null, field: "Two plus two"}),
                        Value::Null,
                    ),
                    chunk(json!({field: " is four."}), Value::Null),
                    chunk(json!({"content": "4"}), Value::Null),
                    chunk(json!({}), json!("stop")),
                ];
                Reply::stream_split(&sse(&chunks), 9)
            } else {
                Reply::json(
                    &json!({
                        "id": "chatcmpl-r", "object": "chat.completion", "created": 1, "model": "deepseek-reasoner",
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": "4", field: "Two plus two is four."}}]
                    })
                    .to_string(),
                )
            };
            let server = Server::start(vec![reply]).await;
            let model = model(&server, stream);
            let seen = Arc::new(Mutex::new(String::new()));
            let log = seen.clone();
            let mut agent = brute_agent! { run model; };
            agent.on(EventKind::ReasoningDelta, move |_env, event| {
                if let brute::Event::ReasoningDelta(text) = event {
                    log.lock().unwrap().push_str(text);
                }
            });
            let outcome = agent.start("What is 2+2?").await.unwrap();
            let message = outcome.message().unwrap().clone();
            assert_eq!(
                message.reasoning(),
                Some("Two plus two is four."),
                "{field} stream {stream}"
            );
            assert_eq!(message.content, "4");
            assert_eq!(
                *seen.lock().unwrap(),
                if stream { "Two plus two is four." } else { "" }
            );
            results.push(message);
        }
        assert_eq!(results[0], results[1]);
        // Reasoning is not sent back: the servers that return it reject it as input.
        let codec = brute::providers::openai::Codec::new("deepseek-reasoner");
        let body = codec
            .encode(
                &[Message::user("What is 2+2?"), results[0].clone()],
                &[],
                false,
            )
            .unwrap();
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            body["messages"][1],
            json!({"role": "assistant", "content": "4"})
        );
    }
}

#[tokio::test]
async fn a_bad_base_url_is_rejected_not_retried() {
    let model = OpenAi::compatible("localhost:11434/v1", "m");
    let mut env = Env::new();
    env.messages.push(Message::user("Hello!"));
    let error = model_error(complete(&model, &env).await);
    assert!(matches!(error, ModelError::Rejected(_)), "{error:?}");
    assert!(!error.is_transient());
    assert!(
        error
            .to_string()
            .contains("localhost:11434/v1/chat/completions"),
        "{error}"
    );
}
