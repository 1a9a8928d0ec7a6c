//! 05 — multi-turn: a conversation of several turns in memory, each turn starting from
//! the env the last one ended with (no session file; see 03 for one).
//!
//! ```text
//! cargo run --example 05_multi_turn
//! BRUTE_MODEL=openai:gpt-4o-mini cargo run --example 05_multi_turn
//! ```

mod common;

use brute::providers::{AnyModel, ScriptedModel};
use brute::{Env, Message, Role, brute_agent, middleware::SystemPrompt};

/// The offline model: keeps a running total of the numbers the user gave.
pub(crate) fn script(env: &Env) -> Message {
    let total: i64 = env
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .flat_map(|m| m.content.split_whitespace())
        .filter_map(|word| {
            word.trim_matches(|c: char| !c.is_ascii_digit() && c != '-')
                .parse::<i64>()
                .ok()
        })
        .sum();
    Message::assistant(format!("The total so far is {total}."))
}

pub(crate) async fn run(model: AnyModel) -> Result<(), Box<dyn std::error::Error>> {
    let agent = brute_agent! {
        use SystemPrompt { prompt: "Keep a running total of every number the user gives you. Answer only with: The total so far is N." };
        run model;
    };
    let mut env = agent.env();
    let mut last = String::new();
    for prompt in ["Add 5.", "Add 12.", "Add 25, please."] {
        println!("user: {prompt}");
        env.messages.push(Message::user(prompt));
        let outcome = agent.turn(env).await?;
        last = outcome.text().unwrap_or_default().to_owned();
        println!("assistant: {last}");
        env = outcome.env; // the next turn continues this conversation
    }
    println!("({} messages in the conversation)", env.messages.len());
    if !last.contains("42") {
        return Err(format!("the third turn lost the earlier ones: {last:?}").into());
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), common::Report> {
    let model = common::model(ScriptedModel::from_fn(script).named("scripted"));
    Ok(run(model).await?)
}
