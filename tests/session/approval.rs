//! Approval that survives restarts: a call the policy asks about pauses the turn, the
//! pending call lives in the session (JSONL, SQLite, PostgreSQL), and a decision given
//! to a fresh agent, or after the process that paused was killed, resumes the turn and
//! runs the tool exactly once.

#![cfg(unix)]
#![allow(clippy::unwrap_used)]

use crate::session_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use brute::session::{ABANDONED_APPROVAL, SessionId, check_history};
use brute::stream::{ApprovalError, TurnItem, TurnResult, Verdict};
use brute::tools::{Approval, DefaultToolPipeline, ToolContext, ToolError};
use brute::{
    BoxAgent, ExitReason, Message, Role, StopReason, ToolCall, brute_agent,
    middleware::{Loop, SessionLog},
    providers::ScriptedModel,
    tool,
};
use serde_json::json;
use session_support::{AnyStore, KillOnDrop, postgres_database, sqlite_path, temp_dir};

const CHILD: &str = "BRUTE_TEST_APPROVAL_CHILD";
/// Set in the child that is killed while an approved call runs.
const RUNNING_CHILD: &str = "BRUTE_TEST_APPROVAL_RUNNING_CHILD";

/// Appends `label` to `tally.txt` in the root: a side effect that can be counted
/// across processes.
#[tool]
async fn tally(
    /// What to append.
    label: String,
    cx: &ToolContext,
) -> Result<String, ToolError> {
    write_tally(&label, cx)
}

/// Appends `label` to `tally.txt` in the root.
fn write_tally(label: &str, cx: &ToolContext) -> Result<String, ToolError> {
    use std::io::Write;
    let path = cx.sandbox().root().join("tally.txt");
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| ToolError::failed(e.to_string()))?;
    writeln!(file, "{label}").map_err(|e| ToolError::failed(e.to_string()))?;
    Ok(format!("tallied {label}"))
}

/// Returns its text (never asked about).
#[tool]
async fn echo(
    /// The text.
    text: String,
) -> Result<String, ToolError> {
    Ok(text)
}

/// Appends `label` to `tally.txt` like `tally`; in the child of
/// `a_crash_while_an_approved_call_runs_never_runs_it_again` it then says `running`
/// and never returns, so that the child is killed while the call runs.
#[tool]
async fn stall(
    /// What to append.
    label: String,
    cx: &ToolContext,
) -> Result<String, ToolError> {
    let done = write_tally(&label, cx)?;
    if std::env::var_os(RUNNING_CHILD).is_some() {
        println!("running");
        std::future::pending::<()>().await;
    }
    Ok(done)
}

