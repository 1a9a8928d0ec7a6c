//! One agent, any provider, chosen by one string: `BRUTE_MODEL` (or `--model SPEC`),
//! and a scripted model when none is set, so this runs offline.
//!
//! ```text
//! cargo run --example providers                                           # scripted, offline
//! BRUTE_MODEL=openai:gpt-4o-mini cargo run --example providers            # OPENAI_API_KEY
//! BRUTE_MODEL=anthropic:claude-sonnet-4-5 cargo run --example providers   # ANTHROPIC_API_KEY
//! BRUTE_MODEL=responses:gpt-5 cargo run --example providers               # OPENAI_API_KEY, Responses API
//! BRUTE_MODEL=gemini:gemini-2.5-flash cargo run --example providers       # GEMINI_API_KEY or GOOGLE_API_KEY
//! BRUTE_MODEL=ollama:qwen3:4b cargo run --example providers               # OLLAMA_HOST or localhost
//! cargo run --example providers -- --model http://localhost:8000/v1#qwen "Your own prompt"
//! ```
//!
//! With no `BRUTE_MODEL`, a set `OPENAI_API_KEY`, `ANTHROPIC_API_KEY` or `GEMINI_API_KEY` picks that
//! provider's default model (`brute::providers::from_env`). Text is streamed to the
//! terminal as it arrives; the token usage of the turn is printed at the end.

mod common;

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use brute::{
    Event, EventKind, Message, Model, brute_agent,
    middleware::SystemPrompt,
    providers::{self, AnyModel, ScriptedModel},
};

#[tokio::main]
async fn main() -> Result<(), common::Report> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let spec = match args.iter().position(|a| a == "--model") {
        Some(at) if at + 1 < args.len() => {
            let spec = args.remove(at + 1);
            args.remove(at);
            Some(spec)
        }
        Some(_) => return Err("`--model` needs a spec, e.g. openai:gpt-4o-mini".into()),
        None => None,
    };
    let prompt = args
        .first()
        .cloned()
        .unwrap_or_else(|| "Name three prime numbers.".to_string());
    let chosen = match spec {
        Some(spec) => Some(providers::from_spec(&spec)?),
        None => providers::from_env()?,
    };
    let model = match chosen {
        Some(model) => model.stream(true),
        None => {
            println!(
                "(no BRUTE_MODEL, OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY: using a scripted model)"
            );
            AnyModel::from(
                ScriptedModel::new([Message::assistant("2, 3 and 5.")]).named("scripted"),
            )
        }
    };
    println!("[{}]", model.name());

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
    let usage = outcome.env.usage();
    if usage.total() > 0 {
        println!(
            "usage: {} tokens in, {} out",
            usage.input_tokens, usage.output_tokens
        );
    }
    Ok(())
}
