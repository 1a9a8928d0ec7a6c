//! The Gemini provider against a local server speaking the Gemini API's wire format:
//! `models/{model}:generateContent` (one `GenerateContentResponse`) and
//! `:streamGenerateContent?alt=sse` (one per event), request bodies checked field by
//! field, every scenario run both ways.

#![allow(clippy::unwrap_used)]

use crate::providers_support;

use std::time::Duration;

use brute::{
    Completion, Env, Error, Message, Model, ModelError, ToolCall,
    message::Part,
    model::ToolSpec,
    providers::{Gemini, Replay},
    structured::OutputSchema,
};
use providers_support::{Reply, Server};
use serde_json::{Value, json};

const KEY: &str = "AIzaSyTest-4b8c2d9e7f";

fn model(server: &Server, stream: bool) -> Gemini {
    Gemini::from_wire(
        brute::providers::gemini::Codec::new("gemini-2.5-flash"),
        format!("{}/v1beta", server.url()),
    )
    .api_key(KEY)
    .stream(stream)
    .timeout(Duration::from_secs(20))
}

fn usage(prompt: u64, candidates: u64, thoughts: u64, cached: u64) -> Value {
    json!({"promptTokenCount": prompt, "candidatesTokenCount": candidates,
        "thoughtsTokenCount": thoughts, "cachedContentTokenCount": cached,
        "totalTokenCount": prompt + candidates + thoughts})
}

/// A reply of `parts`: one response, or a stream of one event per part, the last with
/// the finish reason and the usage.
fn reply(parts: &[Value], usage: Value, stream: bool) -> Reply {
    let response = |parts: &[Value], finish: Option<&str>, usage: Option<&Value>| {
        let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
        if let Some(finish) = finish {
            candidate["finishReason"] = json!(finish);
        }
        let mut response = json!({"candidates": [candidate], "modelVersion": "gemini-2.5-flash",
            "responseId": "mG3UaMOkJf2p1dkP7sDg"});
        if let Some(usage) = usage {
            response["usageMetadata"] = usage.clone();
        }
        response
    };
    if !stream {
        return Reply::json(&response(parts, Some("STOP"), Some(&usage)).to_string());
    }
    let mut text = String::new();
    for (n, part) in parts.iter().enumerate() {
        let last = n + 1 == parts.len();
        // A text part arrives in pieces, each event a response of its own.
        let pieces: Vec<Value> = match part["text"].as_str() {
            Some(whole) if part.get("thoughtSignature").is_none() => whole
                .split_inclusive(' ')
                .map(|word| {
                    let mut piece = part.clone();
                    piece["text"] = json!(word);
                    piece
                })
                .collect(),
            _ => vec![part.clone()],
        };
        let count = pieces.len();
        for (k, piece) in pieces.into_iter().enumerate() {
            let end = last && k + 1 == count;
            let event = response(
                &[piece],
                end.then_some("STOP"),
                Some(&usage).filter(|_| end),
            );
            text.push_str(&format!("data: {event}\r\n\r\n"));
        }
    }
    Reply::stream_split(&text, 9)
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
        let parts = [
            json!({"text": "Weighing the greeting.", "thought": true}),
            json!({"text": "Hello! How can I help you today?"}),
        ];
        let server = Server::start(vec![reply(&parts, usage(12, 9, 20, 4), stream)]).await;
        let model = model(&server, stream)
            .temperature(0.4)
            .include_thoughts(true);
        let mut env = Env::new();
        env.messages.push(Message::system("Be kind."));
        env.messages.push(Message::user("Hello!"));
        let reply = model.complete(&env).await.unwrap();

        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        let path = if stream {
            "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        } else {
            "/v1beta/models/gemini-2.5-flash:generateContent"
        };
        assert_eq!(requests[0].path, path);
        assert_eq!(requests[0].header("x-goog-api-key"), Some(KEY));
        assert_eq!(
            requests[0].json(),
            json!({
                "contents": [{"role": "user", "parts": [{"text": "Hello!"}]}],
                "systemInstruction": {"parts": [{"text": "Be kind."}]},
                "generationConfig": {"temperature": 0.4, "thinkingConfig": {"includeThoughts": true}}
            })
        );
        assert_eq!(reply.message.content, "Hello! How can I help you today?");
        assert_eq!(reply.message.reasoning(), Some("Weighing the greeting."));
        let usage = reply.usage.unwrap();
        assert_eq!(
            (usage.input_tokens, usage.output_tokens, usage.cached_tokens),
            (12, 29, 4)
        );
        results.push(reply.message);
    }
    assert_eq!(results[0], results[1]);
}

