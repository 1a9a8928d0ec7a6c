//! Adversarial tests of the built-in tools: the symlink-swap race against every
//! filesystem tool (a thread exchanging a directory, or the file itself, for a symbolic
//! link to outside the root with `renameat2(RENAME_EXCHANGE)` while the tool runs),
//! arguments that would make huge errors, output past the shell's capture cap, and
//! processes that leave the shell's process group.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use brute::tools::{ToolCallEnv, ToolContext, standard_call_pipeline};
use brute::{
    Handler, Message, ToolCall,
    middleware::Loop,
    providers::ScriptedModel,
    tools::{DefaultToolPipeline, Tools},
};
use serde_json::{Value, json};

use crate::providers_support;
use providers_support::{Reply, Server};

/// Tries per tool: each is one call while the swapper runs.
const TRIES: usize = 300;

/// What the files outside the root hold; seeing it in a result is an escape.
const OUTSIDE: &str = "OUTSIDE-CONTENT";

struct Arena {
    _dir: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    cx: ToolContext,
}

/// `base/root` (the sandbox) and `base/outside`. In the root, `dir` is a real
/// directory and `link` a symbolic link to `outside`; `f.txt` a real file and `f.lnk`
/// a link to `outside/secret.txt`. Both directories hold `secret.txt`.
fn arena() -> Arena {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(root.join("dir")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), format!("{OUTSIDE} secret")).unwrap();
    std::fs::write(root.join("dir/secret.txt"), "inside secret").unwrap();
    std::fs::write(root.join("f.txt"), "inside secret").unwrap();
    std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), root.join("f.lnk")).unwrap();
    let cx = ToolContext::new(&root)
        .unwrap()
        .with_output_dir(dir.path().join("saved"));
    Arena {
        _dir: dir,
        root,
        outside,
        cx,
    }
}

/// Exchanges `a` and `b` (both in `root`) atomically, over and over, until dropped.
struct Swapper {
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicUsize>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Swapper {
    fn start(root: &Path, a: &str, b: &str) -> Swapper {
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicUsize::new(0));
        let (a, b) = (root.join(a), root.join(b));
        let thread = {
            let (stop, swaps) = (stop.clone(), swaps.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    rustix::fs::renameat_with(
                        rustix::fs::CWD,
                        &a,
                        rustix::fs::CWD,
                        &b,
                        rustix::fs::RenameFlags::EXCHANGE,
                    )
                    .expect("renameat2(RENAME_EXCHANGE) works here");
                    swaps.fetch_add(1, Ordering::Relaxed);
                    std::thread::yield_now();
                }
            })
        };
        let swapper = Swapper {
            stop,
            swaps,
            thread: Some(thread),
        };
        // Running before the first call.
        swapper.wait_for(100);
        swapper
    }

    /// Waits (yielding) until the swapper has made `n` more swaps, so that calls and
    /// swaps interleave even on a loaded machine.
    fn wait_for(&self, n: usize) {
        let target = self.swaps.load(Ordering::Relaxed) + n;
        while self.swaps.load(Ordering::Relaxed) < target {
            std::thread::yield_now();
        }
    }

    /// Stops, leaving the names as they were at the start; returns the swaps made.
    fn finish(mut self, root: &Path, a: &str) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
        let swaps = self.swaps.load(Ordering::Relaxed);
        // An odd number of swaps left the link at `a`: swap back once more.
        if std::fs::symlink_metadata(root.join(a))
            .unwrap()
            .file_type()
            .is_symlink()
        {
            let b = if a == "dir" { "link" } else { "f.lnk" };
            rustix::fs::renameat_with(
                rustix::fs::CWD,
                root.join(a),
                rustix::fs::CWD,
                root.join(b),
                rustix::fs::RenameFlags::EXCHANGE,
            )
            .unwrap();
        }
        swaps
    }
}

impl Drop for Swapper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

async fn run(cx: &ToolContext, name: &str, args: Value) -> Result<String, String> {
    let tools = Tools::ALL;
    let mut env = ToolCallEnv::new(ToolCall::new("c", name, args), &tools, cx);
    standard_call_pipeline().call(&mut env).await.unwrap();
    match env.result.unwrap() {
        Ok(output) => Ok(output.content),
        Err(error) => Err(error.to_string()),
    }
}

/// The text of every file under `dir`, for comparing before and after.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| (e.path(), std::fs::read(e.path()).unwrap_or_default()))
        .collect();
    out.sort();
    out
}

