//! Provider overhead without the network: building a request body from an env and
//! parsing a response, per call, streaming parse throughput, and a line of 4 to 32 MB
//! without a newline (parsed whole under a raised limit, refused at the default one),
//! to show that stream parsing is linear in the line's length.
//!
//! `cargo bench --bench providers` (`-- providers/long_line` for the long lines only)

use std::hint::black_box;

use brute::providers::{DEFAULT_MAX_EVENT_BYTES, WireFormat, anthropic, openai};
use brute::{Env, Message, ToolCall, model::ToolSpec};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;

/// A conversation of `turns` user/assistant/tool exchanges and five tools.
fn env(turns: usize) -> Env {
    let mut env = Env::new();
    for name in ["read", "write", "edit", "shell", "search"] {
        env.tools.push(ToolSpec::new(
            name,
            format!("The {name} tool: does what its name says, inside the project root."),
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "A path relative to the project root"},
                    "content": {"type": "string", "description": "Text to write"},
                    "limit": {"type": "integer", "minimum": 1}
                },
                "required": ["path"]
            }),
        ));
    }
    env.messages.push(Message::system(
        "You are a careful coding agent. Keep answers short.",
    ));
    for i in 0..turns {
        env.messages.push(Message::user(format!(
            "Please look at src/file_{i}.rs and tell me what it does."
        )));
        let id = format!("call_{i:08}");
        env.messages.push(Message::tool_calls(
            "",
            vec![ToolCall::new(
                &id,
                "read",
                json!({"path": format!("src/file_{i}.rs")}),
            )],
        ));
        env.messages.push(Message::tool_result(
            &id,
            "fn main() {\n    println!(\"hello\");\n}\n".repeat(4),
        ));
        env.messages.push(Message::assistant(format!(
            "src/file_{i}.rs prints hello; nothing else happens there."
        )));
    }
    env
}

fn openai_body() -> Vec<u8> {
    json!({
        "id": "chatcmpl-abc123", "object": "chat.completion", "created": 1699896916, "model": "gpt-4.1",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": null, "message": {
            "role": "assistant", "content": "Let me read both files.", "refusal": null,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"src/main.rs\"}"}},
                {"id": "call_2", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"src/lib.rs\",\"limit\":200}"}}
            ]}}],
        "usage": {"prompt_tokens": 1200, "completion_tokens": 40, "total_tokens": 1240, "prompt_tokens_details": {"cached_tokens": 1024}}
    })
    .to_string()
    .into_bytes()
}

fn anthropic_body() -> Vec<u8> {
    json!({
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "stop_reason": "tool_use", "stop_sequence": null,
        "content": [
            {"type": "text", "text": "Let me read both files."},
            {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "src/main.rs"}},
            {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {"path": "src/lib.rs", "limit": 200}}
        ],
        "usage": {"input_tokens": 176, "output_tokens": 40, "cache_read_input_tokens": 1024}
    })
    .to_string()
    .into_bytes()
}

/// A long streamed answer: `pieces` content deltas of a few words each.
fn openai_stream(pieces: usize) -> Vec<u8> {
    let mut text = String::new();
    for i in 0..pieces {
        let chunk = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1",
            "choices": [{"index": 0, "delta": {"content": format!(" token{i} and more")}, "logprobs": null, "finish_reason": null}]});
        text.push_str(&format!("data: {chunk}\n\n"));
    }
    text.push_str("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4.1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
    text.into_bytes()
}

