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

/// An I/O error with the path it was about, shown as `cannot read /tmp/.../hello.txt:
/// No such file or directory (os error 2)`.
#[derive(Debug)]
pub struct PathError {
    /// What was being done: `read`, `write`, `create`, ...
    action: &'static str,
    path: std::path::PathBuf,
    source: std::io::Error,
}

impl std::fmt::Display for PathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot {} {}: {}",
            self.action,
            self.path.display(),
            self.source
        )
    }
}

impl std::error::Error for PathError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// `std::fs` calls whose errors name the path.
pub mod fs {
    use super::PathError;
    use std::path::Path;

    fn at<T>(
        action: &'static str,
        path: &Path,
        result: std::io::Result<T>,
    ) -> Result<T, PathError> {
        result.map_err(|source| PathError {
            action,
            path: path.to_path_buf(),
            source,
        })
    }

    /// `std::fs::read_to_string`.
    pub fn read(path: impl AsRef<Path>) -> Result<String, PathError> {
        let path = path.as_ref();
        at("read", path, std::fs::read_to_string(path))
    }

    /// `std::fs::write`.
    pub fn write(path: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> Result<(), PathError> {
        let path = path.as_ref();
        at("write", path, std::fs::write(path, contents))
    }

    /// `std::fs::File::create`.
    pub fn create(path: impl AsRef<Path>) -> Result<std::fs::File, PathError> {
        let path = path.as_ref();
        at("create", path, std::fs::File::create(path))
    }

    /// `std::fs::create_dir_all`.
    pub fn create_dir_all(path: impl AsRef<Path>) -> Result<(), PathError> {
        let path = path.as_ref();
        at("create the folder", path, std::fs::create_dir_all(path))
    }

    /// `std::fs::remove_file`.
    pub fn remove_file(path: impl AsRef<Path>) -> Result<(), PathError> {
        let path = path.as_ref();
        at("remove", path, std::fs::remove_file(path))
    }

    /// A new temporary folder (`tempfile::tempdir`), in the system's temporary folder.
    pub fn tempdir() -> Result<tempfile::TempDir, PathError> {
        at(
            "create a folder in",
            &std::env::temp_dir(),
            tempfile::tempdir(),
        )
    }
}

/// What an example's `main` returns: on failure it prints the error's message and its
/// causes (`Error: cannot read ..: No such file ..`), not the error's `Debug` form.
pub struct Report(Box<dyn std::error::Error>);

impl<E: Into<Box<dyn std::error::Error>>> From<E> for Report {
    fn from(error: E) -> Self {
        Report(error.into())
    }
}

impl std::fmt::Debug for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cause = self.0.source();
        while let Some(error) = cause {
            // A `PathError` already says its source.
            if !self.0.to_string().ends_with(&error.to_string()) {
                write!(f, "\n  caused by: {error}")?;
            }
            cause = error.source();
        }
        Ok(())
    }
}
