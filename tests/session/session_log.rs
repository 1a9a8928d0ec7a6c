//! `SessionLog`: the JSONL session, its durability, repair, errors and lock.

#![allow(clippy::unwrap_used)]

use crate::kill_support;
use crate::scripted_tools;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use brute::{
    Env, Error, EventKind, Handler, Message, Model, Role, StopReason, brute_agent,
    middleware::{Loop, MaxIterations, SessionLog, SystemPrompt},
    providers::ScriptedModel,
    session::{INTERRUPTED_TOOL_CALL, SessionError, SessionFile},
};
use kill_support::{KillOnDrop, kill_after_acks};
use scripted_tools::{RunTools, assert_no_dangling_call, echo_calls};

fn lines(path: &Path) -> Vec<Message> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Answers from history, like a model with memory: "Your name is X." if the
/// conversation contains "My name is X.".
fn memory_model() -> ScriptedModel {
    ScriptedModel::from_fn(|env| {
        let last = env
            .messages
            .last()
            .map(|m| m.content.as_str())
            .unwrap_or("");
        if last.starts_with("What's my name") {
            let name = env
                .messages
                .iter()
                .filter(|m| m.role == Role::User)
                .find_map(|m| m.content.strip_prefix("My name is "))
                .map(|n| n.trim_end_matches('.').to_string());
            match name {
                Some(name) => Message::assistant(format!("Your name is {name}.")),
                None => Message::assistant("I don't know your name."),
            }
        } else {
            Message::assistant("Nice to meet you.")
        }
    })
}

#[tokio::test]
async fn second_turn_sees_the_first_and_paths_keep_conversations_apart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nathan.jsonl");
    let agent = brute_agent! {
        use SessionLog { path: path.clone() };
        use SystemPrompt { prompt: "You are terse." };
        run memory_model();
    };
    agent.start("My name is Nathan.").await.unwrap();
    let outcome = agent.start("What's my name?").await.unwrap();
    assert_eq!(outcome.text(), Some("Your name is Nathan."));
    // The second turn's env holds the whole conversation, system message first.
    let roles: Vec<Role> = outcome.env.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::User,
            Role::Assistant
        ]
    );
    // The file holds both turns and no system message.
    let saved = lines(&path);
    assert_eq!(saved, outcome.env.messages[1..]);
    assert!(saved.iter().all(|m| m.role != Role::System));

    // Another path is another conversation.
    let other = dir.path().join("someone.jsonl");
    let stranger = brute_agent! {
        use SessionLog { path: other.clone() };
        run memory_model();
    };
    let outcome = stranger.start("What's my name?").await.unwrap();
    assert_eq!(outcome.text(), Some("I don't know your name."));

    // Deleting the file starts fresh.
    std::fs::remove_file(&path).unwrap();
    let outcome = agent.start("What's my name?").await.unwrap();
    assert_eq!(outcome.text(), Some("I don't know your name."));
    assert_eq!(lines(&path).len(), 2);
}

#[tokio::test]
async fn the_file_round_trips_tool_calls_and_reasoning_losslessly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let answer = Message::assistant("done").with_reasoning("thought about it");
    let model = ScriptedModel::per_turn([echo_calls("a", &["one", "two"]), answer]);
    let agent = brute_agent! {
        use SessionLog { path: path.clone() };
        use Loop::ToolResult;
        use RunTools;
        run model;
    };
    let outcome = agent.start("go").await.unwrap();
    assert_eq!(outcome.stop, StopReason::Completed);
    assert_eq!(SessionFile::read(&path).unwrap(), outcome.env.messages);
    assert_eq!(lines(&path).len(), 5);
    // The sample line of the seed is the exact format.
    let raw = std::fs::read_to_string(&path).unwrap();
    assert!(raw.lines().nth(1).unwrap().starts_with(
        r#"{"role":"assistant","content":"","tool_calls":[{"id":"a-0","name":"echo","arguments":{"text":"one"}}"#
    ));
}