/// The lines `tally` wrote in `root`.
fn tallied(root: &Path) -> Vec<String> {
    std::fs::read_to_string(root.join("tally.txt"))
        .map(|s| s.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

/// A model that calls the tools in `calls` once per turn, then reports the results.
fn model(calls: Vec<ToolCall>) -> ScriptedModel {
    ScriptedModel::from_fn(move |env| match env.messages.last() {
        Some(m) if m.role == Role::Tool => {
            let results: Vec<&str> = env
                .messages
                .iter()
                .rev()
                .take_while(|m| m.role == Role::Tool)
                .map(|m| m.content.as_str())
                .collect();
            Message::assistant(format!("results: {}", results.join(" | ")))
        }
        _ => Message::tool_calls("", calls.clone()),
    })
}

/// An agent asking about `tally`, on `store`, with tools confined to `root`.
fn agent(store: &AnyStore, root: &Path, calls: Vec<ToolCall>) -> BoxAgent {
    brute_agent! {
        use SessionLog { store: store.store() };
        use Loop::ToolResult;
        use DefaultToolPipeline {
            tools: (Tally, Echo),
            root: root.to_path_buf(),
            approval: Approval::ask(["tally"]),
        };
        run model(calls);
    }
    .boxed()
}

fn tally_call(id: &str, label: &str) -> ToolCall {
    ToolCall::new(id, "tally", json!({ "label": label }))
}

fn env_of(agent: &BoxAgent, session: &str, prompt: Option<&str>) -> brute::Env {
    let mut env = agent.env();
    env.extensions.insert(SessionId::from(session));
    if let Some(prompt) = prompt {
        env.messages.push(Message::user(prompt));
    }
    env
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Pauses with one agent, drops it, approves with a fresh one: the tool runs once.
async fn pause_then_approve_in_a_fresh_agent(store: &AnyStore, root: &Path) {
    {
        let calls = vec![tally_call("c1", "one")];
        let first = agent(store, root, calls.clone());
        let mut stream = first.stream(env_of(&first, "s", Some("count one")));
        let mut items = Vec::new();
        while let Some(item) = stream.next_item().await {
            items.push(item);
        }
        assert!(
            items.contains(&TurnItem::ApprovalRequired {
                call: calls[0].clone()
            }),
            "{items:?}"
        );
        assert_eq!(
            items.last(),
            Some(&TurnItem::End {
                result: TurnResult::Paused {
                    pending: vec!["c1".into()]
                }
            })
        );
        let outcome = stream.take_result().unwrap().unwrap();
        assert_eq!(
            outcome.stop.awaiting_approval(),
            Some(&["c1".to_string()][..])
        );
        drop(stream);
        drop(first);
        assert!(tallied(root).is_empty(), "the call ran before approval");
        // The pending call is in the store: a valid history, the call marked.
        let stored = store.load("s").await;
        assert_eq!(check_history(&stored), []);
        assert!(stored[2].awaiting_approval(), "{stored:?}");

        let fresh = agent(store, root, calls.clone());
        let outcome = fresh
            .decide(env_of(&fresh, "s", None), "c1", Verdict::Approve)
            .await
            .unwrap();
        assert_eq!(outcome.stop, StopReason::Completed);
        assert_eq!(outcome.text(), Some("results: tallied one"));
        assert_eq!(tallied(root), ["one"]);

        // A second decision on the same call is refused, and nothing runs again.
        let again = fresh
            .decide(env_of(&fresh, "s", None), "c1", Verdict::Approve)
            .await
            .unwrap_err();
        assert!(
            matches!(
                again.downcast_ref(),
                Some(ApprovalError::NotPending { call_id, session: Some(session), waiting })
                    if call_id == "c1" && session == "s" && waiting.is_empty()
            ),
            "{again}"
        );
        assert_eq!(
            again.to_string(),
            "SessionLog: tool call `c1` does not wait for approval in session s (waiting: none)"
        );
        assert_eq!(tallied(root), ["one"]);
        let stored = store.load("s").await;
        assert_eq!(check_history(&stored), []);
        let roles: Vec<Role> = stored.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
        );
        assert!(!stored[2].awaiting_approval());
        assert_eq!(stored[2].content, "tallied one");
    }
}

#[test]
fn a_fresh_agent_approves_a_call_paused_on_the_jsonl_store() {
    let dir = temp_dir();
    let root = temp_dir();
    runtime().block_on(async {
        let store = AnyStore::open(
            "jsonl",
            dir.path().to_str().unwrap(),
            Duration::from_secs(60),
        )
        .await;
        pause_then_approve_in_a_fresh_agent(&store, root.path()).await;
    });
}

#[test]
fn a_fresh_agent_approves_a_call_paused_on_the_sqlite_store() {
    let dir = temp_dir();
    let root = temp_dir();
    let path = sqlite_path(dir.path());
    runtime().block_on(async {
        let store = AnyStore::open("sqlite", path.to_str().unwrap(), Duration::from_secs(60)).await;
        pause_then_approve_in_a_fresh_agent(&store, root.path()).await;
    });
}

#[test]
#[cfg_attr(
    not(feature = "services"),
    ignore = "needs PostgreSQL: cargo xtask test"
)]
fn a_fresh_agent_approves_a_call_paused_on_the_postgres_store() {
    let url = postgres_database("approval");
    let root = temp_dir();
    runtime().block_on(async {
        let store = AnyStore::open("postgres", &url, Duration::from_secs(60)).await;
        pause_then_approve_in_a_fresh_agent(&store, root.path()).await;
    });
}

