//! Images, documents and prompt caching on the wire, against a local server: the
//! request bodies both providers send for a conversation with parts, the parts a
//! session file keeps, the cache breakpoints Anthropic gets (and does not get when
//! switched off), and the cache reads and writes both providers report in `Usage`.

#![allow(clippy::unwrap_used)]

use crate::providers_support;

use std::time::Duration;

use brute::message::Part;
use brute::{
    Env, Error, Message, Model, ModelError, ToolCall, brute_agent,
    model::ToolSpec,
    providers::{Anthropic, OpenAi},
};
use providers_support::{Reply, Server};
use serde_json::{Value, json};

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n";
const PNG_BASE64: &str = "iVBORw0KGgo=";
const PDF: &[u8] = b"%PDF-1.7";
const PDF_BASE64: &str = "JVBERi0xLjc=";

fn openai(server: &Server) -> OpenAi {
    OpenAi::compatible(format!("{}/v1", server.url()), "gpt-4.1")
        .api_key("sk-test")
        .timeout(Duration::from_secs(20))
}

fn anthropic(server: &Server) -> Anthropic {
    Anthropic::new("claude-sonnet-4-5")
        .base_url(server.url())
        .api_key("sk-ant-test")
        .timeout(Duration::from_secs(20))
}

fn openai_reply(usage: Value) -> Reply {
    Reply::json(
        &json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4.1",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "A cat."}, "finish_reason": "stop"}],
            "usage": usage
        })
        .to_string(),
    )
}

fn anthropic_reply(usage: Value) -> Reply {
    Reply::json(
        &json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "A cat."}],
            "stop_reason": "end_turn", "stop_sequence": null, "usage": usage
        })
        .to_string(),
    )
}

/// A user message with an image by URL, an image by bytes and a PDF; a tool call whose
/// result carries a screenshot; then a question.
fn conversation() -> Vec<Message> {
    vec![
        Message::system("You look at pictures."),
        Message::user("What are these?")
            .with_part(Part::image_url("https://example.com/cat.jpg"))
            .with_part(Part::image("image/png", PNG).unwrap())
            .with_part(Part::pdf(PDF).titled("vet.pdf")),
        Message::tool_calls("", vec![ToolCall::new("call_1", "screenshot", json!({}))]),
        Message::tool_result("call_1", "the screen")
            .with_part(Part::image("image/png", PNG).unwrap()),
        Message::user("And this one?"),
    ]
}

async fn call(model: &impl Model, messages: Vec<Message>) -> Result<brute::Completion, Error> {
    let mut env = Env::new();
    for message in messages {
        env.messages.push(message);
    }
    model.complete(&env).await
}

#[tokio::test]
async fn openai_sends_parts_before_the_text_and_tool_result_parts_after_the_results() {
    let server = Server::start(vec![openai_reply(
        json!({"prompt_tokens": 5, "completion_tokens": 2}),
    )])
    .await;
    call(&openai(&server), conversation()).await.unwrap();
    let body = server.requests()[0].json();
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You look at pictures."},
            {"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
                {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG_BASE64}")}},
                {"type": "file", "file": {"filename": "vet.pdf", "file_data": format!("data:application/pdf;base64,{PDF_BASE64}")}},
                {"type": "text", "text": "What are these?"}
            ]},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "screenshot", "arguments": "{}"}}
            ]},
            // Tool messages take text only: the screenshot follows the results.
            {"role": "tool", "content": "the screen", "tool_call_id": "call_1"},
            {"role": "user", "content": [
                {"type": "text", "text": "Attached to the result of tool call call_1:"},
                {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG_BASE64}")}}
            ]},
            {"role": "user", "content": "And this one?"}
        ])
    );
}

#[tokio::test]
async fn anthropic_sends_parts_as_blocks_before_the_text_and_inside_tool_results() {
    let server = Server::start(vec![anthropic_reply(
        json!({"input_tokens": 5, "output_tokens": 2}),
    )])
    .await;
    let model = anthropic(&server).prompt_caching(false);
    call(&model, conversation()).await.unwrap();
    let body = server.requests()[0].json();
    assert_eq!(body["system"], json!("You look at pictures."));
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [
                {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_BASE64}},
                {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PDF_BASE64}, "title": "vet.pdf"},
                {"type": "text", "text": "What are these?"}
            ]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "call_1", "name": "screenshot", "input": {}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": [
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_BASE64}},
                    {"type": "text", "text": "the screen"}
                ]},
                {"type": "text", "text": "And this one?"}
            ]}
        ])
    );
}

