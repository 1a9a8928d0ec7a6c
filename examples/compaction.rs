//! Compaction: a long conversation on a session, compacted whenever it passes eight
//! messages. Every compaction emits `Event::Compacted` with the messages it dropped or
//! rewrote, and this example archives them to `archive.jsonl` beside the session, so
//! nothing is lost: the session holds what the model sees, the archive the rest.
//!
//! ```text
//! cargo run --example compaction
//! BRUTE_MODEL=openai:gpt-4o-mini cargo run --example compaction
//! ```

mod common;

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use brute::compaction::{DefaultCompactionPipeline, Trigger};
use brute::providers::{AnyModel, ScriptedModel};
use brute::{
    Env, Event, EventKind, Message, Role, brute_agent,
    middleware::{Loop, MaxIterations, SessionLog, SystemPrompt},
};

/// The offline model: answers each question, or summarises when asked to (the
/// summariser is a model call like any other).
pub(crate) fn script(env: &Env) -> Message {
    let last = env.messages.last().map_or("", |m| m.content.as_str());
    if env
        .messages
        .iter()
        .any(|m| m.role == Role::System && m.content.contains("summar"))
    {
        return Message::assistant(
            "Summary: the user asked about five planets; each was answered.",
        );
    }
    Message::assistant(format!("Noted: {last} (a long answer would go here)."))
}

pub(crate) async fn run(model: AnyModel, dir: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let session = dir.join("session.jsonl");
    let archive_path = dir.join("archive.jsonl");
    let archive = Arc::new(Mutex::new(common::fs::create(&archive_path)?));
    let summariser = model.clone();
    let mut agent = brute_agent! {
        use SessionLog { path: &session };
        use SystemPrompt { prompt: "You answer questions about planets in one sentence." };
        use Loop::While;
        use MaxIterations { max: 5 };
        use DefaultCompactionPipeline {
            window: 100_000,
            trigger: Trigger::Messages(8),
            summariser: summariser,
        };
        run model;
    };
    let sink = archive.clone();
    agent.on(EventKind::Compacted, move |_env, event| {
        if let Event::Compacted { strategy, removed, tokens_before, tokens_after, .. } = event {
            println!(
                "  [compacted by {strategy}: {} messages archived, ~{tokens_before} -> ~{tokens_after} tokens]",
                removed.len()
            );
            if let Ok(mut file) = sink.lock() {
                for message in removed.iter() {
                    if let Ok(line) = serde_json::to_string(message) {
                        let _ = writeln!(file, "{line}");
                    }
                }
            }
        }
    });
    for planet in ["Mercury", "Venus", "Mars", "Jupiter", "Saturn", "Neptune"] {
        let question = format!("Tell me one fact about {planet}.");
        println!("user: {question}");
        let outcome = agent.start(question).await?;
        println!("assistant: {}", outcome.text().unwrap_or_default());
    }
    let kept = common::fs::read(&session)?.lines().count();
    let archived = common::fs::read(&archive_path)?.lines().count();
    println!("(the session keeps {kept} messages; the archive holds {archived} given up)");
    if archived == 0 {
        return Err(
            "twelve messages past an eight-message trigger, and nothing was compacted".into(),
        );
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), common::Report> {
    let model = common::model(ScriptedModel::from_fn(script).named("scripted"));
    let dir = common::fs::tempdir()?;
    Ok(run(model, dir.path()).await?)
}