/// A file written by other tools may hold a system message: it is loaded (so
/// `SystemPrompt` adds none), and the turn's messages are still all written.
#[tokio::test]
async fn a_session_that_starts_with_a_system_line_keeps_every_new_message() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sys.jsonl");
    let before = [
        Message::system("Be brief."),
        Message::user("hi"),
        Message::assistant("hello"),
    ];
    let text: String = before
        .iter()
        .map(|m| serde_json::to_string(m).unwrap() + "\n")
        .collect();
    std::fs::write(&path, text).unwrap();
    let agent = brute_agent! {
        use SessionLog { path: path.clone() };
        use SystemPrompt { prompt: "ignored: the session has one" };
        run |_env| async { Ok(Message::assistant("still here")) };
    };
    let outcome = agent.start("again").await.unwrap();
    assert_eq!(outcome.env.messages[0], Message::system("Be brief."));
    assert_eq!(outcome.env.messages.len(), 5);
    let saved = lines(&path);
    assert_eq!(saved[..3], before);
    assert_eq!(
        saved[3..],
        [Message::user("again"), Message::assistant("still here")]
    );
}

/// One agent, shared by tasks, serves many sessions at once: each turn names its file
/// with a `SessionPath` extension.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_shared_agent_runs_many_sessions_concurrently() {
    let dir = tempfile::tempdir().unwrap();
    let agent = Arc::new(brute_agent! {
        use SessionLog;
        use SystemPrompt { prompt: "sys" };
        run memory_model();
    });
    let names = [
        "Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "Ken",
    ];
    let mut tasks = Vec::new();
    for name in names {
        let agent = agent.clone();
        let path = dir.path().join(format!("{name}.jsonl"));
        tasks.push(tokio::spawn(async move {
            for prompt in [format!("My name is {name}."), "What's my name?".to_string()] {
                let mut env = agent.env();
                env.extensions
                    .insert(brute::session::SessionPath(path.clone()));
                env.messages.push(Message::user(prompt));
                let outcome = agent.turn(env).await.unwrap();
                if outcome.env.messages.len() > 3 {
                    return outcome.text().map(str::to_string);
                }
            }
            None
        }));
    }
    for (name, task) in names.iter().zip(tasks) {
        assert_eq!(
            task.await.unwrap().as_deref(),
            Some(format!("Your name is {name}.").as_str())
        );
        assert_eq!(lines(&dir.path().join(format!("{name}.jsonl"))).len(), 4);
    }
    // The configured default path (`session.jsonl` in the working directory) was never used.
    assert!(!Path::new("session.jsonl").exists());
}

#[tokio::test]
async fn missing_parent_directories_are_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a/b/c/session.jsonl");
    let agent = brute_agent! {
        use SessionLog { path: path.clone() };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
    agent.start("hello").await.unwrap();
    assert_eq!(
        lines(&path),
        [Message::user("hello"), Message::assistant("hi")]
    );
}

/// Every message is on disk before the next model call: the model itself reads the
/// file and compares it with what it is shown.
#[tokio::test]
async fn every_message_is_on_disk_before_the_next_model_call() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let seen = path.clone();
    let checks = Arc::new(Mutex::new(0));
    let counted = checks.clone();
    let model = move |env: &Env| {
        let on_disk = SessionFile::read(&seen).unwrap();
        let shown: Vec<Message> = env
            .messages
            .iter()
            .filter(|m| m.role != Role::System)
            .cloned()
            .collect();
        assert_eq!(
            on_disk, shown,
            "the model was called before the history was durable"
        );
        *counted.lock().unwrap() += 1;
        let pass = env
            .messages
            .iter()
            .rev()
            .take_while(|m| m.role != Role::User)
            .filter(|m| m.role == Role::Assistant)
            .count();
        let reply = if pass < 3 {
            echo_calls(&format!("p{pass}"), &["x", "y", "z"])
        } else {
            Message::assistant("done")
        };
        async move { Ok::<_, Error>(reply) }
    };
    let agent = brute_agent! {
        use SessionLog { path: path.clone() };
        use SystemPrompt { prompt: "sys" };
        use Loop::ToolResult;
        use MaxIterations { max: 10 };
        use RunTools;
        run model;
    };
    agent.start("first").await.unwrap();
    agent.start("second").await.unwrap();
    assert_eq!(*checks.lock().unwrap(), 8);
    assert_eq!(lines(&path).len(), 2 * (1 + 3 * 4 + 1));
}