/// Runs `TRIES` calls of one tool while `a` and `b` are swapped; asserts that no result
/// shows outside content and that nothing outside changed.
async fn race(swap: (&str, &str), name: &str, args: impl Fn(usize) -> Value) {
    let arena = arena();
    let before = snapshot(&arena.outside);
    let swapper = Swapper::start(&arena.root, swap.0, swap.1);
    let mut failed = 0;
    for i in 0..TRIES {
        swapper.wait_for(1);
        match run(&arena.cx, name, args(i)).await {
            Ok(out) => assert!(!out.contains(OUTSIDE), "{name} try {i} escaped: {out}"),
            Err(err) => {
                assert!(!err.contains(OUTSIDE), "{name} try {i} escaped: {err}");
                failed += 1;
            }
        }
    }
    let swaps = swapper.finish(&arena.root, swap.0);
    assert!(swaps > 0, "the swapper ran");
    assert_eq!(
        snapshot(&arena.outside),
        before,
        "{name} changed a file outside the root"
    );
    // The race was real: some calls met the link and were refused.
    eprintln!("{name} with {swap:?} swapped: {failed} of {TRIES} calls refused, {swaps} swaps");
}

#[tokio::test]
async fn read_never_escapes_under_a_swap() {
    race(
        ("dir", "link"),
        "read",
        |_| json!({"file_path": "dir/secret.txt"}),
    )
    .await;
    race(
        ("f.txt", "f.lnk"),
        "read",
        |_| json!({"file_path": "f.txt"}),
    )
    .await;
    race(("dir", "link"), "read", |_| json!({"file_path": "dir"})).await;
}

#[tokio::test]
async fn write_never_escapes_under_a_swap() {
    race(
        ("dir", "link"),
        "write",
        |i| json!({"file_path": format!("dir/new{i}.txt"), "content": "x"}),
    )
    .await;
    race(
        ("dir", "link"),
        "write",
        |_| json!({"file_path": "dir/secret.txt", "content": "overwritten"}),
    )
    .await;
    race(
        ("f.txt", "f.lnk"),
        "write",
        |_| json!({"file_path": "f.txt", "content": "overwritten"}),
    )
    .await;
}

#[tokio::test]
async fn patch_never_escapes_under_a_swap() {
    let args =
        |file: &str| json!({"file_path": file, "old_string": "secret", "new_string": "secret+"});
    race(("dir", "link"), "patch", |_| args("dir/secret.txt")).await;
    race(("f.txt", "f.lnk"), "patch", |_| args("f.txt")).await;
}

#[tokio::test]
async fn remove_never_escapes_under_a_swap() {
    let arena = arena();
    for i in 0..TRIES {
        std::fs::write(arena.root.join(format!("dir/victim{i}")), "inside").unwrap();
        std::fs::write(arena.outside.join(format!("victim{i}")), OUTSIDE).unwrap();
    }
    let before = snapshot(&arena.outside);
    let swapper = Swapper::start(&arena.root, "dir", "link");
    for i in 0..TRIES {
        let _ = run(
            &arena.cx,
            "remove",
            json!({"path": format!("dir/victim{i}")}),
        )
        .await;
    }
    assert!(swapper.finish(&arena.root, "dir") > 0);
    assert_eq!(
        snapshot(&arena.outside),
        before,
        "remove deleted a file outside the root"
    );
}

#[tokio::test]
async fn fs_search_never_escapes_under_a_swap() {
    race(
        ("dir", "link"),
        "fs_search",
        |_| json!({"pattern": "CONTENT|secret", "path": "dir"}),
    )
    .await;
    race(
        ("dir", "link"),
        "fs_search",
        |_| json!({"pattern": "CONTENT"}),
    )
    .await;
    race(
        ("f.txt", "f.lnk"),
        "fs_search",
        |_| json!({"pattern": "secret"}),
    )
    .await;
}

#[tokio::test]
async fn undo_never_escapes_under_a_swap() {
    let arena = arena();
    std::fs::write(arena.outside.join("u.txt"), OUTSIDE).unwrap();
    let before = snapshot(&arena.outside);
    let swapper = Swapper::start(&arena.root, "dir", "link");
    for i in 0..TRIES {
        swapper.wait_for(1);
        let file = "dir/u.txt";
        let _ = run(
            &arena.cx,
            "write",
            json!({"file_path": file, "content": format!("v{i}")}),
        )
        .await;
        if let Ok(out) = run(&arena.cx, "undo", json!({"path": file})).await {
            assert!(!out.contains(OUTSIDE), "{out}");
        }
    }
    assert!(swapper.finish(&arena.root, "dir") > 0);
    assert_eq!(
        snapshot(&arena.outside),
        before,
        "undo changed a file outside the root"
    );
}

