//! A turn that returns a typed struct: the schema comes from the type, the provider is
//! held to it by its own mechanism (OpenAI's strict `response_format`, Anthropic's
//! forced tool), and an answer that does not fit goes back to the model with what was
//! wrong, at most twice.
//!
//! ```text
//! cargo run --example structured_output                               # scripted, offline
//! OPENAI_API_KEY=sk-.. cargo run --example structured_output          # gpt-4o-mini
//! ANTHROPIC_API_KEY=sk-ant-.. cargo run --example structured_output   # claude-sonnet-4-5
//! ```
//!
//! Offline, a scripted model plays a model that forgets a field the first time, so the
//! correction round is visible.

mod common;

use brute::structured::{OutputSchema, Structured, TypedAgent, schemars, serde};
use brute::{
    Env, Message, Model, Role, brute_agent,
    middleware::SystemPrompt,
    providers::{Anthropic, OpenAi, ScriptedModel},
};

/// A film, as the model must describe it.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(crate = "brute::structured::serde")]
#[schemars(crate = "brute::structured::schemars")]
struct Film {
    /// The original title.
    title: String,
    /// The year of its release.
    year: u16,
    /// Its directors.
    directors: Vec<String>,
    /// One sentence on what happens.
    plot: String,
}

async fn run<M: Model>(model: M) -> Result<(), brute::Error> {
    println!("[{}]", model.name());
    let agent = brute_agent! {
        use SystemPrompt { prompt: "You are a film archivist." };
        use Structured { retries: 2 };
        run model;
    };
    let film = agent
        .start_typed::<Film>("Which film won the Palme d'Or in 1994?")
        .await?;
    let Film {
        title,
        year,
        directors,
        plot,
    } = &film.value;
    println!("{title} ({year}), by {}: {plot}", directors.join(" and "));
    let corrections = film
        .outcome
        .env
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .skip(1)
        .count();
    println!(
        "({corrections} correction(s); {} tokens)",
        film.outcome.env.usage().total()
    );
    Ok(())
}

/// A model that leaves out the plot the first time, and gets it right once told.
fn scripted() -> ScriptedModel {
    ScriptedModel::from_fn(|env: &Env| {
        let schema = env
            .extensions
            .get::<OutputSchema>()
            .map(|o| o.name().to_owned());
        let corrected = env
            .messages
            .last()
            .is_some_and(|m| m.role == Role::User && m.content.contains("does not match"));
        if let Some(last) = env.messages.last() {
            println!("  {} asks: {}", last.role, last.content);
        }
        let answer = if corrected {
            r#"{"title": "Pulp Fiction", "year": 1994, "directors": ["Quentin Tarantino"], "plot": "Two hitmen, a boxer and a gangster's wife cross paths in Los Angeles."}"#
        } else {
            r#"{"title": "Pulp Fiction", "year": 1994, "directors": ["Quentin Tarantino"]}"#
        };
        println!(
            "  model answers ({}): {answer}",
            schema.as_deref().unwrap_or("free text")
        );
        Message::assistant(answer)
    })
}

#[tokio::main]
async fn main() -> Result<(), common::Report> {
    if std::env::var("OPENAI_API_KEY").is_ok_and(|k| !k.is_empty()) {
        Ok(run(OpenAi::new("gpt-4o-mini")).await?)
    } else if std::env::var("ANTHROPIC_API_KEY").is_ok_and(|k| !k.is_empty()) {
        Ok(run(Anthropic::new("claude-sonnet-4-5")).await?)
    } else {
        println!("No OPENAI_API_KEY or ANTHROPIC_API_KEY: using a scripted model.");
        Ok(run(scripted()).await?)
    }
}
