//! What the adversarial provider tests share: both wire formats behind one switch,
//! the replies of each format built from the same description, and a call that
//! returns the typed [`ModelError`].

#![allow(dead_code, clippy::unwrap_used)]

use std::time::Duration;

use brute::providers::{HttpModel, WireFormat, anthropic, openai};
use brute::{Completion, Env, Error, Model, ModelError};
use serde_json::{Value, json};

use crate::providers_support::{Reply, Server};

/// The key every model in these tests authenticates with; it must never come back.
pub const CANARY: &str = "sk-canary-5f1e9d0c7b3a2e81";

/// A wire format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    OpenAi,
    Anthropic,
}

pub const APIS: [Api; 2] = [Api::OpenAi, Api::Anthropic];

/// The settings a test changes; the rest are the defaults.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    pub stream: bool,
    pub first_byte: Option<Duration>,
    pub idle: Option<Duration>,
    pub max_event_bytes: Option<usize>,
    pub max_response_bytes: Option<usize>,
    pub max_stream_bytes: Option<usize>,
    pub call_timeout: Option<Duration>,
}

impl Settings {
    pub fn streamed(stream: bool) -> Self {
        Settings {
            stream,
            ..Settings::default()
        }
    }

    fn apply<F: WireFormat>(&self, mut model: HttpModel<F>) -> HttpModel<F> {
        model = model.api_key(CANARY).stream(self.stream);
        if let Some(t) = self.first_byte {
            model = model.first_byte_timeout(t);
        }
        if let Some(t) = self.idle {
            model = model.idle_timeout(t);
        }
        if let Some(n) = self.max_event_bytes {
            model = model.max_event_bytes(n);
        }
        if let Some(n) = self.max_response_bytes {
            model = model.max_response_bytes(n);
        }
        if let Some(n) = self.max_stream_bytes {
            model = model.max_stream_bytes(n);
        }
        if let Some(t) = self.call_timeout {
            model = model.call_timeout(t);
        }
        model
    }
}

impl Api {
    pub fn openai(self, server: &Server, settings: &Settings) -> HttpModel<openai::Codec> {
        settings.apply(brute::providers::OpenAi::compatible(
            format!("{}/v1", server.url()),
            "gpt-test",
        ))
    }

    pub fn anthropic(self, server: &Server, settings: &Settings) -> HttpModel<anthropic::Codec> {
        settings.apply(brute::providers::Anthropic::from_wire(
            anthropic::Codec::new("claude-test"),
            server.url(),
        ))
    }

    /// One call of this format's model against `server`.
    pub async fn call(
        self,
        server: &Server,
        settings: &Settings,
        env: &Env,
    ) -> Result<Completion, ModelError> {
        let result = match self {
            Api::OpenAi => self.openai(server, settings).complete(env).await,
            Api::Anthropic => self.anthropic(server, settings).complete(env).await,
        };
        result.map_err(|error| match error {
            Error::Model(error) => error,
            other => panic!("{self:?}: expected a model error, got {other:?}"),
        })
    }

    /// A reply saying `text`, as a JSON body or an event stream (in pieces of 7 bytes).
    pub fn text(self, text: &str, stream: bool) -> Reply {
        match (self, stream) {
            (_, false) => Reply::json(&self.text_body(text).to_string()),
            (_, true) => Reply::stream_split(&self.text_stream(text), 7),
        }
    }

    pub fn text_body(self, text: &str) -> Value {
        match self {
            Api::OpenAi => json!({
                "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-test",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
            }),
            Api::Anthropic => json!({
                "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 5, "output_tokens": 2}
            }),
        }
    }

    /// The event stream of a reply saying `text` in deltas of up to three characters.
    pub fn text_stream(self, text: &str) -> String {
        let chars: Vec<char> = text.chars().collect();
        let deltas: Vec<String> = chars.chunks(3).map(|c| c.iter().collect()).collect();
        self.deltas_stream(&deltas)
    }