#[tokio::test]
async fn the_shell_working_directory_never_escapes_under_a_swap() {
    let arena = arena();
    let swapper = Swapper::start(&arena.root, "dir", "link");
    for i in 0..TRIES {
        swapper.wait_for(1);
        let args = json!({"command": "cat secret.txt; pwd -P", "cwd": "dir"});
        match run(&arena.cx, "shell", args).await {
            // It ran in the directory inside the root, whatever the path became.
            Ok(out) => assert!(out.starts_with("inside secret"), "shell try {i}: {out}"),
            Err(err) => assert!(!err.contains(OUTSIDE), "shell try {i} ran outside: {err}"),
        }
    }
    assert!(swapper.finish(&arena.root, "dir") > 0);
}

// ------------------------------------------------------------ bounded errors

/// A turn whose only reply is `calls`, through `DefaultToolPipeline` with every
/// built-in tool; returns the tool results.
async fn turn(root: &Path, calls: Vec<ToolCall>) -> Vec<String> {
    let saved = tempfile::tempdir().unwrap();
    let model = ScriptedModel::per_turn([Message::tool_calls("", calls), Message::assistant("ok")]);
    let agent = brute::brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline {
            tools: Tools::ALL,
            root: root,
            output_dir: saved.path(),
            env_secrets: false,
        };
        run model;
    };
    let outcome = agent.start("go").await.unwrap();
    outcome
        .env
        .messages
        .iter()
        .filter(|m| m.role == brute::Role::Tool)
        .map(|m| m.content.clone())
        .collect()
}

#[tokio::test]
async fn huge_arguments_give_small_error_results() {
    let dir = tempfile::tempdir().unwrap();
    // 10 MB where only a string is looked at; 1 MB where a parser runs on it.
    let huge = "a/".repeat(5_000_000);
    let long_name = "x".repeat(10_000_000);
    let long_pattern = "x".repeat(1_000_000);
    let long_host = "x".repeat(100_000);
    let calls = vec![
        ToolCall::new("1", "read", json!({ "file_path": huge })),
        ToolCall::new(
            "2",
            "write",
            json!({ "file_path": format!("../{huge}"), "content": "x" }),
        ),
        ToolCall::new(
            "3",
            "fs_search",
            json!({ "pattern": format!("({long_pattern}") }),
        ),
        ToolCall::new("4", long_name.clone(), json!({})),
        ToolCall::new("5", "read", json!({ long_name.clone(): 1 })),
        ToolCall::new(
            "6",
            "fetch",
            json!({ "url": format!("http://{long_host}.example/") }),
        ),
        ToolCall::new(
            "7",
            "read",
            json!({ "file_path": "a", "start_line": long_name }),
        ),
        ToolCall::new(
            "8",
            "patch",
            json!({ "file_path": huge, "old_string": "a", "new_string": "b" }),
        ),
    ];
    let results = turn(dir.path(), calls).await;
    assert_eq!(results.len(), 8);
    for (i, result) in results.iter().enumerate() {
        assert!(
            result.starts_with("Error: tool `"),
            "{i}: {}",
            &result[..200]
        );
        assert!(
            result.len() < 2_000,
            "result {i} is {} bytes: {}",
            result.len(),
            &result[..300]
        );
    }
    assert!(results[0].contains("bytes in all)"), "{}", results[0]);
    // serde's own message keeps its end, saying what was expected.
    assert!(results[6].contains("expected usize"), "{}", results[6]);
}

/// An OpenAI reply to the scripted server: `calls` (JSON tool calls) or a text.
fn openai_reply(calls: Value, text: &str) -> Reply {
    let message = if calls.is_null() {
        json!({"role": "assistant", "content": text})
    } else {
        json!({"role": "assistant", "content": null, "tool_calls": calls})
    };
    let body = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-test",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    });
    Reply::json(&body.to_string())
}