/// The child: pauses a turn on the SQLite store at `BRUTE_TEST_APPROVAL_CHILD`, says
/// so, and waits to be killed.
fn paused_child(spec: &str) {
    let (db, root) = spec.split_once('|').unwrap();
    runtime().block_on(async {
        let store = AnyStore::open("sqlite", db, Duration::from_secs(60)).await;
        let agent = agent(&store, Path::new(root), vec![tally_call("k1", "killed")]);
        let outcome = agent
            .turn(env_of(&agent, "restart", Some("count")))
            .await
            .unwrap();
        assert!(outcome.stop.awaiting_approval().is_some());
        println!("paused");
        tokio::time::sleep(Duration::from_secs(600)).await;
    });
}

#[test]
fn a_call_paused_by_a_killed_process_is_approved_after_the_restart() {
    if let Ok(spec) = std::env::var(CHILD) {
        return paused_child(&spec);
    }
    use std::io::{BufRead, BufReader};
    let dir = temp_dir();
    let root = temp_dir();
    let db: PathBuf = sqlite_path(dir.path());
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            crate::kill_support::test_name(
                module_path!(),
                "a_call_paused_by_a_killed_process_is_approved_after_the_restart",
            )
            .as_str(),
            "--nocapture",
        ])
        .env(CHILD, format!("{}|{}", db.display(), root.path().display()))
        .env("BRUTE_TEST_POSTGRES", "unused")
        .stdout(Stdio::piped())
        .spawn()
        .map(KillOnDrop)
        .unwrap();
    let mut stdout = BufReader::new(child.0.stdout.take().unwrap());
    let mut line = String::new();
    while line.trim() != "paused" {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "the child exited before pausing"
        );
    }
    child.kill(); // SIGKILL while the call waits
    assert!(tallied(root.path()).is_empty());

    runtime().block_on(async {
        let store = AnyStore::open("sqlite", db.to_str().unwrap(), Duration::from_secs(60)).await;
        let agent = agent(&store, root.path(), vec![tally_call("k1", "killed")]);
        let outcome = agent
            .decide(env_of(&agent, "restart", None), "k1", Verdict::Approve)
            .await
            .unwrap();
        assert_eq!(outcome.text(), Some("results: tallied killed"));
        assert_eq!(tallied(root.path()), ["killed"]);
        assert_eq!(check_history(&store.load("restart").await), []);
    });
}

#[test]
fn deny_and_edit_verdicts_and_calls_decided_one_at_a_time() {
    let dir = temp_dir();
    let root = temp_dir();
    runtime().block_on(async {
        let store = AnyStore::open(
            "jsonl",
            dir.path().to_str().unwrap(),
            Duration::from_secs(60),
        )
        .await;
        let calls = vec![
            tally_call("a", "first"),
            ToolCall::new("e", "echo", json!({"text": "free"})),
            tally_call("b", "second"),
        ];
        let agent = agent(&store, root.path(), calls);
        let outcome = agent.turn(env_of(&agent, "s", Some("go"))).await.unwrap();
        assert_eq!(
            outcome.stop,
            StopReason::Exited(ExitReason::AwaitingApproval {
                calls: vec!["a".into(), "b".into()]
            })
        );
        // The call nobody asks about ran at once.
        let echo = outcome
            .env
            .messages
            .iter()
            .find(|m| m.tool_call_id.as_deref() == Some("e"))
            .unwrap();
        assert_eq!(echo.content, "free");

        // One decision of two: the turn stays paused, the model is not called.
        let mut stream = agent.stream({
            let mut env = env_of(&agent, "s", None);
            env.extensions.insert(brute::stream::ApprovalDecision::new(
                "a",
                Verdict::Edit {
                    arguments: json!({"label": "edited"}),
                },
            ));
            env
        });
        let mut items = Vec::new();
        while let Some(item) = stream.next_item().await {
            items.push(item);
        }
        assert!(
            !items.iter().any(|i| matches!(i, TurnItem::Message { .. })),
            "{items:?}"
        );
        assert_eq!(
            items.last(),
            Some(&TurnItem::End {
                result: TurnResult::Paused {
                    pending: vec!["b".into()]
                }
            })
        );
        assert_eq!(tallied(root.path()), ["edited"]);

        let outcome = agent
            .decide(
                env_of(&agent, "s", None),
                "b",
                Verdict::Deny {
                    reason: Some("not twice".into()),
                },
            )
            .await
            .unwrap();
        assert_eq!(outcome.stop, StopReason::Completed);
        let text = outcome.text().unwrap();
        assert!(
            text.contains("not twice") && text.contains("tallied edited") && text.contains("free"),
            "{text}"
        );
        assert_eq!(tallied(root.path()), ["edited"], "a denied call ran");
        assert_eq!(check_history(&store.load("s").await), []);
    });
}