fn weather_tool() -> ToolSpec {
    ToolSpec::new(
        "get_weather",
        "Get current temperature for a given location.",
        json!({"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}),
    )
}

/// Two calls (the first with a thought signature), their results, the answer; `ids`
/// says whether the model gives the calls ids (Gemini 3) or not.
async fn tool_round_trip(
    stream: bool,
    ids: bool,
    record: Option<&std::path::Path>,
) -> Vec<Message> {
    let mut paris = json!({"functionCall": {"name": "get_weather", "args": {"location": "Paris"}},
        "thoughtSignature": "CiQB0e2Kb7sig"});
    let mut bogota =
        json!({"functionCall": {"name": "get_weather", "args": {"location": "Bogotá"}}});
    if ids {
        paris["functionCall"]["id"] = json!("fc-paris");
        bogota["functionCall"]["id"] = json!("fc-bogota");
    }
    let answer = "It is 14°C in Paris and 19°C in Bogotá.";
    let server = Server::start(vec![
        reply(&[paris, bogota], usage(50, 10, 0, 0), stream),
        reply(&[json!({"text": answer})], usage(90, 12, 0, 0), stream),
    ])
    .await;
    let mut model = model(&server, stream);
    if let Some(path) = record {
        model = model.record_to(path);
    }
    let mut env = Env::new();
    env.tools.push(weather_tool());
    env.messages
        .push(Message::user("Weather in Paris and Bogotá?"));
    let first = model.complete(&env).await.unwrap();
    let calls = first.message.tool_calls.clone();
    assert_eq!(calls.len(), 2);
    if ids {
        assert_eq!(calls[0].id, "fc-paris");
    } else {
        assert!(
            calls.iter().all(|c| c.id.starts_with("gemini_call_")),
            "{calls:?}"
        );
        assert_ne!(calls[0].id, calls[1].id);
    }
    assert_eq!(calls[1].arguments, json!({"location": "Bogotá"}));
    env.messages.push(first.message);
    env.messages
        .push(Message::tool_result(&calls[0].id, "14°C"));
    env.messages
        .push(Message::tool_result(&calls[1].id, "19°C"));
    let second = model.complete(&env).await.unwrap();
    assert_eq!(second.message, Message::assistant(answer));
    env.messages.push(second.message);

    let requests = server.requests();
    assert_eq!(
        requests[0].json()["tools"],
        json!([{"functionDeclarations": [{"name": "get_weather",
            "description": "Get current temperature for a given location.",
            "parametersJsonSchema": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}}]}])
    );
    // The signature goes back on the part it came with; made-up ids do not go back.
    let id = |id: &str| if ids { json!(id) } else { Value::Null };
    let mut call_paris =
        json!({"name": "get_weather", "args": {"location": "Paris"}, "id": id("fc-paris")});
    let mut call_bogota =
        json!({"name": "get_weather", "args": {"location": "Bogotá"}, "id": id("fc-bogota")});
    let mut result_paris =
        json!({"name": "get_weather", "response": {"result": "14°C"}, "id": id("fc-paris")});
    let mut result_bogota =
        json!({"name": "get_weather", "response": {"result": "19°C"}, "id": id("fc-bogota")});
    for value in [
        &mut call_paris,
        &mut call_bogota,
        &mut result_paris,
        &mut result_bogota,
    ] {
        value.as_object_mut().unwrap().retain(|_, v| !v.is_null());
    }
    assert_eq!(
        requests[1].json()["contents"],
        json!([
            {"role": "user", "parts": [{"text": "Weather in Paris and Bogotá?"}]},
            {"role": "model", "parts": [
                {"functionCall": call_paris, "thoughtSignature": "CiQB0e2Kb7sig"},
                {"functionCall": call_bogota}
            ]},
            {"role": "user", "parts": [{"functionResponse": result_paris}, {"functionResponse": result_bogota}]}
        ])
    );
    env.messages.into_vec()
}

/// The conversation with made-up ids numbered in order, so that two runs compare.
fn numbered(messages: Vec<Message>) -> Vec<Message> {
    let mut ids: Vec<String> = Vec::new();
    let mut rename = |id: &mut String| {
        let at = ids.iter().position(|i| i == id).unwrap_or_else(|| {
            ids.push(id.clone());
            ids.len() - 1
        });
        *id = format!("id{at}");
    };
    let mut messages = messages;
    for message in &mut messages {
        for call in &mut message.tool_calls {
            rename(&mut call.id);
        }
        if let Some(id) = &mut message.tool_call_id {
            rename(id);
        }
        message.set_reasoning_signature(None);
    }
    messages
}

#[tokio::test]
async fn function_calls_round_trip_streamed_and_not() {
    for ids in [false, true] {
        let plain = tool_round_trip(false, ids, None).await;
        let streamed = tool_round_trip(true, ids, None).await;
        assert_eq!(numbered(plain), numbered(streamed), "ids: {ids}");
    }
}

#[tokio::test]
async fn structured_output_is_json_mode_or_a_forced_function_with_tools() {
    let schema =
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    for stream in [false, true] {
        let server = Server::start(vec![
            reply(
                &[json!({"text": "{\"city\":\"Paris\"}"})],
                usage(5, 5, 0, 0),
                stream,
            ),
            reply(
                &[json!({"functionCall": {"name": "city", "args": {"city": "Lyon"}}})],
                usage(5, 5, 0, 0),
                stream,
            ),
        ])
        .await;
        let model = model(&server, stream);
        let mut env = Env::new();
        env.extensions
            .insert(OutputSchema::new("city", schema.clone()).strict(false));
        env.messages.push(Message::user("Which city?"));
        let json_mode = model.complete(&env).await.unwrap();
        assert_eq!(json_mode.message.content, r#"{"city":"Paris"}"#);
        env.tools.push(weather_tool());
        let forced = model.complete(&env).await.unwrap();
        assert_eq!(forced.message.content, r#"{"city":"Lyon"}"#);
        assert!(forced.message.tool_calls.is_empty());

        let requests = server.requests();
        let first = requests[0].json();
        assert_eq!(
            first["generationConfig"]["responseMimeType"],
            "application/json"
        );
        assert_eq!(first["generationConfig"]["responseJsonSchema"], schema);
        let second = requests[1].json();
        assert_eq!(second.get("generationConfig"), None);
        assert_eq!(
            second["toolConfig"],
            json!({"functionCallingConfig": {"mode": "ANY"}})
        );
        let declared: Vec<&str> = second["tools"][0]["functionDeclarations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].as_str().unwrap())
            .collect();
        assert_eq!(declared, ["get_weather", "city"]);
    }
}

#[tokio::test]
async fn errors_are_typed_and_never_show_the_key() {
    let bad_key = format!(
        r#"{{"error":{{"code":400,"message":"API key not valid: {KEY}. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}}}"#
    );
    let blocked = json!({"candidates": [{"finishReason": "SAFETY", "index": 0}],
        "usageMetadata": usage(5, 0, 0, 0)})
    .to_string();
    let server = Server::start(vec![
        Reply::status(400, &[], &bad_key),
        Reply::status(429, &[], r#"{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}}"#),
        Reply::json(&blocked),
        Reply::stream_split(&format!("data: {bad_key}\r\n\r\n"), 7),
        // A body that ends before any candidate has a finish reason.
        Reply::stream_split(
            "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hel\"}]},\"index\":0}]}\r\n\r\n",
            10,
        ),
    ])
    .await;
    let mut env = Env::new();
    env.messages.push(Message::user("Hello!"));
    let plain = model(&server, false);
    let rejected = plain.complete(&env).await;
    let shown = format!("{rejected:?}");
    assert!(!shown.contains(KEY), "{shown}");
    assert!(shown.contains("API key not valid: [redacted]"), "{shown}");
    assert!(matches!(model_error(rejected), ModelError::Rejected(_)));
    assert!(matches!(
        model_error(plain.complete(&env).await),
        ModelError::RateLimited { .. }
    ));
    let safety = model_error(plain.complete(&env).await);
    assert!(
        matches!(safety, ModelError::Rejected(ref m) if m.contains("finishReason SAFETY")),
        "{safety:?}"
    );
    let streamed = model(&server, true);
    let in_stream = streamed.complete(&env).await;
    assert!(!format!("{in_stream:?}").contains(KEY), "{in_stream:?}");
    assert!(matches!(model_error(in_stream), ModelError::Rejected(_)));
    let cut = model_error(streamed.complete(&env).await);
    assert!(matches!(cut, ModelError::Connection(_)), "{cut:?}");
}

#[tokio::test]
async fn tool_calls_in_history_without_a_signature_go_back_plain() {
    // A conversation from another provider: no Gemini state on the message.
    let server = Server::start(vec![reply(
        &[json!({"text": "ok"})],
        usage(1, 1, 0, 0),
        false,
    )])
    .await;
    let mut env = Env::new();
    let mut call = Message::tool_calls(
        "Checking.",
        vec![ToolCall::new("toolu_1", "look", json!("not an object"))],
    );
    call.set_reasoning_signature(Some("EqQBCkgIAhABGAIiQL".into()));
    env.messages.push(Message::user("Look."));
    env.messages.push(call);
    env.messages.push(Message::tool_result("toolu_1", "seen"));
    model(&server, false).complete(&env).await.unwrap();
    assert_eq!(
        server.requests()[0].json()["contents"][1],
        json!({"role": "model", "parts": [
            {"text": "Checking."},
            {"functionCall": {"name": "look", "args": {}, "id": "toolu_1"}}
        ]})
    );
}

#[tokio::test]
async fn recorded_replies_replay_identically() {
    for stream in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let tape = dir.path().join("tape.jsonl");
        let live = tool_round_trip(stream, true, Some(&tape)).await;
        let text = std::fs::read_to_string(&tape).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(text.contains(r#""provider":"gemini""#), "{text}");
        assert!(!text.contains(KEY));
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

#[tokio::test]
async fn tool_result_parts_go_inside_the_function_response() {
    let server = Server::start(vec![reply(
        &[json!({"text": "A chart."})],
        usage(1, 1, 0, 0),
        false,
    )])
    .await;
    let mut env = Env::new();
    env.messages.push(Message::user("Show me the chart."));
    env.messages.push(Message::tool_calls(
        "",
        vec![ToolCall::new("call_1", "chart", json!({}))],
    ));
    env.messages.push(
        Message::tool_result("call_1", "the chart")
            .with_part(Part::image("image/png", b"\x89PNG\r\n\x1a\n").unwrap())
            .with_part(Part::pdf(b"%PDF-1.7").titled("data.pdf"))
            .with_part(Part::image_url("https://example.com/logo.png")),
    );
    model(&server, false).complete(&env).await.unwrap();
    // Parts given by their bytes go inside the function response (Gemini 3's
    // multimodal function responses); a URL, which it cannot hold, follows it.
    assert_eq!(
        server.requests()[0].json()["contents"][2],
        json!({"role": "user", "parts": [
            {"functionResponse": {
                "name": "chart",
                "response": {"result": "the chart"},
                "id": "call_1",
                "parts": [
                    {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
                    {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0xLjc=", "displayName": "data.pdf"}}
                ]
            }},
            {"fileData": {"fileUri": "https://example.com/logo.png"}}
        ]})
    );
}

/// A streamed reply is held to the response size limit by what it keeps (its text, or
/// its calls), the stream itself far below its own limit.
#[tokio::test]
async fn a_streamed_reply_is_held_to_the_response_size_limit() {
    let long = json!({"text": "word ".repeat(2000)});
    let calls: Vec<Value> = (0..4)
        .map(|n| json!({"functionCall": {"name": "get_weather", "args": {"location": "x".repeat(2000)}, "id": format!("fc-{n}")}}))
        .collect();
    for parts in [vec![long], calls] {
        let server = Server::start(vec![reply(&parts, usage(1, 2000, 0, 0), true)]).await;
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
