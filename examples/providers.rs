//! One agent, any provider: OpenAI, Anthropic or a local Ollama, whichever the
//! environment names, and a scripted model when none is set (so this runs offline).
//!
//! ```text
//! cargo run --example providers                              # scripted, offline
//! OPENAI_API_KEY=sk-.. cargo run --example providers         # OPENAI_MODEL, default gpt-4o-mini
//! ANTHROPIC_API_KEY=sk-ant-.. cargo run --example providers  # ANTHROPIC_MODEL, default claude-sonnet-4-5
//! OLLAMA_HOST=localhost:11434 cargo run --example providers  # OLLAMA_MODEL, default qwen3:4b
//! cargo run --example providers -- "Your own prompt"
//! ```
//!
//! Text is streamed to the terminal as it arrives; the token usage of the turn is
//! printed at the end.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use brute::{
    Event, EventKind, Message, Model, brute_agent,
    middleware::SystemPrompt,
    providers::{Anthropic, OpenAi, ScriptedModel},
};

/// The same stack whatever the model: a system prompt, then one completion.
async fn run<M: Model>(provider: &str, model: M, prompt: &str) -> Result<(), brute::Error> {
    println!("[{provider} / {}]", model.name());
    let mut agent = brute_agent! {
        use SystemPrompt { prompt: "You are terse: answer in one sentence." };
        run model;
    };
    let streamed = Arc::new(AtomicBool::new(false));
    let seen = streamed.clone();
    agent.on(EventKind::ContentDelta, move |_env, event| {
        if let Event::ContentDelta(text) = event {
            seen.store(true, Ordering::Relaxed);
            print!("{text}");
            let _ = std::io::stdout().flush();
        }
    });
    let outcome = agent.start(prompt).await?;
    if streamed.load(Ordering::Relaxed) {
        println!();
    } else {
        println!("{}", outcome.text().unwrap_or_default());
    }
    if let Some(usage) = outcome.env.metadata.get("usage") {
        println!("usage: {usage}");
    }
    Ok(())
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

#[tokio::main]
async fn main() -> Result<(), brute::Error> {
    let prompt = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "Name three prime numbers.".to_string());
    if var("OPENAI_API_KEY").is_some() {
        let name = var("OPENAI_MODEL").unwrap_or_else(|| "gpt-4o-mini".into());
        run("openai", OpenAi::new(name).stream(true), &prompt).await
    } else if var("ANTHROPIC_API_KEY").is_some() {
        let name = var("ANTHROPIC_MODEL").unwrap_or_else(|| "claude-sonnet-4-5".into());
        run(
            "anthropic",
            Anthropic::new(name).max_tokens(1024).stream(true),
            &prompt,
        )
        .await
    } else if var("OLLAMA_HOST").is_some() {
        let name = var("OLLAMA_MODEL").unwrap_or_else(|| "qwen3:4b".into());
        run("ollama", OpenAi::ollama(name).stream(true), &prompt).await
    } else {
        println!("(no OPENAI_API_KEY, ANTHROPIC_API_KEY or OLLAMA_HOST: using a scripted model)");
        let model = ScriptedModel::new([Message::assistant("2, 3 and 5.")]);
        run("scripted", model, &prompt).await
    }
}
