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

/// A provider's key given in code never reaches a tool result, although the pipeline
/// was told nothing about it and the key is in no environment variable.
#[tokio::test]
async fn an_api_key_given_in_code_is_hidden_from_tool_results() {
    const KEY: &str = "sk-given-in-code-7d41c0ffee";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        format!("api_key = \"{KEY}\"\n"),
    )
    .unwrap();
    // Never called: making it is what registers the key.
    let _model = brute::providers::OpenAi::new("gpt-test").api_key(KEY);
    let calls = vec![
        ToolCall::new("1", "read", json!({ "file_path": "config.toml" })),
        ToolCall::new(
            "2",
            "shell",
            json!({ "command": "cat config.toml; echo $0" }),
        ),
    ];
    let results = turn(dir.path(), calls).await;
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
    assert!(
        out.starts_with(
            "[output truncated at 16777216 bytes: the first 4194313 bytes are not shown]"
        ),
        "{}",
        &out[..200]
    );
    assert!(
        out.ends_with("THE-END\n\n[exit code: 3]"),
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
    while !dead(pid) && waited < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
        waited += Duration::from_millis(20);
    }
    assert!(dead(pid), "the setsid grandchild {pid} survived");
}