#[tokio::test]
async fn a_corrupt_line_is_an_error_naming_file_and_line_and_the_file_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.jsonl");
    let content = "{\"role\":\"user\",\"content\":\"hi\"}\n{\"role\":\"assistant\",\"content\":\"ok\"}\n\n{\"role\":\"user\",\"content\":\n";
    std::fs::write(&path, content).unwrap();
    let agent = brute_agent! {
        use SessionLog { path: path.clone() };
        run |_env| async { Ok(Message::assistant("never")) };
    };
    let error = agent.start("again").await.unwrap_err();
    let Some(SessionError::Corrupt { line, path: p, .. }) = error.downcast_ref::<SessionError>()
    else {
        panic!("expected a corrupt-line error, got {error:?}");
    };
    assert_eq!(*line, 4);
    assert_eq!(p, &path);
    let text = error.to_string();
    assert!(
        text.starts_with(&format!("SessionLog: {}:4: not a message", path.display())),
        "{text}"
    );
    assert!(text.contains("left untouched"), "{text}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), content);

    // A role the format does not know is corrupt too.
    std::fs::write(&path, "{\"role\":\"robot\",\"content\":\"x\"}\n").unwrap();
    let error = agent.start("again").await.unwrap_err();
    assert!(
        matches!(
            error.downcast_ref::<SessionError>(),
            Some(SessionError::Corrupt { line: 1, .. })
        ),
        "{error}"
    );

    // An unterminated last line (what a torn write leaves) says so.
    std::fs::write(
        &path,
        "{\"role\":\"user\",\"content\":\"hi\"}\n{\"role\":\"assis",
    )
    .unwrap();
    let error = agent.start("again").await.unwrap_err();
    assert!(matches!(
        error.downcast_ref::<SessionError>(),
        Some(SessionError::Corrupt {
            line: 2,
            unterminated: true,
            ..
        })
    ));
    assert!(error.to_string().contains("no newline"), "{error}");
}

#[tokio::test]
async fn a_non_utf8_line_is_an_error_with_its_line_and_the_file_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("latin1.jsonl");
    let mut content = b"{\"role\":\"user\",\"content\":\"hi\"}\n".to_vec();
    content.extend_from_slice(b"{\"role\":\"user\",\"content\":\"caf\xe9\"}\n");
    std::fs::write(&path, &content).unwrap();
    let agent = brute_agent! {
        use SessionLog { path: path.clone() };
        run |_env| async { Ok(Message::assistant("never")) };
    };
    let error = agent.start("again").await.unwrap_err();
    assert!(
        matches!(
            error.downcast_ref::<SessionError>(),
            Some(SessionError::NotUtf8 {
                line: 2,
                column: 30,
                ..
            })
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains(":2: not valid UTF-8"), "{error}");
    assert_eq!(std::fs::read(&path).unwrap(), content);
}

#[tokio::test]
async fn a_dangling_tool_call_gets_a_synthetic_result_that_is_written_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crashed.jsonl");
    // A crash after the first of two tool results.
    let before = [
        Message::user("go"),
        echo_calls("c", &["one", "two"]),
        Message::tool_result("c-0", "one"),
    ];
    let text: String = before
        .iter()
        .map(|m| serde_json::to_string(m).unwrap() + "\n")
        .collect();
    std::fs::write(&path, text).unwrap();

    let shown = Arc::new(Mutex::new(Vec::new()));
    let log = shown.clone();
    let agent = brute_agent! {
        use SessionLog { path: path.clone() };
        run move |env: &Env| {
            *log.lock().unwrap() = env.messages.to_vec();
            async { Ok(Message::assistant("resumed")) }
        };
    };
    agent.start("continue").await.unwrap();
    let shown = shown.lock().unwrap().clone();
    assert_no_dangling_call(&shown);
    assert_eq!(shown[3], Message::tool_result("c-1", INTERRUPTED_TOOL_CALL));
    assert_eq!(shown[4], Message::user("continue"));
    let saved = lines(&path);
    assert_eq!(saved[..5], shown[..]);
    assert_eq!(saved.len(), 6);
}