#[tokio::test]
async fn parts_an_api_cannot_take_are_refused_before_anything_is_sent() {
    let server = Server::start(Vec::new()).await;
    let on_assistant = vec![
        Message::user("hi"),
        Message::assistant("look").with_part(Part::image_url("https://x/y.png")),
    ];
    for result in [
        call(&openai(&server), on_assistant.clone()).await,
        call(&anthropic(&server), on_assistant).await,
    ] {
        let Err(Error::Model(ModelError::Rejected(message))) = result else {
            panic!("{result:?}")
        };
        assert!(
            message.contains("message 1 (assistant) has an image part"),
            "{message}"
        );
    }
    let pdf_by_url = vec![Message::user("read").with_part(Part::document_url("https://x/y.pdf"))];
    let result = call(&openai(&server), pdf_by_url.clone()).await;
    let Err(Error::Model(ModelError::Rejected(message))) = result else {
        panic!("{result:?}")
    };
    assert!(message.contains("document given by URL"), "{message}");
    assert!(server.requests().is_empty());
    // Anthropic takes documents by URL.
    let server = Server::start(vec![anthropic_reply(
        json!({"input_tokens": 1, "output_tokens": 1}),
    )])
    .await;
    call(&anthropic(&server).prompt_caching(false), pdf_by_url)
        .await
        .unwrap();
    assert_eq!(
        server.requests()[0].json()["messages"][0]["content"][0],
        json!({"type": "document", "source": {"type": "url", "url": "https://x/y.pdf"}})
    );
}

#[tokio::test]
async fn parts_are_kept_in_the_session_and_sent_again_on_the_next_turn() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    let usage = json!({"prompt_tokens": 5, "completion_tokens": 2});
    let server = Server::start(vec![openai_reply(usage.clone()), openai_reply(usage)]).await;
    let model = openai(&server);
    let agent = brute_agent! {
        use brute::middleware::SessionLog { path: path.clone() };
        run model;
    };
    let mut env = agent.env();
    env.messages
        .push(Message::user("What is this?").with_part(Part::image("image/png", PNG).unwrap()));
    agent.turn(env).await.unwrap();
    let session = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        session.lines().next().unwrap(),
        format!(
            r#"{{"role":"user","content":"What is this?","parts":[{{"type":"image","media_type":"image/png","data":"{PNG_BASE64}"}}]}}"#
        )
    );
    // The reply, text only, is the line brute always wrote.
    assert_eq!(
        session.lines().nth(1).unwrap(),
        r#"{"role":"assistant","content":"A cat."}"#
    );

    agent.start("Are you sure?").await.unwrap();
    let second = server.requests()[1].json();
    assert_eq!(
        second["messages"][0]["content"][0],
        json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG_BASE64}")}})
    );
}

fn weather_tool() -> ToolSpec {
    ToolSpec::new(
        "get_weather",
        "Get the weather.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    )
}

fn search_tool() -> ToolSpec {
    ToolSpec::new(
        "search",
        "Search the web.",
        json!({"type": "object", "properties": {}}),
    )
}

const EPHEMERAL: &str = r#"{"type":"ephemeral"}"#;

#[tokio::test]
async fn anthropic_puts_cache_breakpoints_on_the_system_prompt_the_tools_and_the_last_block() {
    let server = Server::start(vec![
        anthropic_reply(json!({"input_tokens": 20, "output_tokens": 4, "cache_creation_input_tokens": 1800, "cache_read_input_tokens": 0})),
        anthropic_reply(json!({"input_tokens": 30, "output_tokens": 5, "cache_creation_input_tokens": 40, "cache_read_input_tokens": 1800})),
    ])
    .await;
    let model = anthropic(&server);
    let agent = brute_agent! { run model; };
    let mut env = agent.env();
    env.tools = vec![weather_tool(), search_tool()];
    env.messages.push(Message::system("You are a weather bot."));
    env.messages.push(Message::user("Weather in Bern?"));
    env.messages.push(Message::tool_calls(
        "",
        vec![ToolCall::new("t1", "get_weather", json!({"city": "Bern"}))],
    ));
    env.messages.push(Message::tool_result("t1", "4 degrees"));
    let outcome = agent.turn(env).await.unwrap();

    let body = server.requests()[0].json();
    let ephemeral: Value = serde_json::from_str(EPHEMERAL).unwrap();
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "You are a weather bot.", "cache_control": ephemeral}])
    );
    // The last tool carries the breakpoint, the others do not.
    assert_eq!(body["tools"][0].get("cache_control"), None);
    assert_eq!(body["tools"][1]["cache_control"], ephemeral);
    assert_eq!(body["tools"][1]["name"], "search");
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": "Weather in Bern?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "Bern"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "4 degrees", "cache_control": ephemeral}
            ]}
        ])
    );
    // Exactly three breakpoints (the API allows four).
    assert_eq!(body.to_string().matches(EPHEMERAL).count(), 3);

    // The next call of the conversation: the breakpoint moves to the new last block,
    // and the usage reports what was written, then read.
    let mut env = outcome.env;
    env.take_usage();
    env.messages.push(Message::user("And tomorrow?"));
    let outcome = agent.turn(env).await.unwrap();
    let body = server.requests()[1].json();
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(
        messages[4],
        json!({"role": "user", "content": [{"type": "text", "text": "And tomorrow?", "cache_control": ephemeral}]})
    );
    // The block that had the breakpoint last time is plain again.
    assert_eq!(messages[2]["content"][0].get("cache_control"), None);
    assert_eq!(messages[3]["content"], json!("A cat."));
    assert_eq!(body.to_string().matches(EPHEMERAL).count(), 3);
    let usage = outcome.env.usage();
    assert_eq!((usage.cached_tokens, usage.cache_write_tokens), (1800, 40));
    assert_eq!(usage.input_tokens, 30 + 40 + 1800);
}