#[test]
fn a_new_prompt_abandons_the_calls_that_wait() {
    let dir = temp_dir();
    let root = temp_dir();
    runtime().block_on(async {
        let store = AnyStore::open(
            "jsonl",
            dir.path().to_str().unwrap(),
            Duration::from_secs(60),
        )
        .await;
        let agent = agent(&store, root.path(), vec![tally_call("c1", "one")]);
        let outcome = agent.turn(env_of(&agent, "s", Some("go"))).await.unwrap();
        assert!(outcome.stop.awaiting_approval().is_some());
        // The next prompt goes on without a decision: the call is answered as
        // abandoned, and the new turn pauses on its own call.
        let outcome = agent
            .turn(env_of(&agent, "s", Some("never mind")))
            .await
            .unwrap();
        let stored = store.load("s").await;
        assert_eq!(stored[2].content, ABANDONED_APPROVAL);
        assert!(!stored[2].awaiting_approval());
        assert_eq!(stored[3], Message::user("never mind"));
        assert!(outcome.stop.awaiting_approval().is_some());
        assert_eq!(check_history(&stored), []);
        assert!(tallied(root.path()).is_empty());
        // A model never sees a placeholder of an earlier turn as pending.
        let error = agent
            .decide(env_of(&agent, "s", None), "nope", Verdict::Approve)
            .await
            .unwrap_err();
        assert!(error.to_string().contains("nope"), "{error}");
    });
}

#[test]
fn a_decision_on_a_stack_without_a_tool_pipeline_is_an_error() {
    runtime().block_on(async {
        let agent = brute_agent! { run |_env| async { Ok(Message::assistant("hi")) }; };
        let error = agent
            .decide(agent.env(), "c1", Verdict::Approve)
            .await
            .unwrap_err();
        assert!(
            matches!(error.downcast_ref(), Some(ApprovalError::NotApplied { call_id }) if call_id == "c1"),
            "{error}"
        );
    });
}

#[test]
fn without_a_session_the_paused_env_itself_is_resumed() {
    let root = temp_dir();
    runtime().block_on(async {
        let agent = brute_agent! {
            use Loop::ToolResult;
            use DefaultToolPipeline {
                tools: (Tally, Echo),
                root: root.path().to_path_buf(),
                approval: Approval::ask(["tally"]),
            };
            run model(vec![tally_call("m1", "memory")]);
        };
        let paused = agent.start("count").await.unwrap();
        assert_eq!(
            paused.stop.awaiting_approval(),
            Some(&["m1".to_string()][..])
        );
        assert!(tallied(root.path()).is_empty());
        let outcome = agent
            .decide(paused.env, "m1", Verdict::Approve)
            .await
            .unwrap();
        assert_eq!(outcome.stop, StopReason::Completed);
        assert_eq!(outcome.text(), Some("results: tallied memory"));
        assert_eq!(tallied(root.path()), ["memory"]);
        // Decided already: the tool pipeline refuses it, naming no session.
        let error = agent
            .decide(outcome.env, "m1", Verdict::Approve)
            .await
            .unwrap_err();
        assert!(
            matches!(
                error.downcast_ref(),
                Some(ApprovalError::NotPending { session: None, .. })
            ),
            "{error}"
        );
        assert_eq!(tallied(root.path()), ["memory"]);
    });
}

