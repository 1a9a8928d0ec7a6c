//! Handoffs: a triage agent hands the conversation to a billing agent (its own prompt
//! and model) through the tool `transfer_to_billing`; billing answers the rest of the
//! turn, and the session file names it on each of its messages.
//!
//! ```text
//! cargo run --example handoff
//! BRUTE_MODEL=openai:gpt-4o-mini cargo run --example handoff
//! ```

mod common;

use std::path::Path;

use brute::middleware::{Handoff, Handoffs, History, SessionLog, SystemPrompt};
use brute::providers::{AnyModel, ScriptedModel};
use brute::{Env, Message, Role, ToolCall, brute_agent};
use serde_json::json;

/// Offline triage: hands a question about money to billing, answers the rest itself.
pub fn triage_script(env: &Env) -> Message {
    match env.messages.last() {
        Some(m) if m.role == Role::User && m.content.contains("charged") => Message::tool_calls(
            "",
            vec![ToolCall::new("t1", "transfer_to_billing", json!({}))],
        ),
        _ => Message::assistant("Glad to help."),
    }
}

/// Offline billing: answers from the request it was given.
pub fn billing_script(env: &Env) -> Message {
    let asked = env.messages.iter().rev().find(|m| m.role == Role::User);
    Message::assistant(format!(
        "Billing here: about \"{}\", the second charge is refunded.",
        asked.map_or("", |m| m.content.as_str())
    ))
}

/// Runs two turns; fails unless billing answered the first and triage the second, as
/// the session file records.
pub async fn run(triage: AnyModel, billing: AnyModel, session: &Path) -> Result<(), brute::Error> {
    let billing = brute_agent! {
        use SystemPrompt { prompt: "You are the billing desk. Answer questions about charges." };
        run billing;
    };
    let agent = brute_agent! {
        use SessionLog { path: session.to_path_buf() };
        use SystemPrompt { prompt: "You are triage. Hand questions about charges to billing." };
        use Handoffs {
            to: Handoff::new("billing", billing)
                .describe("Charges, invoices and refunds.")
                .history(History::LastUserMessage),
        };
        run triage;
    };
    for prompt in ["I was charged twice this month.", "Thanks!"] {
        let outcome = agent.start(prompt).await?;
        let who = outcome
            .message()
            .and_then(Message::agent)
            .unwrap_or("triage");
        println!("> {prompt}\n[{who}] {}", outcome.text().unwrap_or_default());
    }
    let stored = std::fs::read_to_string(session).map_err(brute::Error::other)?;
    let names: Vec<Option<String>> = stored
        .lines()
        .filter_map(|line| serde_json::from_str::<Message>(line).ok())
        .filter(|m| m.role == Role::Assistant && !m.has_tool_calls())
        .map(|m| m.agent().map(str::to_string))
        .collect();
    println!("who answered, as stored: {names:?}");
    if names != [Some("billing".to_string()), None] {
        return Err(brute::Error::layer(
            "example",
            format!("expected billing then triage to answer, the session says {names:?}"),
        ));
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), common::Report> {
    let triage = common::model(ScriptedModel::from_fn(triage_script).named("scripted-triage"));
    let billing = if triage.is_scripted() {
        ScriptedModel::from_fn(billing_script)
            .named("scripted-billing")
            .into()
    } else {
        triage.clone()
    };
    let dir = common::fs::tempdir()?;
    Ok(run(triage, billing, &dir.path().join("session.jsonl")).await?)
}