#[tokio::test]
async fn anthropic_without_prompt_caching_sends_no_breakpoint() {
    let server = Server::start(vec![anthropic_reply(
        json!({"input_tokens": 20, "output_tokens": 4}),
    )])
    .await;
    let model = anthropic(&server).prompt_caching(false);
    let mut env = Env::new();
    env.tools = vec![weather_tool()];
    env.messages.push(Message::system("You are a weather bot."));
    env.messages.push(Message::user("Weather in Bern?"));
    model.complete(&env).await.unwrap();
    let body = server.requests()[0].json();
    assert!(!body.to_string().contains("cache_control"), "{body}");
    assert_eq!(body["system"], json!("You are a weather bot."));
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": "Weather in Bern?"}])
    );
    // The tool JSON is cached per setting: the same codec with caching on again puts
    // the breakpoint back.
    let codec = model.wire().clone().prompt_caching(true);
    let again: Value =
        serde_json::from_slice(&codec.encode(&env.messages, &env.tools, false).unwrap()).unwrap();
    assert_eq!(
        again["tools"][0]["cache_control"],
        serde_json::from_str::<Value>(EPHEMERAL).unwrap()
    );
}

#[tokio::test]
async fn anthropic_streams_report_cache_reads_and_writes() {
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [], "stop_reason": null, "usage": {"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 200, "cache_read_input_tokens": 1500}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "A cat."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}),
        json!({"type": "message_stop"}),
    ];
    let text: String = events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect();
    let server = Server::start(vec![Reply::stream_split(&text, 17)]).await;
    let model = anthropic(&server).stream(true);
    let completion = call(&model, vec![Message::user("hi")]).await.unwrap();
    let usage = completion.usage.unwrap();
    assert_eq!(
        (
            usage.input_tokens,
            usage.output_tokens,
            usage.cached_tokens,
            usage.cache_write_tokens
        ),
        (1710, 3, 1500, 200)
    );
}

#[tokio::test]
async fn openai_reports_cache_reads_and_openrouter_cache_writes() {
    let server = Server::start(vec![
        openai_reply(json!({"prompt_tokens": 2000, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 1920}})),
        openai_reply(json!({"prompt_tokens": 2000, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 1990}})),
    ])
    .await;
    let model = openai(&server);
    let first = call(&model, vec![Message::user("hi")])
        .await
        .unwrap()
        .usage
        .unwrap();
    assert_eq!(
        (
            first.input_tokens,
            first.cached_tokens,
            first.cache_write_tokens
        ),
        (2000, 1920, 0)
    );
    let second = call(&model, vec![Message::user("hi")])
        .await
        .unwrap()
        .usage
        .unwrap();
    assert_eq!((second.cached_tokens, second.cache_write_tokens), (0, 1990));
    // OpenAI caches by itself: no breakpoint or cache field is sent.
    assert!(!server.requests()[0].json().to_string().contains("cache"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parts_survive_the_sqlite_store() {
    use brute::session::{SessionStore, SqliteStore};
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("sessions.db")).unwrap();
    let messages = vec![
        Message::user("Read this.").with_part(Part::pdf(PDF).titled("vet.pdf")),
        Message::assistant("Done."),
    ];
    let (mut lease, loaded) = store.open("s").await.unwrap();
    assert!(loaded.is_empty());
    store.append(&mut lease, &messages).await.unwrap();
    store.release(lease).await.unwrap();
    assert_eq!(store.load("s").await.unwrap(), messages);
}

/// Takes a screenshot: a tool whose result is a picture beside its text.
#[brute::tool]
async fn screenshot(
    _cx: &brute::tools::ToolContext,
) -> Result<brute::tools::ToolOutput, brute::tools::ToolError> {
    Ok(brute::tools::ToolOutput::text("the screen")
        .with_part(Part::image("image/png", PNG).map_err(|e| e.to_string())?))
}

#[tokio::test]
async fn a_tools_picture_reaches_the_model_in_its_tool_result() {
    let calls_the_tool = Reply::json(
        &json!({
            "id": "msg_0", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "screenshot", "input": {}}],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 5, "output_tokens": 2}
        })
        .to_string(),
    );
    let server = Server::start(vec![
        calls_the_tool,
        anthropic_reply(json!({"input_tokens": 5, "output_tokens": 2})),
    ])
    .await;
    let model = anthropic(&server).prompt_caching(false);
    let dir = tempfile::tempdir().unwrap();
    let agent = brute_agent! {
        use brute::middleware::Loop::ToolResult;
        use brute::tools::DefaultToolPipeline { tools: (Screenshot,), root: dir.path(), output_dir: dir.path() };
        run model;
    };
    agent.start("What is on the screen?").await.unwrap();
    let second = server.requests()[1].json();
    assert_eq!(
        second["messages"][2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_BASE64}},
                {"type": "text", "text": "the screen"}
            ]}
        ]})
    );
}
