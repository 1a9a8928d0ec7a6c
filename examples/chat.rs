//! An interactive terminal chat on a session: the reply is printed as it arrives, a
//! spinner turns while tools run, Ctrl-C cancels the current turn (not the chat), and
//! `/reset` starts a fresh session.
//!
//! ```text
//! cargo run --example chat                                        # scripted, offline
//! cargo run --example chat -- --model openai:gpt-4o-mini --session chat.jsonl
//! BRUTE_MODEL=ollama:qwen3:4b cargo run --example chat
//! printf 'hello\n!ls\n/reset\nbye\n' | cargo run --example chat    # piped input works too
//! ```
//!
//! Options: `--session PATH` (default: `brute-chat/session.jsonl` in the temporary
//! folder), `--model SPEC` (default: `BRUTE_MODEL`, then a provider whose key is set,
//! then the scripted model), `--root DIR` (the folder the tools work in, default the
//! current one). Commands: `/reset`, `/quit` (or end of input).
//!
//! The tools are `Tools::ALL`, confined to `--root`: a real model can change files
//! there. The offline model answers in words, and runs `!command` lines with the
//! `shell` tool.
//!
//! Cancelling is safe: every message is durable once stored, and `SessionLog` cleans up
//! after a turn dropped halfway (brute's turn atomicity): a prompt nothing answered yet
//! is taken back, and a tool call cut off is given a "cancelled" result, so the
//! conversation keeps its turns (user, assistant, user ..).

mod common;

use std::future::Future;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use brute::providers::{AnyModel, ScriptedModel};
use brute::tools::{DefaultToolPipeline, Tools};
use brute::{
    Env, Event, EventKind, Message, Model, Role, StopReason, ToolCall, brute_agent,
    middleware::{Loop, MaxIterations, SessionLog, SystemPrompt},
};
use serde_json::json;
use tokio::sync::mpsc;

/// Where the chat writes: the terminal, or a buffer in the tests.
pub(crate) type Out = Arc<Mutex<dyn Write + Send>>;

fn say(out: &Out, text: &str) {
    if let Ok(mut out) = out.lock() {
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }
}

/// The offline model: `!command` runs the command with `shell`; anything else is
/// answered in words. It reads the session, so it knows what came before.
pub(crate) fn script(env: &Env) -> Message {
    let last = env.messages.last();
    if let Some(result) = last.filter(|m| m.role == Role::Tool) {
        let lines = result.content.lines().count();
        return Message::assistant(format!("The command printed {lines} line(s)."));
    }
    let said = last.map_or("", |m| m.content.as_str());
    if let Some(command) = said.strip_prefix('!') {
        return Message::tool_calls(
            "",
            vec![ToolCall::new(
                "",
                "shell",
                json!({"command": command.trim()}),
            )],
        );
    }
    let earlier = env
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .count()
        .saturating_sub(1);
    Message::assistant(format!(
        "You said \"{said}\" ({earlier} earlier message(s) in this session)."
    ))
}

/// What one chat did, for the caller (and the tests).
#[derive(Debug, Default)]
pub(crate) struct Summary {
    /// Turns that finished.
    pub(crate) turns: usize,
    /// Turns cancelled.
    pub(crate) cancelled: usize,
    /// `/reset`s.
    pub(crate) resets: usize,
    /// Turns that ended without the model's final answer (a pass limit, an approval
    /// to wait for, a layer that asked to stop); each was said in the output.
    pub(crate) stopped_short: usize,
}

/// Why a turn ended before the model's final answer, in words; `None` when it got one.
pub(crate) fn stopped_short(stop: &StopReason) -> Option<String> {
    match stop {
        StopReason::Completed => None,
        // `MaxIterations reached its limit of 25`, `waiting for approval of ..`, ..
        StopReason::Exited(reason) => Some(reason.to_string()),
        StopReason::Unfinished => {
            Some("the stack returned before the model gave its final answer".to_string())
        }
        other => Some(format!("{other:?}")),
    }
}