#[tokio::test]
async fn a_dangling_call_before_later_messages_is_repaired_by_an_atomic_rewrite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("odd.jsonl");
    let before = [
        Message::user("go"),
        echo_calls("c", &["one"]),
        Message::user("anyone there?"),
        Message::assistant("yes"),
    ];
    let text: String = before
        .iter()
        .map(|m| serde_json::to_string(m).unwrap() + "\n")
        .collect();
    std::fs::write(&path, text).unwrap();
    let (file, messages) = SessionFile::open(&path).unwrap();
    drop(file);
    assert_eq!(messages.len(), 5);
    assert_eq!(
        messages[2],
        Message::tool_result("c-0", INTERRUPTED_TOOL_CALL)
    );
    assert_eq!(lines(&path), messages);
    assert_no_dangling_call(&messages);
}

#[tokio::test]
async fn a_second_writer_gets_a_clear_session_is_locked_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("busy.jsonl");
    let held = SessionFile::open(&path).unwrap();
    let agent = brute_agent! {
        use SessionLog { path: path.clone() };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
    let error = agent.start("hello").await.unwrap_err();
    assert!(
        matches!(
            error.downcast_ref::<SessionError>(),
            Some(SessionError::Locked { .. })
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("is locked"), "{error}");
    // Nothing was written by the refused turn.
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
    drop(held);
    agent.start("hello").await.unwrap();
    assert_eq!(lines(&path).len(), 2);
}

/// The lock is released by an explicit unlock, not by closing the file: a process
/// spawned by another thread holds a copy of the lock's descriptor until its exec, and
/// the next turn on the session must not see that copy as another writer.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_in_a_row_are_not_refused_while_other_threads_spawn_processes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("busy.jsonl");
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let spawner = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                Command::new("true").status().unwrap();
            }
        })
    };
    let agent = brute_agent! {
        use SessionLog { path: path.clone(), sync: false };
        run |_env| async { Ok(Message::assistant("ok")) };
    };
    let mut refused = 0;
    for n in 0..200 {
        match agent.start(format!("turn {n}")).await {
            Ok(_) => {}
            Err(e) if matches!(e.downcast_ref(), Some(SessionError::Locked { .. })) => refused += 1,
            Err(e) => panic!("{e}"),
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    spawner.join().unwrap();
    assert_eq!(refused, 0, "turns were refused by a stale lock");
    assert_eq!(lines(&path).len(), 400);
}

const LOCK_CHILD: &str = "BRUTE_TEST_SESSION_LOCK_CHILD";

/// The lock is an OS lock: it holds against another process, and the OS releases it
/// when that process dies, even by SIGKILL.
#[test]
fn a_second_process_is_refused_while_the_first_holds_the_session() {
    if let Ok(path) = std::env::var(LOCK_CHILD) {
        let _held = SessionFile::open(Path::new(&path)).unwrap();
        println!("locked");
        std::thread::sleep(Duration::from_secs(60));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.jsonl");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            crate::kill_support::test_name(
                module_path!(),
                "a_second_process_is_refused_while_the_first_holds_the_session",
            )
            .as_str(),
            "--nocapture",
        ])
        .env(LOCK_CHILD, &path)
        .stdout(Stdio::piped())
        .spawn()
        .map(KillOnDrop)
        .unwrap();
    let mut stdout = BufReader::new(child.0.stdout.take().unwrap());
    let mut line = String::new();
    while !line.starts_with("locked") {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "the child exited before locking"
        );
    }
    let error = SessionFile::open(&path).unwrap_err();
    assert!(matches!(error, SessionError::Locked { .. }), "{error:?}");
    child.kill();
    assert!(SessionFile::open(&path).is_ok());
}