fn anthropic_stream(pieces: usize) -> Vec<u8> {
    let mut text = String::from(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude\",\"stop_reason\":null,\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    );
    for i in 0..pieces {
        let event = json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": format!(" token{i} and more")}});
        text.push_str(&format!("event: content_block_delta\ndata: {event}\n\n"));
    }
    text.push_str("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":900}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    text.into_bytes()
}

fn requests_and_responses(c: &mut Criterion) {
    let openai = openai::Codec::new("gpt-4.1").temperature(0.2);
    let anthropic = anthropic::Codec::new("claude-sonnet-4-5");
    let openai_reply = openai_body();
    let anthropic_reply = anthropic_body();

    let mut group = c.benchmark_group("providers/encode");
    for turns in [1, 10, 50] {
        let env = env(turns);
        let messages = env.messages.len();
        group.bench_with_input(BenchmarkId::new("openai", messages), &env, |b, env| {
            b.iter(|| black_box(openai.encode(&env.messages, &env.tools, false)))
        });
        group.bench_with_input(BenchmarkId::new("anthropic", messages), &env, |b, env| {
            b.iter(|| black_box(anthropic.encode(&env.messages, &env.tools, false)))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("providers/decode");
    group.bench_function("openai", |b| {
        b.iter(|| black_box(openai::Codec::decode(black_box(&openai_reply), "bench")))
    });
    group.bench_function("anthropic", |b| {
        b.iter(|| {
            black_box(anthropic::Codec::decode(
                black_box(&anthropic_reply),
                "bench",
            ))
        })
    });
    group.finish();

    // One call's whole overhead: encode the request for a 41-message history, decode a
    // two-tool-call reply.
    let env10 = env(10);
    let mut group = c.benchmark_group("providers/call");
    group.bench_function("openai", |b| {
        b.iter(|| {
            let body = openai.encode(&env10.messages, &env10.tools, false);
            black_box(body.map(|_| openai::Codec::decode(&openai_reply, "bench")))
        })
    });
    group.bench_function("anthropic", |b| {
        b.iter(|| {
            let body = anthropic.encode(&env10.messages, &env10.tools, false);
            black_box(body.map(|_| anthropic::Codec::decode(&anthropic_reply, "bench")))
        })
    });
    // The same request with the tool schemas serialised afresh on every call (a new
    // codec each time), to show what the cache saves.
    group.bench_function("openai_uncached_tools", |b| {
        b.iter(|| {
            let fresh = openai::Codec::new("gpt-4.1").temperature(0.2);
            let body = fresh.encode(&env10.messages, &env10.tools, false);
            black_box(body.map(|_| openai::Codec::decode(&openai_reply, "bench")))
        })
    });
    group.finish();
}

fn streaming(c: &mut Criterion) {
    let env = Env::new();
    let mut group = c.benchmark_group("providers/stream");
    for (name, stream) in [
        ("openai", openai_stream(2000)),
        ("anthropic", anthropic_stream(2000)),
    ] {
        group.throughput(Throughput::Bytes(stream.len() as u64));
        // Network-sized reads: 1460-byte pieces, which cut events anywhere.
        group.bench_with_input(
            BenchmarkId::new(name, "1460B reads"),
            &stream,
            |b, stream| {
                b.iter(|| {
                    let completion = if name == "openai" {
                        let mut decoder = openai::Codec::stream_decoder("bench");
                        for piece in stream.chunks(1460) {
                            let _ = decoder.feed(piece, &env);
                        }
                        decoder.finish(&env)
                    } else {
                        let mut decoder = anthropic::Codec::stream_decoder("bench");
                        for piece in stream.chunks(1460) {
                            let _ = decoder.feed(piece, &env);
                        }
                        decoder.finish(&env)
                    };
                    black_box(completion.map(|c| c.message.content.len()))
                })
            },
        );
    }
    group.finish();
}

/// One content delta of `size` bytes in a single `data:` line, then the end of the
/// stream.
fn openai_long_line(size: usize) -> Vec<u8> {
    let mut text = String::with_capacity(size + 256);
    text.push_str(r#"data: {"choices":[{"index":0,"delta":{"content":""#);
    text.extend(std::iter::repeat_n('x', size));
    text.push_str("\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
    text.into_bytes()
}

/// A line of 4 to 32 MB arriving in 16 KiB reads: decoded whole with the event limit
/// raised to 64 MiB (the time should double with the size), and refused at the default
/// 16 MiB limit (the time stops growing at the limit).
fn long_lines(c: &mut Criterion) {
    let env = Env::new();
    let mut group = c.benchmark_group("providers/long_line");
    group.sample_size(10);
    for mb in [4usize, 8, 16, 32] {
        let stream = openai_long_line(mb << 20);
        group.throughput(Throughput::Bytes(stream.len() as u64));
        group.bench_with_input(
            BenchmarkId::new("parsed", format!("{mb}MB")),
            &stream,
            |b, stream| {
                b.iter(|| {
                    let mut decoder =
                        <openai::Codec as WireFormat>::stream_decoder("bench".into(), 64 << 20);
                    for piece in stream.chunks(16 << 10) {
                        decoder.feed(piece, &env).expect("under the limit");
                    }
                    let completion = decoder.finish(&env).expect("complete");
                    black_box(completion.message.content.len())
                })
            },
        );
        group.bench_with_input(
            BenchmarkId::new("default_limit", format!("{mb}MB")),
            &stream,
            |b, stream| {
                b.iter(|| {
                    let mut decoder = <openai::Codec as WireFormat>::stream_decoder(
                        "bench".into(),
                        DEFAULT_MAX_EVENT_BYTES,
                    );
                    let mut fed = 0;
                    let refused = stream.chunks(16 << 10).any(|piece| {
                        fed += piece.len();
                        decoder.feed(piece, &env).is_err()
                    });
                    black_box((refused, fed))
                })
            },
        );
    }
    group.finish();
}

fn check(_: &mut Criterion) {
    // The benchmarked paths must produce real results.
    let env = Env::new();
    let completion = openai::Codec::decode(&openai_body(), "check").expect("decodes");
    assert_eq!(completion.message.tool_calls.len(), 2);
    let mut decoder = anthropic::Codec::stream_decoder("check");
    decoder
        .feed(&anthropic_stream(10), &env)
        .expect("valid stream");
    let completion = decoder.finish(&env).expect("complete stream");
    assert!(completion.message.content.starts_with(" token0"));
    // The long line decodes whole under a raised limit and is refused at the default.
    let line = openai_long_line(20 << 20);
    let mut decoder = <openai::Codec as WireFormat>::stream_decoder("check".into(), 64 << 20);
    for piece in line.chunks(16 << 10) {
        decoder.feed(piece, &env).expect("under the raised limit");
    }
    assert_eq!(
        decoder
            .finish(&env)
            .expect("complete")
            .message
            .content
            .len(),
        20 << 20
    );
    let mut decoder = openai::Codec::stream_decoder("check");
    let refused = line
        .chunks(16 << 10)
        .position(|piece| decoder.feed(piece, &env).is_err());
    assert_eq!(refused, Some(DEFAULT_MAX_EVENT_BYTES / (16 << 10)));
}

criterion_group!(
    benches,
    check,
    requests_and_responses,
    streaming,
    long_lines
);
criterion_main!(benches);