    /// The event stream of a reply made of the text `deltas`, one event each.
    pub fn deltas_stream(self, deltas: &[String]) -> String {
        let mut events = Vec::new();
        match self {
            Api::OpenAi => {
                for delta in deltas {
                    events.push(openai_chunk(json!({"content": delta}), Value::Null));
                }
                events.push(openai_chunk(json!({}), json!("stop")));
                sse_openai(&events)
            }
            Api::Anthropic => {
                events.push(anthropic_start());
                events.push(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}));
                for delta in deltas {
                    events.push(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": delta}}));
                }
                events.push(json!({"type": "content_block_stop", "index": 0}));
                sse_anthropic(&events)
            }
        }
    }

    /// A reply calling tools: `(id, name, arguments as the model wrote them)`.
    pub fn calls(self, calls: &[(String, String, String)], stream: bool) -> Reply {
        match (self, stream) {
            (Api::OpenAi, false) => {
                let calls: Vec<Value> = calls
                    .iter()
                    .map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}}))
                    .collect();
                let body = json!({
                    "id": "chatcmpl-2", "object": "chat.completion", "created": 1, "model": "gpt-test",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": calls}, "finish_reason": "tool_calls"}]
                });
                Reply::json(&body.to_string())
            }
            (Api::Anthropic, false) => {
                // The API sends an object; a string stands for arguments that are not one.
                let blocks: Vec<Value> = calls
                    .iter()
                    .map(|(id, name, args)| {
                        let input = serde_json::from_str::<Value>(args)
                            .unwrap_or_else(|_| Value::String(args.clone()));
                        json!({"type": "tool_use", "id": id, "name": name, "input": input})
                    })
                    .collect();
                let body = json!({
                    "id": "msg_2", "type": "message", "role": "assistant", "model": "claude-test",
                    "content": blocks, "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 9}
                });
                Reply::json(&body.to_string())
            }
            (_, true) => Reply::stream_split(&self.calls_stream(calls), 1460),
        }
    }

    /// The event stream of a reply calling tools, each call's arguments in two halves.
    pub fn calls_stream(self, calls: &[(String, String, String)]) -> String {
        match self {
            Api::OpenAi => {
                let mut events = Vec::new();
                for (index, (id, name, args)) in calls.iter().enumerate() {
                    let (head, tail) = args.split_at(half(args));
                    events.push(openai_chunk(
                        json!({"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": head}}]}),
                        Value::Null,
                    ));
                    events.push(openai_chunk(
                        json!({"tool_calls": [{"index": index, "function": {"arguments": tail}}]}),
                        Value::Null,
                    ));
                }
                events.push(openai_chunk(json!({}), json!("tool_calls")));
                sse_openai(&events)
            }
            Api::Anthropic => {
                let mut events = vec![anthropic_start()];
                for (index, (id, name, args)) in calls.iter().enumerate() {
                    let (head, tail) = args.split_at(half(args));
                    events.push(json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}));
                    for part in [head, tail] {
                        events.push(json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": part}}));
                    }
                    events.push(json!({"type": "content_block_stop", "index": index}));
                }
                sse_anthropic(&events)
            }
        }
    }

    /// The raw headers of an event-stream response, as the first bytes on the wire.
    pub fn stream_head() -> Vec<u8> {
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            .to_vec()
    }
}

pub fn openai_chunk(delta: Value, finish: Value) -> Value {
    json!({"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

pub fn anthropic_start() -> Value {
    json!({"type": "message_start", "message": {"id": "msg_s", "type": "message", "role": "assistant",
        "content": [], "model": "claude-test", "stop_reason": null, "usage": {"input_tokens": 5, "output_tokens": 1}}})
}

/// `data: {chunk}` events, then `data: [DONE]`.
pub fn sse_openai(chunks: &[Value]) -> String {
    let mut text: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    text.push_str("data: [DONE]\n\n");
    text
}

/// `event: type` / `data: {event}` pairs, closed by `message_delta` and `message_stop`.
pub fn sse_anthropic(events: &[Value]) -> String {
    let mut all = events.to_vec();
    all.push(json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}}));
    all.push(json!({"type": "message_stop"}));
    all.iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}

/// An env asking one question.
pub fn env() -> Env {
    let mut env = Env::new();
    env.messages.push(brute::Message::user("Go."));
    env
}

/// The char boundary nearest below the middle of `text`.
fn half(text: &str) -> usize {
    (0..=text.len() / 2)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0)
}
