//! Agent to agent: a coordinator delegates to a researcher that runs on another brute
//! server, over HTTP on 127.0.0.1. Both models are scripted, so this runs offline.
//!
//! `cargo run --example 08_agent_to_agent`
//!
//! The researcher is served by `brute_serve::Server` (its sessions in a JSONL store in
//! a temporary folder, bearer-token auth). The coordinator's only tool is a
//! `RemoteAgent`: each call runs a turn of the researcher through
//! `POST /v1/sessions/{id}/turns` and returns its answer.

mod common;

use std::sync::Arc;

use brute::session::JsonlStore;
use brute::tools::DefaultToolPipeline;
use brute::{
    Env, Event, EventKind, Message, Role, ToolCall, brute_agent,
    middleware::{Loop, MaxIterations, SessionLog, SystemPrompt},
    providers::ScriptedModel,
};
use brute_serve::{RemoteAgent, Server};
use serde_json::json;

/// The researcher: answers a question about a city from what it "knows".
fn researcher(env: &Env) -> Message {
    let question = env
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| m.content.to_lowercase())
        .unwrap_or_default();
    Message::assistant(if question.contains("lisbon") {
        "Lisbon: capital of Portugal, about 545,000 people, on the Tagus estuary."
    } else {
        "I only know about Lisbon."
    })
}

/// The coordinator: asks the researcher, then answers from its report.
fn coordinator(env: &Env) -> Message {
    match env.messages.last() {
        Some(m) if m.role == Role::User => Message::tool_calls(
            "Let me ask the researcher.",
            vec![ToolCall::new(
                "r1",
                "ask_researcher",
                json!({ "task": "What should a visitor know about Lisbon? Three facts." }),
            )],
        ),
        Some(m) if m.role == Role::Tool => {
            Message::assistant(format!("According to our researcher: {}", m.content))
        }
        _ => Message::assistant("I have nothing to add."),
    }
}

#[tokio::main]
async fn main() -> Result<(), common::Report> {
    // The researcher's server, on a free port of 127.0.0.1.
    let dir = std::env::temp_dir().join(format!("brute-08-{}", std::process::id()));
    let store = Arc::new(JsonlStore::new(&dir));
    let research = brute_agent! {
        use SessionLog { store: store.clone() };
        use SystemPrompt { prompt: "You research facts about cities." };
        run ScriptedModel::from_fn(researcher);
    };
    let token = "example-token";
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = Server::new(store)
        .agent("researcher", research)
        .bearer_token(token)
        .serve(listener, async {
            stopped.await.ok();
        });
    let server = tokio::spawn(server);
    println!("researcher serving at {base}");

    // The coordinator, here, with the researcher as a tool.
    let remote = RemoteAgent::new("ask_researcher", &base)
        .describe("Asks the research agent; give it the whole question.")
        .token(token)
        .agent("researcher");
    let mut coordinator = brute_agent! {
        use Loop::ToolResult;
        use MaxIterations { max: 4 };
        use DefaultToolPipeline { tools: (remote,) };
        run ScriptedModel::from_fn(coordinator);
    };
    coordinator
        .on(EventKind::ToolCallStart, |_env, event| {
            if let Event::ToolCallStart { call } = event {
                println!("coordinator -> {}: {}", call.name, call.arguments["task"]);
            }
        })
        .on(EventKind::ToolResult, |_env, event| {
            if let Event::ToolResult { result, .. } = event {
                println!("researcher -> coordinator: {}", result.content);
            }
        });

    println!("user: Plan my day in Lisbon.");
    let outcome = coordinator.start("Plan my day in Lisbon.").await?;
    println!("coordinator: {}", outcome.text().unwrap_or_default());

    stop.send(()).ok();
    server.await??;
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}