/// A stand-in for compaction: keeps the last `keep` messages (and the system message)
/// once there are more, and says the history was rewritten.
#[derive(brute::Middleware)]
#[middleware(provides = brute::kind::Compaction)]
struct KeepLast<A> {
    app: A,
    keep: usize,
}

impl<A: Handler<Env>> Handler<Env> for KeepLast<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        let lead = env
            .messages
            .iter()
            .take_while(|m| m.role == Role::System)
            .count();
        let body = env.messages.len() - lead;
        if body > self.keep {
            // Cut before a user message, so that no tool call loses its result.
            let mut cut = env.messages.len() - self.keep;
            while cut < env.messages.len() && env.messages[cut].role != Role::User {
                cut += 1;
            }
            // An edit through the transcript: recorded as a rewrite.
            env.messages.edit(|messages| {
                messages.drain(lead..cut);
            });
        }
        self.app.call(env).await
    }
}

#[cfg(unix)]
fn inode(path: &Path) -> u64 {
    std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(path).unwrap())
}

#[tokio::test]
async fn a_rewritten_history_replaces_the_file_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.jsonl");
    let model = ScriptedModel::per_turn([echo_calls("t", &["a"]), Message::assistant("done")]);
    let agent = brute_agent! {
        use SessionLog { path: path.clone() };
        use SystemPrompt { prompt: "sys" };
        use Loop::ToolResult;
        use KeepLast { keep: 7 };
        use RunTools;
        run model;
    };
    for turn in 0..3 {
        agent.start(format!("turn {turn}")).await.unwrap();
    }
    #[cfg(unix)]
    let before = inode(&path);
    // Turn 4 compacts on its first pass: the file is replaced, then appended to.
    let outcome = agent.start("turn 3").await.unwrap();
    let saved = lines(&path);
    assert_eq!(saved, outcome.env.messages[1..]);
    assert_eq!(saved[0], Message::user("turn 2"));
    assert_eq!(saved.len(), 8);
    #[cfg(unix)]
    assert_ne!(
        inode(&path),
        before,
        "the file was rewritten in place, not replaced"
    );
    // Nothing is left behind but the session: no temp file, and no lock file once the
    // turn is over.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["long.jsonl"]);
    // The lock follows the replaced file.
    let (held, _) = SessionFile::open(&path).unwrap();
    let error = agent.start("x").await.unwrap_err();
    assert!(matches!(
        error.downcast_ref(),
        Some(SessionError::Locked { .. })
    ));
    drop(held);
}

/// A layer that edits a message the file already holds (here on the way out, after
/// the terminal saved the reply) is persisted by a rewrite: the transcript records the
/// edit, and the writer replaces the file.
#[derive(brute::Middleware)]
struct Tag<A> {
    app: A,
}

impl<A: Handler<Env>> Handler<Env> for Tag<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        self.app.call(env).await?;
        if let Some(last) = env.messages.last_mut() {
            last.content.insert_str(0, "[bot] ");
        }
        Ok(())
    }
}

#[tokio::test]
async fn an_edit_of_a_saved_message_is_persisted_by_a_rewrite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tag.jsonl");
    let agent = brute_agent! {
        use SessionLog { path: path.clone() };
        use Tag;
        run |_env| async { Ok(Message::assistant("hi")) };
    };
    agent.start("one").await.unwrap();
    agent.start("two").await.unwrap();
    assert_eq!(
        lines(&path),
        [
            Message::user("one"),
            Message::assistant("[bot] hi"),
            Message::user("two"),
            Message::assistant("[bot] hi")
        ]
    );
}

