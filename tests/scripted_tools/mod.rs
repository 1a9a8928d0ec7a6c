//! A test-local tool pipeline for the turn-middleware tests, until `DefaultToolPipeline`
//! (issue 4) lands: it advertises one `echo` tool, lets the model answer, then runs
//! every tool call of the answer, appending one result per call and taking the durability step
//! after each (as a real tool pipeline does).

#![allow(dead_code)]

use std::time::Duration;

use brute::{Env, Error, Event, Handler, Message, ToolCall, model::ToolSpec};

/// Runs the model's tool calls: the result of `echo` is its `text` argument; a call
/// named `fail` gives an error result.
#[derive(brute::Middleware)]
#[middleware(provides = brute::kind::ToolPipeline)]
pub struct RunTools<A> {
    app: A,
    /// How long each tool takes.
    delay: Duration,
}

impl<A: Handler<Env>> Handler<Env> for RunTools<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        if env.tools.is_empty() {
            env.tools.push(ToolSpec::new(
                "echo",
                "Echoes its text.",
                serde_json::json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            ));
        }
        self.app.call(env).await?;
        let calls: Vec<ToolCall> = match env.messages.last() {
            Some(m) if m.has_tool_calls() => m.tool_calls.clone(),
            _ => return Ok(()),
        };
        for call in &calls {
            env.emit(Event::ToolCallStart { call });
            if !self.delay.is_zero() {
                tokio::time::sleep(self.delay).await;
            }
            let is_error = call.name != "echo";
            let text = if is_error {
                format!("error: unknown tool {}", call.name)
            } else {
                call.arguments["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            };
            env.messages
                .push(Message::tool_result(call.id.clone(), text));
            env.persist().await?;
            if let Some(result) = env.messages.last() {
                env.emit(Event::ToolResult {
                    call,
                    result,
                    is_error,
                });
            }
        }
        Ok(())
    }
}

/// An assistant message calling `echo` once per text, with ids `<prefix>-<i>`.
pub fn echo_calls(prefix: &str, texts: &[&str]) -> Message {
    Message::tool_calls(
        "",
        texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                ToolCall::new(
                    format!("{prefix}-{i}"),
                    "echo",
                    serde_json::json!({ "text": t }),
                )
            })
            .collect(),
    )
}

/// Panics unless every tool call in `messages` is followed, in the run of tool
/// messages right after it, by a result with its id.
pub fn assert_no_dangling_call(messages: &[Message]) {
    for (i, m) in messages.iter().enumerate() {
        if !m.has_tool_calls() {
            continue;
        }
        let results: Vec<&str> = messages[i + 1..]
            .iter()
            .take_while(|r| r.role == brute::Role::Tool)
            .filter_map(|r| r.tool_call_id.as_deref())
            .collect();
        for call in &m.tool_calls {
            assert!(
                results.contains(&call.id.as_str()),
                "tool call {} (message {i}) has no result in {messages:#?}",
                call.id
            );
        }
    }
}
