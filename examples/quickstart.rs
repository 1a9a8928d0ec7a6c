//! The quickstart: an agent that runs offline, on a scripted model.
//!
//! `cargo run --example quickstart`

use brute::{
    Event, EventKind, Loop, MaxIterations, Message, ScriptedModel, SystemPrompt, brute_agent,
};

#[tokio::main]
async fn main() -> Result<(), brute::Error> {
    // A model that needs no network and no API key: it replays its script.
    let model = ScriptedModel::per_turn([
        Message::assistant("Thinking about it..."),
        Message::assistant("Hello! I am a brute agent running on a scripted model."),
    ]);

    let mut agent = brute_agent! {
        use SystemPrompt { prompt: "You are terse." };
        use Loop::While { condition: |env| env.iteration < 2 };
        use MaxIterations { max: 10 };
        run model;
    };
    agent.on(EventKind::ModelResponse, |env, event| {
        if let Event::ModelResponse { message, .. } = event {
            println!("[pass {}] assistant: {}", env.iteration, message.content);
        }
    });

    let outcome = agent.start("Say hello.").await?;
    println!("stopped: {:?}", outcome.stop);
    println!(
        "{} messages in the conversation",
        outcome.env.messages.len()
    );
    Ok(())
}