/// The default stack over an HTTP model whose key is given in code only: the tool
/// results never carry the key, neither stored nor sent back to the model, although
/// the pipeline was told nothing about it and the key is in no environment variable.
/// The key reaches the pipeline as data: the terminal hands the model's key over.
#[tokio::test]
async fn the_http_models_key_is_hidden_from_tool_results_without_configuration() {
    const KEY: &str = "sk-given-in-code-7d41c0ffee";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        format!("api_key = \"{KEY}\"\n"),
    )
    .unwrap();
    let calls = json!([
        {"id": "1", "type": "function", "function": {"name": "read", "arguments": "{\"file_path\":\"config.toml\"}"}},
        {"id": "2", "type": "function", "function": {"name": "shell", "arguments": "{\"command\":\"cat config.toml\"}"}},
    ]);
    let server = Server::start(vec![
        openai_reply(calls, ""),
        openai_reply(Value::Null, "done"),
    ])
    .await;
    let model = brute::providers::OpenAi::compatible(format!("{}/v1", server.url()), "gpt-test")
        .api_key(KEY)
        .stream(false);
    let root = dir.path();
    let agent = brute::brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: Tools::ALL, root: root, env_secrets: false };
        run model;
    };
    let outcome = agent.start("go").await.unwrap();
    let results: Vec<&str> = outcome
        .env
        .messages
        .iter()
        .filter(|m| m.role == brute::Role::Tool)
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(results.len(), 2);
    for (i, result) in results.iter().enumerate() {
        assert!(
            !result.contains(KEY),
            "result {i} carries the key: {result}"
        );
        assert!(
            result.contains("[redacted api key]"),
            "result {i}: {result}"
        );
    }
    // What the model was sent back: the results, redacted; the key only in its header.
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let second = requests[1].json().to_string();
    assert!(
        second.contains("[redacted api key]") && !second.contains(KEY),
        "{second}"
    );
    assert_eq!(outcome.text(), Some("done"));
}

/// Plain data: a key merely made in this process (as main registered every `ApiKey` in a
/// process-wide list) is not hidden by an agent whose model does not hold it, and a
/// pipeline told the key hides it.
#[tokio::test]
async fn a_key_no_model_of_the_agent_holds_is_not_registered_anywhere() {
    const KEY: &str = "sk-made-but-unused-9b2e7a";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.txt"), KEY).unwrap();
    let _unused = brute::providers::OpenAi::new("gpt-test").api_key(KEY);
    let calls = vec![ToolCall::new("1", "read", json!({ "file_path": "k.txt" }))];
    let results = turn(dir.path(), calls.clone()).await;
    assert!(results[0].contains(KEY), "{}", results[0]);
    let told =
        brute::tools::Secrets::default().with_api_keys(&[brute::providers::ApiKey::new(KEY)]);
    let model = ScriptedModel::per_turn([Message::tool_calls("", calls), Message::assistant("ok")]);
    let root = dir.path();
    let agent = brute::brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: Tools::ALL, root: root, env_secrets: false, secrets: told };
        run model;
    };
    let outcome = agent.start("go").await.unwrap();
    let result = &outcome.env.messages[2].content;
    assert!(
        !result.contains(KEY) && result.contains("[redacted api key]"),
        "{result}"
    );
}

// ------------------------------------------------------------ shell

#[tokio::test]
async fn shell_output_past_16_mib_is_drained_to_the_end_and_says_it_was_cut() {
    let dir = tempfile::tempdir().unwrap();
    let cx = ToolContext::new(dir.path())
        .unwrap()
        .with_output_dir(dir.path().join("saved"));
    // 20 MiB of `a`, then a last line: the command must run to its end.
    let command = "head -c 20971520 /dev/zero | tr '\\0' a; echo; echo THE-END; exit 3";
    let out = run(&cx, "shell", json!({ "command": command }))
        .await
        .unwrap();
    // The note comes last: a long output keeps its tail, so the model sees it.
    assert!(
        out.ends_with(
            "THE-END\n\n[exit code: 3]\n[stdout: 20971529 bytes, the first 4194313 dropped: only the last 16777216 bytes are captured]"
        ),
        "{}",
        &out[out.len() - 200..]
    );
    assert!(!out.contains("killed by a signal"));
}

/// Whether `pid` is gone or a zombie (killed, not yet reaped by whoever adopted it).
fn dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