/// The stack of the seed, end to end: SessionLog, SystemPrompt, Loop::ToolResult,
/// MaxIterations, a tool pipeline (test-local until `DefaultToolPipeline` lands), run.
#[tokio::test]
async fn the_seed_stack_runs_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tmp/session.jsonl");
    let model = ScriptedModel::per_turn([
        echo_calls("ls", &["Cargo.toml", "src"]),
        echo_calls("cat", &["fn main() {}"]),
        Message::assistant("Two files; main does nothing."),
    ]);
    let events = Arc::new(Mutex::new(Vec::new()));
    let mut agent = brute_agent! {
        use SessionLog { path: path.clone() };
        use SystemPrompt { prompt: "You are terse." };
        use Loop::ToolResult;
        use MaxIterations { max: 25 };
        use RunTools;
        run model;
    };
    for kind in [
        EventKind::Iteration,
        EventKind::ToolResult,
        EventKind::ModelResponse,
    ] {
        let log = events.clone();
        agent.on(kind, move |_env, event| {
            log.lock().unwrap().push(format!("{:?}", event.kind()))
        });
    }
    let outcome = agent.start("What is in this project?").await.unwrap();
    assert_eq!(outcome.stop, StopReason::Completed);
    assert_eq!(outcome.text(), Some("Two files; main does nothing."));
    assert_eq!(outcome.env.iteration, 3);
    assert_eq!(outcome.env.messages[0], Message::system("You are terse."));
    assert_eq!(lines(&path), outcome.env.messages[1..]);
    assert_eq!(lines(&path).len(), 1 + 1 + 2 + 1 + 1 + 1);
    assert_eq!(events.lock().unwrap().len(), 3 + 3 + 3);

    // The next turn continues the conversation with one system message.
    let outcome = agent.start("And now?").await.unwrap();
    assert_eq!(
        outcome
            .env
            .messages
            .iter()
            .filter(|m| m.role == Role::System)
            .count(),
        1
    );
    assert_eq!(lines(&path).len(), 2 * 7);
}

/// Adds two numbers (a tool for the `DefaultToolPipeline` stack below).
#[brute::tool]
async fn add(
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
) -> Result<String, brute::tools::ToolError> {
    Ok((a + b).to_string())
}

/// The same seed stack with the real tool pipeline (issue 4's `DefaultToolPipeline`).
#[tokio::test]
async fn the_seed_stack_runs_end_to_end_with_the_default_tool_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tmp/session.jsonl");
    let model = ScriptedModel::per_turn([
        Message::tool_calls(
            "",
            vec![
                brute::ToolCall::new("c1", "add", serde_json::json!({"a": 2, "b": 3})),
                brute::ToolCall::new("c2", "add", serde_json::json!({"a": 5, "b": "x"})),
            ],
        ),
        Message::assistant("2 + 3 = 5"),
    ]);
    let agent = brute_agent! {
        use SessionLog { path: path.clone() };
        use SystemPrompt { prompt: "You add numbers." };
        use Loop::ToolResult;
        use MaxIterations { max: 25 };
        use brute::tools::DefaultToolPipeline { tools: (Add,), root: dir.path() };
        run model;
    };
    let outcome = agent.start("2 + 3?").await.unwrap();
    assert_eq!(outcome.stop, StopReason::Completed);
    assert_eq!(outcome.text(), Some("2 + 3 = 5"));
    let saved = lines(&path);
    assert_eq!(saved, outcome.env.messages[1..]);
    assert_eq!(saved[2], Message::tool_result("c1", "5"));
    // The invalid argument became a tool result the model saw, not an error.
    assert_eq!(saved[3].tool_call_id.as_deref(), Some("c2"));
    assert_no_dangling_call(&saved);
}

#[tokio::test]
async fn max_iterations_with_a_session_leaves_no_dangling_call_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let model =
        ScriptedModel::from_fn(|env| echo_calls(&format!("i{}", env.iteration), &["again"]));
    let agent = brute_agent! {
        use SessionLog { path: path.clone() };
        use Loop::ToolResult;
        use MaxIterations { max: 3 };
        use RunTools;
        run model;
    };
    let outcome = agent.start("loop forever").await.unwrap();
    assert!(matches!(outcome.stop, StopReason::Exited(_)));
    let saved = lines(&path);
    assert_eq!(saved.len(), 1 + 3 * 2);
    assert_no_dangling_call(&saved);
}

