//! What the numbered examples share: the model they run on, and how they print a turn.
//!
//! Each example runs on the model `BRUTE_MODEL` names (`openai:gpt-4o-mini`,
//! `anthropic:claude-sonnet-4-5`, `ollama:qwen3:4b`, `http://host:8000/v1#name`), or on
//! the default model of a provider whose key is set (`OPENAI_API_KEY`,
//! `ANTHROPIC_API_KEY`); with neither, or with `BRUTE_MODEL=scripted`, on its own
//! scripted model, offline, and it says so.

#![allow(dead_code)] // each example uses what it needs

use brute::providers::{self, AnyModel, ScriptedModel};
use brute::{Agent, Env, Event, EventKind, Handler, Model};

/// The model from the environment, or `script` when none is configured. Exits with
/// status 2 and the reason when `BRUTE_MODEL` names no usable model.
pub fn model(script: ScriptedModel) -> AnyModel {
    match providers::from_env() {
        Ok(Some(model)) => {
            println!("[model: {} (from BRUTE_MODEL or an API key)]", model.name());
            model
        }
        Ok(None) => {
            println!(
                "[model: scripted, offline; set BRUTE_MODEL=openai:gpt-4o-mini (or anthropic:.., ollama:..) to use a real one]"
            );
            AnyModel::from(script)
        }
        Err(error) => {
            eprintln!("{error}");
            std::process::exit(2);
        }
    }
}

/// Prints the model's replies and each tool call with the first line of its result.
pub fn print_turns<S: Handler<Env>>(agent: &mut Agent<S>) {
    agent
        .on(EventKind::ModelResponse, |_env, event| {
            if let Event::ModelResponse { message, .. } = event
                && !message.content.trim().is_empty()
            {
                println!("assistant: {}", message.content.trim());
            }
        })
        .on(EventKind::ToolCallStart, |_env, event| {
            if let Event::ToolCallStart { call } = event {
                println!("  [{}] {}", call.name, call.arguments);
            }
        })
        .on(EventKind::ToolResult, |_env, event| {
            if let Event::ToolResult {
                call,
                result,
                is_error,
            } = event
            {
                let first = result.content.lines().next().unwrap_or("");
                let mark = if *is_error { "error" } else { "ok" };
                println!("  [{} {mark}] {first}", call.name);
            }
        });
}

/// The tool results since the last user message, oldest first: what a scripted model
/// reads to decide its next step.
pub fn results_this_turn(env: &Env) -> Vec<&brute::Message> {
    let start = env
        .messages
        .iter()
        .rposition(|m| m.role == brute::Role::User)
        .map_or(0, |i| i + 1);
    env.messages[start..]
        .iter()
        .filter(|m| m.role == brute::Role::Tool)
        .collect()
}