#[tokio::test]
async fn a_setsid_grandchild_is_killed_when_the_command_ends() {
    let dir = tempfile::tempdir().unwrap();
    let cx = ToolContext::new(dir.path()).unwrap();
    let pidfile = dir.path().join("pid");
    // A grandchild in a session (and process group) of its own, holding the pipes.
    let command = format!(
        "setsid bash -c 'echo $$ > {}; exec sleep 60' & sleep 0.3; echo started",
        pidfile.display()
    );
    let out = run(&cx, "shell", json!({ "command": command }))
        .await
        .unwrap();
    assert!(out.starts_with("started"), "{out}");
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let mut waited = Duration::ZERO;
    // Generous: reaping on a loaded machine takes a while; only a survivor reaches it.
    while !dead(pid) && waited < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
        waited += Duration::from_millis(20);
    }
    assert!(dead(pid), "the setsid grandchild {pid} survived");
}

/// Through the pipeline, an output past the 16 MiB capture says what each stage
/// dropped: the capture (its note is the last line, so the tail-keeping cut keeps it),
/// then the pipeline's cut to 50 KiB, in bytes as well as lines.
#[tokio::test]
async fn a_huge_shell_output_says_how_many_bytes_each_stage_dropped() {
    let dir = tempfile::tempdir().unwrap();
    // 20 MiB of `a`, a newline, then 3,000 short lines (13,893 bytes).
    let command = "head -c 20971520 /dev/zero | tr '\\0' a; echo; seq 1 3000";
    let results = turn(
        dir.path(),
        vec![ToolCall::new("1", "shell", json!({ "command": command }))],
    )
    .await;
    let out = &results[0];
    let total: u64 = 20_971_520 + 1 + 13_893;
    let capture = format!(
        "[stdout: {total} bytes, the first {} dropped: only the last 16777216 bytes are captured]",
        total - 16_777_216
    );
    assert!(
        out.contains(&capture),
        "{}",
        &out[out.len().saturating_sub(600)..]
    );
    // The pipeline's note: lines and bytes shown of what the shell returned.
    let note = out
        .split("[Output truncated: ")
        .nth(1)
        .expect("the pipeline cut the output");
    let shell_bytes = 16_777_216 + 1 + capture.len();
    assert!(
        note.contains(&format!(" of {shell_bytes} bytes; ")),
        "{note}"
    );
    let not_shown: usize = note
        .split("bytes; ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("a byte count");
    assert!(not_shown > 16_000_000, "{note}");
    assert!(out.contains("\n3000\n"), "the tail is kept");
}

/// Kills the process whose id is in `pidfile` (a holder a test started on purpose).
fn kill_holder(pidfile: &Path) {
    if let Ok(pid) = std::fs::read_to_string(pidfile) {
        let _ = std::process::Command::new("kill")
            .args(["-9", pid.trim()])
            .status();
    }
}

/// A command that starts a process the shell cannot kill (it leaves the process
/// group and drops the call's marker with `env -i`) and holds stdout: the
/// command's part of it must not wait for, and its id in `holder.pid`.
const ESCAPED_HOLDER: &str = "(env -i setsid sh -c 'echo $$ > holder.pid; exec sleep 60' &); \
     until [ -s holder.pid ]; do sleep 0.01; done";

/// The command printed, started a holder it cannot kill and exited: what it printed is
/// returned (main returned "(no output)" after waiting 2 s), with a note saying a
/// process still holds the output.
#[tokio::test]
async fn output_is_kept_when_an_escaped_process_holds_the_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let cx = ToolContext::new(dir.path()).unwrap();
    let command = format!("echo before; {ESCAPED_HOLDER}; echo after");
    let out = run(&cx, "shell", json!({ "command": command })).await;
    kill_holder(&dir.path().join("holder.pid"));
    let out = out.unwrap();
    assert!(out.starts_with("before\nafter\n"), "{out}");
    assert!(out.contains("still holds its output open"), "{out}");
    assert!(!out.contains("(no output)"), "{out}");
}

/// The command printed, started a holder it cannot kill and slept past its timeout:
/// the timeout error carries what was printed (main lost it).
#[tokio::test]
async fn output_before_a_timeout_is_kept_when_an_escaped_process_holds_the_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let cx = ToolContext::new(dir.path()).unwrap();
    let command = format!("echo before; {ESCAPED_HOLDER}; echo after; sleep 30");
    let out = run(&cx, "shell", json!({ "command": command, "timeout": 1 })).await;
    kill_holder(&dir.path().join("holder.pid"));
    let out = out.unwrap_err();
    assert!(out.contains("timed out after 1s"), "{out}");
    assert!(
        out.contains("Output before the timeout:\nbefore\nafter"),
        "{out}"
    );
}
