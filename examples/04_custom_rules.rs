//! 04 — custom rules: project rules in the system prompt, rebuilt each turn with the
//! model's name, the working directory and the date (`Prompt::environment`). The
//! example shows the prompt the model receives and checks the reply keeps the rules.
//!
//! ```text
//! cargo run --example 04_custom_rules
//! BRUTE_MODEL=ollama:qwen3:4b cargo run --example 04_custom_rules
//! ```

mod common;

use std::sync::{Arc, Mutex};

use brute::providers::{AnyModel, ScriptedModel};
use brute::{
    Env, Message, Model, Role, brute_agent,
    middleware::{Prompt, SystemPrompt},
};

/// The project's rules, as a team would keep them (an `AGENTS.md`, say).
const RULES: &str = "\
- Answer in at most two sentences.
- Always name the file you would change.
- End every answer with the word DONE.";

/// The offline model: follows the rules it finds in the system message, and only those.
pub(crate) fn script(env: &Env) -> Message {
    let system = env
        .messages
        .first()
        .filter(|m| m.role == Role::System)
        .map_or("", |m| m.content.as_str());
    let mut reply = String::from("Rename `parse` to `parse_line` in src/parser.rs.");
    if system.contains("End every answer with the word DONE") {
        reply.push_str(" DONE");
    }
    Message::assistant(reply)
}

pub(crate) async fn run(model: AnyModel) -> Result<(), Box<dyn std::error::Error>> {
    let prompt: Prompt = Prompt::environment("You are a code reviewer.")
        .model(model.name())
        .rules(RULES)
        .into();
    let seen = Arc::new(Mutex::new(String::new()));
    let capture = seen.clone();
    let mut agent = brute_agent! {
        use SystemPrompt { prompt: prompt };
        run model;
    };
    agent.on(brute::EventKind::ModelRequest, move |env, _event| {
        if let Some(system) = env.messages.first().filter(|m| m.role == Role::System)
            && let Ok(mut seen) = capture.lock()
        {
            seen.clone_from(&system.content);
        }
    });
    let task = "How should I make `parse` clearer?";
    println!("user: {task}");
    let outcome = agent.start(task).await?;
    let reply = outcome.text().unwrap_or_default();
    println!("assistant: {reply}");
    let system = seen.lock().map(|s| s.clone()).unwrap_or_default();
    println!("\nThe system prompt the model received:\n---\n{system}\n---");
    if !system.contains(RULES) {
        return Err("the rules did not reach the model".into());
    }
    if !reply.trim_end().ends_with("DONE") {
        return Err(
            format!("the reply broke the rule `End every answer with DONE`: {reply:?}").into(),
        );
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), common::Report> {
    let model = common::model(ScriptedModel::from_fn(script).named("scripted"));
    Ok(run(model).await?)
}