// ---------------------------------------------------------------------------------
// Kill safety: a child process (this test binary, re-executed) runs an agent with a
// slow model and slow tools on a session file; the parent kills it with SIGKILL at
// several points of the turn and checks the file after each kill.

const CRASH_CHILD: &str = "BRUTE_TEST_SESSION_CRASH_CHILD";

/// A model that takes a while and calls tools three passes in a row, then answers.
struct SlowModel;

impl Model for SlowModel {
    async fn complete(&self, env: &Env) -> Result<brute::Completion, Error> {
        tokio::time::sleep(Duration::from_millis(15)).await;
        let turn = env.messages.iter().filter(|m| m.role == Role::User).count();
        let pass = env.iteration;
        Ok(if pass <= 3 {
            echo_calls(&format!("t{turn}p{pass}"), &["a", "b", "c"])
        } else {
            Message::assistant(format!("turn {turn} done"))
        }
        .into())
    }
}

/// The tool of the `DefaultToolPipeline` crash child: takes a while, echoes its text.
#[brute::tool]
async fn echo(
    /// What to echo.
    text: String,
) -> Result<String, brute::tools::ToolError> {
    tokio::time::sleep(Duration::from_millis(7)).await;
    Ok(text)
}

/// Prints every message of `env` not printed yet: called from event handlers that fire
/// right after a checkpoint, so everything printed is durable.
fn ack(printed: &Mutex<usize>, env: &Env) {
    let durable: Vec<&Message> = env
        .messages
        .iter()
        .filter(|m| m.role != Role::System)
        .collect();
    let mut printed = printed.lock().unwrap();
    for message in &durable[*printed..] {
        println!("ack {}", serde_json::to_string(message).unwrap());
    }
    *printed = durable.len();
}

/// The child: runs turns forever, printing every message once it is durable. With the
/// test-local pipeline, which checkpoints after each tool result, tool results are
/// acknowledged one by one; with `DefaultToolPipeline` (`stack == "default"`), messages
/// are acknowledged at the terminal's checkpoints around each model call.
fn crash_child(path: &str, stack: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let printed = Arc::new(Mutex::new(0usize));
    // Each turn reloads the history, so the count of durable messages only grows.
    runtime.block_on(async {
        if stack == "default" {
            let mut agent = brute_agent! {
                use SessionLog { path: PathBuf::from(path) };
                use SystemPrompt { prompt: "sys" };
                use Loop::ToolResult;
                use MaxIterations { max: 10 };
                use brute::tools::DefaultToolPipeline { tools: (Echo,), root: std::env::temp_dir() };
                run SlowModel;
            };
            for kind in [EventKind::ModelRequest, EventKind::ModelResponse] {
                let printed = printed.clone();
                agent.on(kind, move |env, _event| ack(&printed, env));
            }
            for n in 0.. {
                agent.start(format!("task {n}")).await.unwrap();
            }
        } else {
            let mut agent = brute_agent! {
                use SessionLog { path: PathBuf::from(path) };
                use SystemPrompt { prompt: "sys" };
                use Loop::ToolResult;
                use MaxIterations { max: 10 };
                use RunTools { delay: Duration::from_millis(7) };
                run SlowModel;
            };
            for kind in [
                EventKind::ModelRequest,
                EventKind::ModelResponse,
                EventKind::ToolResult,
            ] {
                let printed = printed.clone();
                agent.on(kind, move |env, _event| ack(&printed, env));
            }
            for n in 0.. {
                agent.start(format!("task {n}")).await.unwrap();
            }
        }
    });
}

