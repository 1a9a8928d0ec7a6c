//! A brute server to try with `curl` or a browser, offline: a scripted model that
//! streams its replies and asks before it runs its one tool.
//!
//! ```text
//! cargo run -p brute-serve --example serve            # listens on 127.0.0.1:8080
//! curl -N -H 'Authorization: Bearer dev-token' -H 'content-type: application/json' -d '{"input":"hello"}' \
//!      http://127.0.0.1:8080/v1/sessions/demo/turns
//! curl -N -H 'Authorization: Bearer dev-token' -H 'content-type: application/json' -d '{"input":"please launch"}' \
//!      http://127.0.0.1:8080/v1/sessions/demo/turns      # pauses: approval_required
//! curl -N -H 'Authorization: Bearer dev-token' -H 'content-type: application/json' -d '{"decision":"approve"}' \
//!      http://127.0.0.1:8080/v1/sessions/demo/approvals/CALL_ID
//! ```
//!
//! Or open http://127.0.0.1:8080/ and enter the token. `BRUTE_TOKEN` sets the token,
//! `BRUTE_ADDR` the address; sessions are kept in `brute-serve-example/` in the
//! system's temporary folder. Ctrl-C stops the server once running turns end.

use std::sync::Arc;
use std::time::Duration;

use brute::session::JsonlStore;
use brute::tools::{Approval, DefaultToolPipeline, ToolContext, ToolError};
use brute::{
    Completion, Env, Event, Message, Model, Role, ToolCall, brute_agent,
    middleware::{Loop, MaxIterations, SessionLog, SystemPrompt},
};
use brute_serve::Server;
use serde_json::json;

/// Launches a (pretend) rocket.
#[brute::tool]
async fn launch(
    /// Where to.
    target: String,
    _cx: &ToolContext,
) -> Result<String, ToolError> {
    Ok(format!("the rocket is on its way to {target}"))
}

/// Streams its replies word by word; asks to launch when the user says "launch".
struct Demo;

impl Model for Demo {
    async fn complete(&self, env: &Env) -> Result<Completion, brute::Error> {
        let last = env.messages.last();
        let (text, calls) = match last {
            Some(m) if m.role == Role::User && m.content.contains("launch") => (
                "Preparing the launch to the moon: I need your approval.".to_owned(),
                vec![ToolCall::new(
                    "launch-1",
                    "launch",
                    json!({ "target": "the moon" }),
                )],
            ),
            Some(m) if m.role == Role::Tool => (format!("Done: {}.", m.content), vec![]),
            Some(m) => (
                format!(
                    "You said: {}. Say \"launch\" to see an approval.",
                    m.content
                ),
                vec![],
            ),
            None => ("Hello.".to_owned(), vec![]),
        };
        for word in text.split_inclusive(' ') {
            tokio::time::sleep(Duration::from_millis(60)).await;
            env.emit(Event::ContentDelta(word));
        }
        Ok(Message::tool_calls(text, calls).into())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let token = std::env::var("BRUTE_TOKEN").unwrap_or_else(|_| "dev-token".to_owned());
    let addr = std::env::var("BRUTE_ADDR").unwrap_or_else(|_| "127.0.0.1:8080".to_owned());
    let store = Arc::new(JsonlStore::new(
        std::env::temp_dir().join("brute-serve-example"),
    ));
    let root = std::env::temp_dir();
    let agent = brute_agent! {
        use SessionLog { store: store.clone() };
        use SystemPrompt { prompt: "You are a demo." };
        use Loop::ToolResult;
        use MaxIterations { max: 5 };
        use DefaultToolPipeline { tools: (Launch,), root: root, approval: Approval::ask(["launch"]) };
        run Demo;
    };
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("serving on http://{addr}/  (token: {token})");
    Server::new(store)
        .agent("demo", agent)
        .bearer_token(token)
        .serve(listener, async {
            tokio::signal::ctrl_c().await.ok();
        })
        .await?;
    Ok(())
}
