//! 03 — session persistence across runs: each run of this program is one turn on the
//! same session file, and each run sees what the earlier ones said.
//!
//! ```text
//! cargo run --example 03_sessions -- /tmp/s.jsonl "My name is Ada."
//! cargo run --example 03_sessions -- /tmp/s.jsonl "What is my name?"   # remembers
//! cargo run --example 03_sessions                                      # both, offline
//! ```
//!
//! With no arguments it plays both runs itself in a fresh temporary session, each on
//! an agent of its own, as two processes would, and checks the second remembered.
//! The session is a JSONL file, one message per line, durable as the turn runs.

mod common;

use std::path::Path;

use brute::providers::{AnyModel, ScriptedModel};
use brute::{
    Env, Message, Role, brute_agent,
    middleware::{SessionLog, SystemPrompt},
};

/// The offline model: remembers a name it was told, earlier in this run or another.
pub(crate) fn script(env: &Env) -> Message {
    let said = |m: &&Message| m.role == Role::User;
    let name = env
        .messages
        .iter()
        .filter(said)
        .find_map(|m| m.content.split("name is ").nth(1))
        .map(|rest| rest.trim_end_matches(['.', '!']).to_owned());
    let last = env.messages.iter().rev().find(said);
    match (last, name) {
        (Some(m), Some(name)) if m.content.contains('?') => {
            Message::assistant(format!("Your name is {name}."))
        }
        (Some(m), _) if m.content.contains('?') => Message::assistant("You have not told me."),
        _ => Message::assistant("Nice to meet you."),
    }
}

/// One run: one turn on the session at `path`, by a new agent, as a new process would.
async fn one_run(model: &AnyModel, path: &Path, prompt: &str) -> Result<String, brute::Error> {
    let model = model.clone();
    let agent = brute_agent! {
        use SessionLog { path: path };
        use SystemPrompt { prompt: "You are terse. Remember what the user tells you." };
        run model;
    };
    println!("user: {prompt}");
    let outcome = agent.start(prompt).await?;
    let reply = outcome.text().unwrap_or_default().to_owned();
    println!("assistant: {reply}");
    Ok(reply)
}

pub(crate) async fn run(model: AnyModel, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    println!("-- run 1");
    one_run(&model, path, "My name is Ada.").await?;
    println!("-- run 2 (a new agent on the same session)");
    let reply = one_run(&model, path, "What is my name?").await?;
    let lines = common::fs::read(path)?.lines().count();
    println!("({} holds {lines} messages)", path.display());
    if !reply.contains("Ada") {
        return Err(format!("the second run forgot the name: {reply:?}").into());
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), common::Report> {
    let model = common::model(ScriptedModel::from_fn(script).named("scripted"));
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [path, prompt] => {
            one_run(&model, Path::new(path), prompt).await?;
            Ok(())
        }
        [] => {
            let dir = common::fs::tempdir()?;
            Ok(run(model, &dir.path().join("session.jsonl")).await?)
        }
        _ => Err("usage: 03_sessions [SESSION_PATH PROMPT]".into()),
    }
}