/// Runs the crash child of `test` (this binary, re-executed) on one session eight
/// times, killing it with SIGKILL after different numbers of acknowledged messages and
/// at different delays after the last one (so that kills land during model calls,
/// during tools, and right after writes), and checks the session after each kill.
fn kill_rounds(test: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.jsonl");
    let mut kills = 0;
    for (round, (acks, delay_ms)) in [
        (1, 0),
        (3, 4),
        (6, 9),
        (2, 15),
        (9, 1),
        (5, 21),
        (14, 6),
        (4, 12),
    ]
    .into_iter()
    .enumerate()
    {
        let prior = SessionFile::read(&path).unwrap().len();
        // The history reloaded by this round is acknowledged as well: the child
        // prints everything it holds at its first durability step.
        let acked = kill_after_acks(
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    crate::kill_support::test_name(module_path!(), test).as_str(),
                    "--nocapture",
                ])
                .env(CRASH_CHILD, &path),
            prior + acks,
            Duration::from_millis(delay_ms),
            &format!("round {round}"),
        );
        kills += 1;

        let (file, loaded) = SessionFile::open(&path).unwrap();
        drop(file);
        assert!(
            loaded.len() >= acked.len() && loaded[..acked.len()] == acked[..],
            "round {round}: an acknowledged message is missing:\nacked {acked:#?}\nloaded {loaded:#?}"
        );
        assert_no_dangling_call(&loaded);
        // The repair was written back.
        assert_eq!(SessionFile::read(&path).unwrap(), loaded, "round {round}");
    }
    assert_eq!(kills, 8);
    // Every round made at least its prompt durable.
    let saved = SessionFile::read(&path).unwrap();
    assert!(saved.iter().filter(|m| m.role == Role::User).count() >= 8);
}

#[cfg(unix)]
#[test]
fn sigkill_mid_turn_loses_no_completed_message_and_leaves_no_dangling_call() {
    if let Ok(path) = std::env::var(CRASH_CHILD) {
        crash_child(&path, "local");
        return;
    }
    kill_rounds("sigkill_mid_turn_loses_no_completed_message_and_leaves_no_dangling_call");
}

/// The same with the real tool pipeline (`DefaultToolPipeline`, issue 4).
#[cfg(unix)]
#[test]
fn sigkill_with_the_default_tool_pipeline_leaves_no_dangling_call() {
    if let Ok(path) = std::env::var(CRASH_CHILD) {
        crash_child(&path, "default");
        return;
    }
    kill_rounds("sigkill_with_the_default_tool_pipeline_leaves_no_dangling_call");
}

/// Each tool result is on disk as soon as it is appended, before the next result of
/// the same batch: a crash in the middle of a batch loses no finished result.
#[tokio::test]
async fn each_tool_result_of_a_batch_is_durable_before_the_next() {
    use brute::tools::{DefaultToolPipeline, Tools};
    use brute::{EventKind, ToolCall};

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    std::fs::write(dir.path().join("b.txt"), "beta\n").unwrap();
    let path = dir.path().join("session.jsonl");
    let root = dir.path().to_path_buf();
    let model = brute::providers::ScriptedModel::per_turn([
        Message::tool_calls(
            "",
            vec![
                ToolCall::new("c1", "read", serde_json::json!({"file_path": "a.txt"})),
                ToolCall::new("c2", "read", serde_json::json!({"file_path": "b.txt"})),
            ],
        ),
        Message::assistant("done"),
    ]);
    let mut agent = brute::brute_agent! {
        use brute::middleware::SessionLog { path: path.clone() };
        use brute::middleware::Loop::ToolResult;
        use DefaultToolPipeline { tools: Tools::READ_ONLY, root: root };
        run model;
    };
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (log, file) = (seen.clone(), path.clone());
    agent.on(EventKind::ToolResult, move |_env, _event| {
        // Read the file while the turn is still running the batch.
        let lines = std::fs::read_to_string(&file).unwrap();
        log.lock().unwrap().push(lines.lines().count());
    });
    agent.start("read both").await.unwrap();
    // user + assistant call, then one more line per result, each before the next.
    assert_eq!(*seen.lock().unwrap(), [3, 4]);
}