/// An agent asking about `stall`, on the SQLite store `db` with short leases (a killed
/// process's lease frees itself soon), with tools confined to `root`.
async fn stalling_agent(db: &str, root: &Path) -> BoxAgent {
    let store = AnyStore::open("sqlite", db, Duration::from_millis(200)).await;
    brute_agent! {
        use SessionLog { store: store.store() };
        use Loop::ToolResult;
        use DefaultToolPipeline {
            tools: (Stall,),
            root: root.to_path_buf(),
            approval: Approval::ask(["stall"]),
        };
        run model(vec![ToolCall::new("r1", "stall", json!({ "label": "ran" }))]);
    }
    .boxed()
}

/// The child: pauses a turn on session `running`, approves the call, and is killed
/// while it runs (the tool says `running` and never returns).
fn running_child(spec: &str) {
    let (db, root) = spec.split_once('|').unwrap();
    runtime().block_on(async {
        let agent = stalling_agent(db, Path::new(root)).await;
        let outcome = agent
            .turn(env_of(&agent, "running", Some("count")))
            .await
            .unwrap();
        assert!(outcome.stop.awaiting_approval().is_some());
        let _ = agent
            .decide(env_of(&agent, "running", None), "r1", Verdict::Approve)
            .await;
        unreachable!("the approved call never returns in this child");
    });
}

/// The placeholder of an approved call is removed durably before the call runs: a
/// process killed while the call runs leaves the call without a result (repaired as
/// interrupted on the next load), so a second decision on it is refused as not
/// pending and the tool has run once.
#[test]
fn a_crash_while_an_approved_call_runs_never_runs_it_again() {
    if let Ok(spec) = std::env::var(RUNNING_CHILD) {
        return running_child(&spec);
    }
    use std::io::{BufRead, BufReader};
    let dir = temp_dir();
    let root = temp_dir();
    let db: PathBuf = sqlite_path(dir.path());
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            crate::kill_support::test_name(
                module_path!(),
                "a_crash_while_an_approved_call_runs_never_runs_it_again",
            )
            .as_str(),
            "--nocapture",
        ])
        .env(
            RUNNING_CHILD,
            format!("{}|{}", db.display(), root.path().display()),
        )
        .env("BRUTE_TEST_POSTGRES", "unused")
        .stdout(Stdio::piped())
        .spawn()
        .map(KillOnDrop)
        .unwrap();
    let mut stdout = BufReader::new(child.0.stdout.take().unwrap());
    let mut line = String::new();
    while line.trim() != "running" {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "the child exited before the approved call ran"
        );
    }
    child.kill(); // SIGKILL while the approved call runs
    assert_eq!(tallied(root.path()), ["ran"]);

    runtime().block_on(async {
        let agent = stalling_agent(db.to_str().unwrap(), root.path()).await;
        // The killed child's lease frees itself after its ttl.
        let again = loop {
            match agent
                .decide(env_of(&agent, "running", None), "r1", Verdict::Approve)
                .await
            {
                Err(e)
                    if matches!(
                        e.downcast_ref(),
                        Some(brute::session::SessionError::Leased { .. })
                    ) =>
                {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                other => break other,
            }
        };
        let error = match again {
            Ok(outcome) => panic!(
                "the call was still pending after the crash and ran again: {:?}",
                outcome.text()
            ),
            Err(error) => error,
        };
        assert!(
            matches!(
                error.downcast_ref(),
                Some(ApprovalError::NotPending { call_id, waiting, .. })
                    if call_id == "r1" && waiting.is_empty()
            ),
            "{error}"
        );
        assert_eq!(tallied(root.path()), ["ran"], "the approved call ran twice");
        // The call is answered as interrupted: its effect is unknown to the model.
        let store =
            AnyStore::open("sqlite", db.to_str().unwrap(), Duration::from_millis(200)).await;
        let stored = store.load("running").await;
        assert_eq!(check_history(&stored), []);
        let result = stored
            .iter()
            .find(|m| m.tool_call_id.as_deref() == Some("r1"))
            .unwrap();
        assert_eq!(result.content, brute::session::INTERRUPTED_TOOL_CALL);
        assert!(!result.awaiting_approval());
    });
}