/// The chat loop: one turn per line of `input` until it ends or says `/quit`. A turn
/// is cancelled when `cancel()`'s future completes first (Ctrl-C in `main`).
pub(crate) async fn run<C, F>(
    model: AnyModel,
    session: &Path,
    root: &Path,
    mut input: mpsc::UnboundedReceiver<String>,
    out: Out,
    cancel: C,
) -> Result<Summary, Box<dyn std::error::Error>>
where
    C: Fn() -> F,
    F: Future<Output = ()>,
{
    let model = model.stream(true);
    let mut agent = brute_agent! {
        use SessionLog { path: session };
        use SystemPrompt { prompt: "You are a helpful assistant in a terminal chat. Be concise." };
        use Loop::ToolResult;
        use MaxIterations { max: 25 };
        use DefaultToolPipeline { tools: Tools::ALL, root: root.to_path_buf() };
        run model;
    };
    let streamed = Arc::new(AtomicBool::new(false));
    let running = Arc::new(AtomicUsize::new(0));
    let spinner = spinner(running.clone());
    {
        let (out, streamed) = (out.clone(), streamed.clone());
        agent.on(EventKind::ContentDelta, move |_env, event| {
            if let Event::ContentDelta(text) = event {
                streamed.store(true, Ordering::Relaxed);
                say(&out, text);
            }
        });
    }
    {
        // A reply that did not stream (the scripted model, a server that answered in
        // one piece) is printed whole.
        let (out, streamed) = (out.clone(), streamed.clone());
        agent.on(EventKind::ModelResponse, move |_env, event| {
            if let Event::ModelResponse { message, .. } = event {
                if !streamed.swap(false, Ordering::Relaxed) {
                    say(&out, &message.content);
                }
                if !message.content.is_empty() {
                    say(&out, "\n");
                }
            }
        });
    }
    {
        let (out, running) = (out.clone(), running.clone());
        agent.on(EventKind::ToolCallStart, move |_env, event| {
            if let Event::ToolCallStart { call } = event {
                running.fetch_add(1, Ordering::Relaxed);
                say(&out, &format!("[{} {}]\n", call.name, call.arguments));
            }
        });
    }
    {
        let running = running.clone();
        agent.on(EventKind::ToolResult, move |_env, _event| {
            running.fetch_sub(1, Ordering::Relaxed);
        });
    }

    let mut summary = Summary::default();
    say(&out, "> ");
    while let Some(line) = input.recv().await {
        let line = line.trim();
        match line {
            "" => {}
            "/quit" | "/exit" => break,
            "/reset" => {
                if session.exists() {
                    common::fs::remove_file(session)?;
                }
                summary.resets += 1;
                say(&out, "[a fresh session]\n");
            }
            prompt => {
                tokio::select! {
                    result = agent.start(prompt) => match result {
                        Ok(outcome) => {
                            summary.turns += 1;
                            if let Some(why) = stopped_short(&outcome.stop) {
                                summary.stopped_short += 1;
                                say(&out, &format!(
                                    "[the turn stopped short after {} model call(s): {why}]\n",
                                    outcome.env.iteration
                                ));
                            }
                        }
                        Err(error) => say(&out, &format!("[the turn failed: {error}]\n")),
                    },
                    () = cancel() => {
                        summary.cancelled += 1;
                        say(&out, "\n[cancelled]\n");
                    }
                }
                running.store(0, Ordering::Relaxed);
                streamed.store(false, Ordering::Relaxed);
            }
        }
        say(&out, "> ");
    }
    say(&out, "\n");
    drop(spinner);
    Ok(summary)
}

/// Turns a spinner on the terminal's error stream while `running` is above zero;
/// nothing when it is not a terminal (piped, or in the tests). Stops when dropped.
struct Spinner {
    stop: Arc<AtomicBool>,
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn spinner(running: Arc<AtomicUsize>) -> Spinner {
    let stop = Arc::new(AtomicBool::new(false));
    if std::io::stderr().is_terminal() {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let frames = ['|', '/', '-', '\\'];
            let mut n = 0;
            let mut shown = false;
            while !stop.load(Ordering::Relaxed) {
                let mut err = std::io::stderr();
                if running.load(Ordering::Relaxed) > 0 {
                    let _ = write!(err, "\r{} running tools ", frames[n % frames.len()]);
                    shown = true;
                    n += 1;
                } else if shown {
                    let _ = write!(err, "\r                 \r");
                    shown = false;
                }
                let _ = err.flush();
                std::thread::sleep(Duration::from_millis(100));
            }
        });
    }
    Spinner { stop }
}

/// `--session PATH --model SPEC --root DIR`.
struct Args {
    session: PathBuf,
    model: Option<String>,
    root: PathBuf,
}

fn args() -> Result<Args, String> {
    let mut args = Args {
        session: std::env::temp_dir().join("brute-chat/session.jsonl"),
        model: None,
        root: std::env::current_dir().map_err(|e| format!("the current folder: {e}"))?,
    };
    let mut given = std::env::args().skip(1);
    while let Some(flag) = given.next() {
        let mut value = || given.next().ok_or(format!("`{flag}` needs a value"));
        match flag.as_str() {
            "--session" => args.session = PathBuf::from(value()?),
            "--model" => args.model = Some(value()?),
            "--root" => args.root = PathBuf::from(value()?),
            "-h" | "--help" => {
                return Err("usage: chat [--session PATH] [--model SPEC] [--root DIR]".into());
            }
            other => return Err(format!("unknown argument `{other}`; try --help")),
        }
    }
    Ok(args)
}

#[tokio::main]
async fn main() -> Result<(), common::Report> {
    let args = args()?;
    let offline = ScriptedModel::from_fn(script).named("scripted");
    let model = match &args.model {
        Some(spec) if spec == "scripted" => AnyModel::from(offline),
        Some(spec) => brute::providers::from_spec(spec)?,
        None => common::model(offline),
    };
    if let Some(dir) = args.session.parent() {
        common::fs::create_dir_all(dir)?;
    }
    println!(
        "brute chat on {} with {} (/reset, /quit; Ctrl-C cancels a turn)",
        args.session.display(),
        model.name()
    );
    // Lines are read on a thread of their own, so that Ctrl-C is heard during a turn.
    let (lines, input) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let out: Out = Arc::new(Mutex::new(std::io::stdout()));
    let cancel = || async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    let summary = run(model, &args.session, &args.root, input, out, cancel).await?;
    println!(
        "({} turns, {} stopped short, {} cancelled, {} resets)",
        summary.turns, summary.stopped_short, summary.cancelled, summary.resets
    );
    Ok(())
}
