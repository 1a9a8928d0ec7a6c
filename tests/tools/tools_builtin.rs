//! The built-in tools: happy paths and bad inputs, run through the per-call pipeline
//! (so `undo` sees the snapshots `Snapshot` records).
#![allow(clippy::unwrap_used)]

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::time::{Duration, Instant};

use brute::tools::{
    Delegate, NetworkPolicy, Question, QuestionHandler, ToolCallEnv, ToolContext, ToolSet,
    standard_call_pipeline,
};
use brute::{
    Handler, Message, Role, ToolCall, brute_agent,
    middleware::Loop,
    providers::ScriptedModel,
    tools::{DefaultToolPipeline, Tools},
};
use serde_json::{Value, json};

fn setup() -> (tempfile::TempDir, ToolContext) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("root")).unwrap();
    let cx = ToolContext::new(dir.path().join("root"))
        .unwrap()
        .with_output_dir(dir.path().join("out"));
    (dir, cx)
}

fn root(cx: &ToolContext) -> &Path {
    cx.sandbox().root()
}

async fn run(cx: &ToolContext, name: &str, args: Value) -> Result<String, String> {
    let tools = Tools::ALL;
    run_in(&tools, cx, name, args).await
}

/// Runs one call of a tool in `tools` through the standard per-call pipeline.
async fn run_in(
    tools: &impl ToolSet,
    cx: &ToolContext,
    name: &str,
    args: Value,
) -> Result<String, String> {
    let mut env = ToolCallEnv::new(ToolCall::new("c1", name, args), tools, cx);
    standard_call_pipeline().call(&mut env).await.unwrap();
    match env.result.unwrap() {
        Ok(output) => Ok(output.content),
        Err(error) => Err(error.to_string()),
    }
}

fn write(cx: &ToolContext, rel: &str, content: impl AsRef<[u8]>) {
    let path = root(cx).join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn read(cx: &ToolContext, rel: &str) -> String {
    std::fs::read_to_string(root(cx).join(rel)).unwrap()
}

/// Path escapes every filesystem tool must refuse: `..`, an absolute path elsewhere,
/// a symbolic link to a directory outside, and one to a file outside.
fn escapes(dir: &Path, cx: &ToolContext) -> Vec<String> {
    std::fs::write(dir.join("secret.txt"), "top secret").unwrap();
    std::os::unix::fs::symlink(dir, root(cx).join("up")).unwrap();
    std::os::unix::fs::symlink(dir.join("secret.txt"), root(cx).join("link.txt")).unwrap();
    vec![
        "../secret.txt".to_string(),
        dir.join("secret.txt").display().to_string(),
        "up/secret.txt".to_string(),
        "link.txt".to_string(),
        "/etc/passwd".to_string(),
    ]
}

// ---------------------------------------------------------------- read
/// Runs one call of a built-in tool through the standard per-call pipeline, and
/// returns the whole output (text and parts).
async fn run_output(
    cx: &ToolContext,
    name: &str,
    args: Value,
) -> Result<brute::tools::ToolOutput, String> {
    let tools = Tools::ALL;
    let mut env = ToolCallEnv::new(ToolCall::new("c1", name, args), &tools, cx);
    standard_call_pipeline().call(&mut env).await.unwrap();
    env.result.unwrap().map_err(|error| error.to_string())
}

#[tokio::test]
async fn read_returns_an_image_file_as_an_image_part() {
    use brute::message::Part;
    let (_dir, cx) = setup();
    let images: [(&str, &[u8], &str); 4] = [
        ("shot.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", "image/png"),
        ("photo.jpg", b"\xff\xd8\xff\xe0\0\x10JFIF\0", "image/jpeg"),
        ("anim.gif", b"GIF89a\x01\0\x01\0\0\0\0;", "image/gif"),
        // Known by its first bytes, not by its name.
        (
            "picture.bin",
            b"RIFF\x1a\0\0\0WEBPVP8L\x0d\0\0\0",
            "image/webp",
        ),
    ];
    for (name, bytes, media_type) in images {
        write(&cx, name, bytes);
        let output = run_output(&cx, "read", json!({"file_path": name}))
            .await
            .unwrap();
        assert_eq!(
            output.parts,
            [Part::image(media_type, bytes).unwrap()],
            "{name}"
        );
        assert_eq!(
            output.content,
            format!("Image {name} ({media_type}, {} bytes).", bytes.len())
        );
    }
    // A text file has no parts.
    write(&cx, "a.txt", "hello\n");
    let text = run_output(&cx, "read", json!({"file_path": "a.txt"}))
        .await
        .unwrap();
    assert!(text.parts.is_empty());
}

#[tokio::test]
async fn read_refuses_an_image_over_its_documented_limit() {
    use brute::tools::Read;
    let (_dir, cx) = setup();
    assert_eq!(Read::MAX_IMAGE_BYTES, 3_932_160);
    let limit = usize::try_from(Read::MAX_IMAGE_BYTES).unwrap();
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.resize(limit, 0);
    write(&cx, "at_limit.png", &png);
    let output = run_output(&cx, "read", json!({"file_path": "at_limit.png"}))
        .await
        .unwrap();
    assert_eq!(output.parts[0].data().unwrap().to_bytes().len(), limit);
    png.push(0);
    write(&cx, "over.png", &png);
    let err = run_output(&cx, "read", json!({"file_path": "over.png"}))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        "Cannot show image over.png (image/png, 3932161 bytes): read shows images of at most 3932160 bytes"
    );
}

#[tokio::test]
async fn an_image_read_by_the_model_is_on_the_tool_result_message() {
    use brute::message::Part;
    let dir = tempfile::tempdir().unwrap();
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
    std::fs::write(dir.path().join("chart.png"), png).unwrap();
    let model = ScriptedModel::per_turn([
        Message::tool_calls(
            "",
            vec![ToolCall::new(
                "c1",
                "read",
                json!({"file_path": "chart.png"}),
            )],
        ),
        Message::assistant("A chart."),
    ]);
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: Tools::READ_ONLY, root: dir.path(), output_dir: dir.path() };
        run model;
    };
    let outcome = agent.start("What is in chart.png?").await.unwrap();
    let result = &outcome.env.messages[2];
    assert_eq!(result.role, Role::Tool);
    assert_eq!(result.content, "Image chart.png (image/png, 16 bytes).");
    assert_eq!(result.parts(), [Part::image("image/png", png).unwrap()]);
}

#[tokio::test]
async fn read_numbers_lines_and_pages() {
    let (_dir, cx) = setup();
    write(&cx, "a.txt", "one\ntwo\nthree\n");
    assert_eq!(
        run(&cx, "read", json!({"file_path": "a.txt"}))
            .await
            .unwrap(),
        "1\tone\n2\ttwo\n3\tthree"
    );
    assert_eq!(
        run(
            &cx,
            "read",
            json!({"file_path": "a.txt", "start_line": 2, "end_line": 2})
        )
        .await
        .unwrap(),
        "2\ttwo"
    );
    let long: String = (1..=2500).map(|i| format!("l{i}\n")).collect();
    write(&cx, "long.txt", long);
    let out = run(&cx, "read", json!({"file_path": "long.txt"}))
        .await
        .unwrap();
    assert!(out.starts_with("1\tl1\n"));
    assert!(
        out.ends_with("(Showing lines 1-2000 of 2500. Use start_line=2001 to continue.)"),
        "{}",
        &out[out.len() - 100..]
    );
    let rest = run(
        &cx,
        "read",
        json!({"file_path": "long.txt", "start_line": 2001}),
    )
    .await
    .unwrap();
    assert!(rest.starts_with("2001\tl2001") && rest.ends_with("2500\tl2500"));
    write(&cx, "wide.txt", "x".repeat(5000));
    let wide = run(&cx, "read", json!({"file_path": "wide.txt"}))
        .await
        .unwrap();
    assert!(wide.ends_with("... (line truncated to 2000 chars)"));
    let err = run(&cx, "read", json!({"file_path": "a.txt", "start_line": 10}))
        .await
        .unwrap_err();
    assert!(err.contains("past the end"), "{err}");
}

#[tokio::test]
async fn read_lists_directories() {
    let (_dir, cx) = setup();
    write(&cx, "src/main.rs", "fn main() {}");
    write(&cx, "b.txt", "");
    write(&cx, ".hidden", "");
    let out = run(&cx, "read", json!({"file_path": "."})).await.unwrap();
    assert_eq!(out, "b.txt (file)\nsrc (dir)");
    assert_eq!(
        run(&cx, "read", json!({"file_path": "b.txt"}))
            .await
            .unwrap(),
        "(empty file)"
    );
}

#[tokio::test]
async fn read_refuses_missing_binary_and_escaping_paths() {
    let (dir, cx) = setup();
    write(&cx, "src/main.rs", "fn main() {}");
    let err = run(&cx, "read", json!({"file_path": "src/mian.rs"}))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        "File not found: src/mian.rs. Did you mean: src/main.rs?"
    );
    write(&cx, "data.bin", b"abc\0def");
    let err = run(&cx, "read", json!({"file_path": "data.bin"}))
        .await
        .unwrap_err();
    assert_eq!(err, "Cannot read binary file: data.bin");
    write(&cx, "logo.png", "not really a png");
    assert!(
        run(&cx, "read", json!({"file_path": "logo.png"}))
            .await
            .unwrap_err()
            .contains("binary")
    );
    for path in escapes(dir.path(), &cx) {
        let err = run(&cx, "read", json!({"file_path": path}))
            .await
            .unwrap_err();
        assert!(err.contains("outside the root"), "{path}: {err}");
        assert!(!err.contains("top secret"));
    }
    let err = run(&cx, "read", json!({})).await.unwrap_err();
    assert!(err.contains("missing field `file_path`"), "{err}");
}

// ---------------------------------------------------------------- write / patch / undo

#[tokio::test]
async fn write_creates_files_returns_a_diff_and_undo_restores() {
    let (dir, cx) = setup();
    let out = run(
        &cx,
        "write",
        json!({"file_path": "new/dir/a.txt", "content": "hello\n"}),
    )
    .await
    .unwrap();
    assert!(out.starts_with("Wrote 6 bytes to new/dir/a.txt."), "{out}");
    assert!(
        out.contains("+++ b/new/dir/a.txt") && out.contains("+hello"),
        "{out}"
    );
    let out = run(
        &cx,
        "write",
        json!({"file_path": "new/dir/a.txt", "content": "goodbye\n"}),
    )
    .await
    .unwrap();
    assert!(out.contains("-hello") && out.contains("+goodbye"), "{out}");

    assert_eq!(
        run(&cx, "undo", json!({"path": "new/dir/a.txt"}))
            .await
            .unwrap(),
        "Restored new/dir/a.txt (6 bytes)"
    );
    assert_eq!(read(&cx, "new/dir/a.txt"), "hello\n");
    assert_eq!(
        run(&cx, "undo", json!({"path": "new/dir/a.txt"}))
            .await
            .unwrap(),
        "Deleted new/dir/a.txt (it did not exist before)"
    );
    assert!(!root(&cx).join("new/dir/a.txt").exists());
    let err = run(&cx, "undo", json!({"path": "new/dir/a.txt"}))
        .await
        .unwrap_err();
    assert_eq!(err, "No undo history available for: new/dir/a.txt");

    for path in escapes(dir.path(), &cx) {
        let err = run(&cx, "write", json!({"file_path": path, "content": "pwned"}))
            .await
            .unwrap_err();
        assert!(err.contains("outside the root"), "{path}: {err}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("secret.txt")).unwrap(),
        "top secret"
    );
    let err = run(&cx, "write", json!({"file_path": "x.txt"}))
        .await
        .unwrap_err();
    assert!(err.contains("missing field `content`"), "{err}");
}

#[tokio::test]
async fn patch_replaces_text_literally() {
    let (dir, cx) = setup();
    write(&cx, "a.rs", "let x = 1;\nlet y = 1;\n");
    let out = run(
        &cx,
        "patch",
        json!({"file_path": "a.rs", "old_string": "1", "new_string": r"$1 \1 \\0 ${x}"}),
    )
    .await
    .unwrap();
    assert!(
        out.starts_with("Replaced 1 occurrence(s) in a.rs. The text occurs 2 times"),
        "{out}"
    );
    assert_eq!(
        read(&cx, "a.rs"),
        "let x = $1 \\1 \\\\0 ${x};\nlet y = 1;\n"
    );
    assert!(
        out.contains("-let x = 1;") && out.contains(r"+let x = $1 \1 \\0 ${x};"),
        "{out}"
    );

    let out = run(&cx, "patch", json!({"file_path": "a.rs", "old_string": "let", "new_string": "const", "replace_all": true}))
        .await
        .unwrap();
    assert!(out.starts_with("Replaced 2 occurrence(s)"));
    assert_eq!(
        read(&cx, "a.rs"),
        "const x = $1 \\1 \\\\0 ${x};\nconst y = 1;\n"
    );

    run(&cx, "undo", json!({"path": "a.rs"})).await.unwrap();
    run(&cx, "undo", json!({"path": "a.rs"})).await.unwrap();
    assert_eq!(read(&cx, "a.rs"), "let x = 1;\nlet y = 1;\n");

    let err = run(
        &cx,
        "patch",
        json!({"file_path": "a.rs", "old_string": "zzz", "new_string": "q"}),
    )
    .await
    .unwrap_err();
    assert_eq!(err, "old_string not found in a.rs");
    // A failed patch leaves no undo entry behind.
    assert_eq!(cx.snapshots().depth(&root(&cx).join("a.rs")), 0);
    let err = run(
        &cx,
        "patch",
        json!({"file_path": "nope.rs", "old_string": "a", "new_string": "b"}),
    )
    .await
    .unwrap_err();
    assert_eq!(err, "File not found: nope.rs");
    write(&cx, "b.bin", b"a\0b");
    let err = run(
        &cx,
        "patch",
        json!({"file_path": "b.bin", "old_string": "a", "new_string": "b"}),
    )
    .await
    .unwrap_err();
    assert!(err.contains("binary"), "{err}");
    let err = run(
        &cx,
        "patch",
        json!({"file_path": "a.rs", "old_string": "", "new_string": "b"}),
    )
    .await
    .unwrap_err();
    assert!(err.contains("`old_string` is empty"), "{err}");
    for path in escapes(dir.path(), &cx) {
        let err = run(
            &cx,
            "patch",
            json!({"file_path": path, "old_string": "top", "new_string": "no"}),
        )
        .await
        .unwrap_err();
        assert!(err.contains("outside the root"), "{path}: {err}");
    }
}

// ---------------------------------------------------------------- remove

#[tokio::test]
async fn remove_deletes_files_and_empty_directories_only() {
    let (dir, cx) = setup();
    write(&cx, "a.txt", "keep me");
    write(&cx, "full/b.txt", "b");
    std::fs::create_dir(root(&cx).join("empty")).unwrap();
    assert_eq!(
        run(&cx, "remove", json!({"path": "a.txt"})).await.unwrap(),
        "Removed a.txt"
    );
    assert!(!root(&cx).join("a.txt").exists());
    run(&cx, "undo", json!({"path": "a.txt"})).await.unwrap();
    assert_eq!(read(&cx, "a.txt"), "keep me");
    assert_eq!(
        run(&cx, "remove", json!({"path": "empty"})).await.unwrap(),
        "Removed empty"
    );
    let err = run(&cx, "remove", json!({"path": "full"}))
        .await
        .unwrap_err();
    assert!(err.contains("not empty"), "{err}");
    let err = run(&cx, "remove", json!({"path": "ghost"}))
        .await
        .unwrap_err();
    assert_eq!(err, "Path not found: ghost");
    let err = run(&cx, "remove", json!({"path": "."})).await.unwrap_err();
    assert!(err.contains("root"), "{err}");
    for path in escapes(dir.path(), &cx) {
        let err = run(&cx, "remove", json!({"path": path})).await.unwrap_err();
        assert!(err.contains("outside the root"), "{path}: {err}");
    }
    assert!(dir.path().join("secret.txt").exists());
}

// ---------------------------------------------------------------- fs_search

#[tokio::test]
async fn fs_search_finds_lines_with_the_ripgrep_crates() {
    let (dir, cx) = setup();
    write(&cx, "src/lib.rs", "pub fn alpha() {}\nfn beta() {}\n");
    write(&cx, "src/main.rs", "fn main() { alpha(); }\n");
    write(&cx, "notes.md", "ALPHA notes\n");
    write(&cx, "blob.bin", b"alpha\0alpha");
    write(&cx, ".hidden/x.rs", "alpha");
    let out = run(
        &cx,
        "fs_search",
        json!({"pattern": r"alpha\(", "glob": "*.rs"}),
    )
    .await
    .unwrap();
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "src/lib.rs:1:pub fn alpha() {}",
            "src/main.rs:1:fn main() { alpha(); }"
        ]
    );
    let out = run(
        &cx,
        "fs_search",
        json!({"pattern": "alpha", "path": "notes.md", "ignore_case": true}),
    )
    .await
    .unwrap();
    assert_eq!(out, "notes.md:1:ALPHA notes");
    assert_eq!(
        run(&cx, "fs_search", json!({"pattern": "zeta"}))
            .await
            .unwrap(),
        "No matches found."
    );
    let many: String = (0..150).map(|i| format!("needle {i}\n")).collect();
    write(&cx, "many.txt", many);
    let out = run(&cx, "fs_search", json!({"pattern": "needle"}))
        .await
        .unwrap();
    assert!(out.ends_with(
        "(Results truncated: showing 100 of 150 matches. Consider a more specific path or pattern.)"
    ));

    let err = run(&cx, "fs_search", json!({"pattern": "(unclosed"}))
        .await
        .unwrap_err();
    assert!(
        err.contains("`pattern` is not a valid regular expression"),
        "{err}"
    );
    let err = run(
        &cx,
        "fs_search",
        json!({"pattern": "a", "glob": "{unclosed"}),
    )
    .await
    .unwrap_err();
    assert!(err.contains("`glob`"), "{err}");
    let err = run(&cx, "fs_search", json!({"pattern": "a", "path": "missing"}))
        .await
        .unwrap_err();
    assert_eq!(err, "Path not found: missing");
    escapes(dir.path(), &cx);
    let err = run(&cx, "fs_search", json!({"pattern": "secret", "path": ".."}))
        .await
        .unwrap_err();
    assert!(err.contains("outside the root"), "{err}");
    let err = run(&cx, "fs_search", json!({"pattern": "secret", "path": "up"}))
        .await
        .unwrap_err();
    assert!(err.contains("outside the root"), "{err}");
    // The whole root is searched, but links leading outside are not followed.
    assert_eq!(
        run(&cx, "fs_search", json!({"pattern": "top secret"}))
            .await
            .unwrap(),
        "No matches found."
    );
}

// ---------------------------------------------------------------- shell

/// Whether process `pid` is gone (or a zombie waiting to be reaped).
fn dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

fn wait_dead(pid: u32) -> bool {
    let start = Instant::now();
    // Generous: reaping on a loaded machine takes a while; only a survivor reaches it.
    while start.elapsed() < Duration::from_secs(60) {
        if dead(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[tokio::test]
async fn shell_reports_output_stderr_and_exit_code() {
    let (dir, cx) = setup();
    write(&cx, "sub/f.txt", "");
    assert_eq!(
        run(&cx, "shell", json!({"command": "echo hi"}))
            .await
            .unwrap(),
        "hi\n"
    );
    let out = run(
        &cx,
        "shell",
        json!({"command": "echo out; echo err >&2; exit 3"}),
    )
    .await
    .unwrap();
    assert_eq!(out, "out\n\nSTDERR:\nerr\n\n[exit code: 3]");
    assert_eq!(
        run(&cx, "shell", json!({"command": "ls", "cwd": "sub"}))
            .await
            .unwrap(),
        "f.txt\n"
    );
    assert_eq!(
        run(&cx, "shell", json!({"command": "true"})).await.unwrap(),
        "(no output)"
    );
    escapes(dir.path(), &cx);
    let err = run(&cx, "shell", json!({"command": "ls", "cwd": "up"}))
        .await
        .unwrap_err();
    assert!(err.contains("outside the root"), "{err}");
    let err = run(&cx, "shell", json!({"command": "ls", "cwd": "sub/f.txt"}))
        .await
        .unwrap_err();
    assert!(err.contains("not a directory"), "{err}");
    let err = run(&cx, "shell", json!({"cmd": "ls"})).await.unwrap_err();
    assert!(err.contains("missing field `command`"), "{err}");
}

#[tokio::test]
async fn long_shell_outputs_keep_their_tail() {
    let dir = tempfile::tempdir().unwrap();
    let saved = tempfile::tempdir().unwrap();
    let calls = vec![ToolCall::new(
        "s",
        "shell",
        json!({"command": "seq 1 5000"}),
    )];
    let model =
        ScriptedModel::per_turn([Message::tool_calls("", calls), Message::assistant("done")]);
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: Tools::ALL, root: dir.path(), output_dir: saved.path() };
        run model;
    };
    let outcome = agent.start("go").await.unwrap();
    let out = &outcome.env.messages[2].content;
    assert!(
        out.starts_with("3001\n") && out.contains("\n5000\n"),
        "{}",
        &out[..50]
    );
    assert!(out.contains(
        "[Output truncated: showing 2000 of 5000 lines, 10000 of 23893 bytes; 13893 bytes not shown]"
    ));
}

#[tokio::test]
async fn shell_timeout_kills_the_whole_process_group() {
    let (_dir, cx) = setup();
    let started = Instant::now();
    let err = run(
        &cx,
        "shell",
        json!({"command": "echo started; sleep 60 & echo $! > grandchild.pid; sleep 60", "timeout": 1}),
    )
    .await
    .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        err.starts_with("Command timed out after 1s: echo started"),
        "{err}"
    );
    assert!(err.contains("started"), "{err}");
    let pid: u32 = read(&cx, "grandchild.pid").trim().parse().unwrap();
    assert!(wait_dead(pid), "the grandchild {pid} survived the timeout");
}

#[tokio::test]
async fn shell_returns_without_waiting_for_background_processes() {
    let (_dir, cx) = setup();
    let started = Instant::now();
    let out = run(&cx, "shell", json!({"command": "sleep 60 & echo $!"}))
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    let pid: u32 = out.trim().parse().unwrap();
    assert!(
        wait_dead(pid),
        "the background process {pid} was left running"
    );
}

#[tokio::test]
async fn cancelling_the_turn_kills_running_commands() {
    let dir = tempfile::tempdir().unwrap();
    let calls = vec![ToolCall::new(
        "s",
        "shell",
        json!({"command": "sleep 60 & echo $! > grandchild.pid; sleep 60"}),
    )];
    let model =
        ScriptedModel::per_turn([Message::tool_calls("", calls), Message::assistant("done")]);
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: Tools::ALL, root: dir.path() };
        run model;
    };
    let pid_file = dir.path().join("grandchild.pid");
    let turn = agent.start("go");
    // Drop the turn once the command is running.
    // Generous: a shell may take seconds to start under load; only a hang reaches it.
    let waited = tokio::time::timeout(Duration::from_secs(120), async {
        tokio::pin!(turn);
        loop {
            tokio::select! {
                _ = &mut turn => panic!("the turn finished before it was cancelled"),
                _ = tokio::time::sleep(Duration::from_millis(50)) => {
                    if std::fs::read_to_string(&pid_file).is_ok_and(|s| s.ends_with('\n')) {
                        return;
                    }
                }
            }
        }
    })
    .await;
    assert!(waited.is_ok(), "the command never started");
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        wait_dead(pid),
        "the grandchild {pid} survived the cancelled turn"
    );
}

// ---------------------------------------------------------------- todo / question

#[tokio::test]
async fn todos_are_written_and_read_back() {
    let (_dir, cx) = setup();
    // The list is kept by the tool set: one set, one list.
    let tools = Tools::ALL;
    assert_eq!(
        run_in(&tools, &cx, "todo_read", json!({})).await.unwrap(),
        r#"{"todos":[]}"#
    );
    let todos = json!([
        {"id": "1", "content": "write tests", "status": "in_progress"},
        {"id": "2", "content": "ship", "status": "pending"}
    ]);
    let out = run_in(&tools, &cx, "todo_write", json!({"todos": todos}))
        .await
        .unwrap();
    assert_eq!(out, r#"{"count":2,"success":true}"#);
    let back: Value =
        serde_json::from_str(&run_in(&tools, &cx, "todo_read", Value::Null).await.unwrap())
            .unwrap();
    assert_eq!(back["todos"], todos);
    assert_eq!(tools.8.items().len(), 2);
    // Another set has its own list.
    assert_eq!(
        run(&cx, "todo_read", json!({})).await.unwrap(),
        r#"{"todos":[]}"#
    );
    let err = run(
        &cx,
        "todo_write",
        json!({"todos": [{"id": "1", "content": "x", "status": "someday"}]}),
    )
    .await
    .unwrap_err();
    assert!(
        err.contains("todos[0].status") && err.contains("unknown variant `someday`"),
        "{err}"
    );
}

#[tokio::test]
async fn question_needs_a_handler() {
    let (dir, cx) = setup();
    let args = json!({"questions": [{
        "question": "Which language?", "header": "Lang",
        "options": [{"label": "Rust", "description": "fast"}, {"label": "Ruby", "description": "fun"}]
    }]});
    let err = run(&cx, "question", args.clone()).await.unwrap_err();
    assert!(err.contains("not interactive"), "{err}");

    drop(dir);
    // The handler is configured on the tool.
    let question = Question::new(QuestionHandler::new(|questions| async move {
        assert_eq!(questions.questions[0].question, "Which language?");
        Ok(vec![vec![questions.questions[0].options[0].label.clone()]])
    }));
    assert_eq!(
        run_in(&question, &cx, "question", args).await.unwrap(),
        "User answered: \"Lang\" = Rust"
    );
    let err = run_in(&question, &cx, "question", json!({"questions": []}))
        .await
        .unwrap_err();
    assert!(err.contains("`questions` is empty"), "{err}");
    let err = run_in(
        &question,
        &cx,
        "question",
        json!({"questions": [{"question": "q"}]}),
    )
    .await
    .unwrap_err();
    assert!(
        err.contains("questions[0]") && err.contains("missing field `header`"),
        "{err}"
    );
}

#[tokio::test]
async fn questions_of_concurrent_calls_are_asked_one_at_a_time() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let in_flight = Arc::new(AtomicUsize::new(0));
    let max_seen = Arc::new(AtomicUsize::new(0));
    let (now, max) = (in_flight.clone(), max_seen.clone());
    let handler = QuestionHandler::new(move |questions| {
        let (now, max) = (now.clone(), max.clone());
        async move {
            let n = now.fetch_add(1, Ordering::SeqCst) + 1;
            max.fetch_max(n, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(30)).await;
            now.fetch_sub(1, Ordering::SeqCst);
            if questions.questions[0].header == "short" {
                return Ok(vec![]);
            }
            Ok(vec![vec!["yes".to_string()]])
        }
    });
    let ask = |id: &str, header: &str| {
        ToolCall::new(
            id,
            "question",
            json!({"questions": [{
                "question": "ok?", "header": header, "options": [{"label": "yes", "description": "y"}]
            }]}),
        )
    };
    let calls = vec![ask("q1", "A"), ask("q2", "B"), ask("q3", "short")];
    let model =
        ScriptedModel::per_turn([Message::tool_calls("", calls), Message::assistant("done")]);
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline {
            tools: Tools::all_with(Question::new(handler), Delegate::NONE),
            root: dir.path(),
        };
        run model;
    };
    let outcome = agent.start("go").await.unwrap();
    assert_eq!(max_seen.load(Ordering::SeqCst), 1);
    let results: Vec<&str> = outcome.env.messages[2..5]
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(results[0], "User answered: \"A\" = yes");
    assert_eq!(results[1], "User answered: \"B\" = yes");
    assert_eq!(
        results[2],
        "Error: tool `question`: the question handler returned 0 answers for 1 questions"
    );
}

// ---------------------------------------------------------------- delegate

#[tokio::test]
async fn delegate_runs_a_read_only_sub_agent() {
    let (_dir, cx) = setup();
    let err = run(&cx, "delegate", json!({"task": "look around"}))
        .await
        .unwrap_err();
    assert!(err.contains("no model for sub-agents"), "{err}");

    write(&cx, "README.md", "The answer is 42.\n");
    let sub = ScriptedModel::from_fn(|env| {
        let tools: Vec<&str> = env.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            tools,
            ["read", "fs_search"],
            "the sub-agent has read-only tools"
        );
        match env.messages.last().map(|m| m.role) {
            Some(Role::User) => Message::tool_calls(
                "",
                vec![ToolCall::new(
                    "r",
                    "read",
                    json!({"file_path": "README.md"}),
                )],
            ),
            _ => {
                let seen = env
                    .messages
                    .last()
                    .map(|m| m.content.clone())
                    .unwrap_or_default();
                Message::assistant(format!("Report: {seen}"))
            }
        }
    });
    // The model is configured on the tool.
    let delegate = Delegate::new(sub);
    let out = run_in(
        &delegate,
        &cx,
        "delegate",
        json!({"task": "What is the answer?"}),
    )
    .await
    .unwrap();
    assert_eq!(out, "Report: 1\tThe answer is 42.");

    // The sub-agent's own limit stops a model that never answers.
    let stubborn = ScriptedModel::from_fn(|_env| {
        Message::tool_calls(
            "",
            vec![ToolCall::new(
                "r",
                "read",
                json!({"file_path": "README.md"}),
            )],
        )
    });
    let delegate = Delegate::new(stubborn).max_iterations(3);
    let out = run_in(&delegate, &cx, "delegate", json!({"task": "loop"}))
        .await
        .unwrap();
    assert_eq!(out, "(sub-agent completed but produced no text response)");
}

// ---------------------------------------------------------------- fetch

/// A one-thread HTTP server answering every request with `respond(path)`.
fn serve(respond: fn(&str) -> Vec<u8>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head);
            let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
            let _ = stream.write_all(&respond(&path));
        }
    });
    addr
}

fn respond(path: &str) -> Vec<u8> {
    let ok = |body: &[u8], kind: &str| {
        let mut out = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        out.extend_from_slice(body);
        out
    };
    match path {
        "/hello" => ok(b"hello world", "text/plain"),
        "/big" => ok(&vec![b'a'; 3 * 1024 * 1024], "text/plain"),
        "/moved" => b"HTTP/1.1 302 Found\r\nLocation: /hello\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
        "/loop" => b"HTTP/1.1 302 Found\r\nLocation: /loop\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
        _ => b"HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\nConnection: close\r\n\r\nnope".to_vec(),
    }
}

#[tokio::test]
async fn fetch_gets_pages_from_allowed_addresses() {
    let (dir, _) = setup();
    let addr = serve(respond);
    let cx = ToolContext::new(dir.path())
        .unwrap()
        .with_network(NetworkPolicy::allow_private().max_bytes(1000));
    let out = run(&cx, "fetch", json!({"url": format!("http://{addr}/hello")}))
        .await
        .unwrap();
    assert_eq!(out, "Status: 200\nContent-Type: text/plain\n\nhello world");
    let out = run(&cx, "fetch", json!({"url": format!("http://{addr}/moved")}))
        .await
        .unwrap();
    assert!(out.ends_with("hello world"), "{out}");
    let out = run(
        &cx,
        "fetch",
        json!({"url": format!("http://{addr}/missing")}),
    )
    .await
    .unwrap();
    assert!(out.starts_with("Status: 404"), "{out}");
    // Oversized: cut at the cap, with a note.
    let out = run(&cx, "fetch", json!({"url": format!("http://{addr}/big")}))
        .await
        .unwrap();
    assert!(
        out.ends_with("...(truncated: the body is larger than the 1000 byte limit)"),
        "{}",
        &out[out.len() - 80..]
    );
    let body = out
        .split("\n\n")
        .nth(1)
        .unwrap()
        .split("\n...")
        .next()
        .unwrap();
    assert_eq!(body, "a".repeat(1000));
    let err = run(&cx, "fetch", json!({"url": format!("http://{addr}/loop")}))
        .await
        .unwrap_err();
    assert!(err.contains("more than 5 redirects"), "{err}");
}

#[tokio::test]
async fn fetch_refuses_other_schemes_and_private_addresses_by_default() {
    let (dir, _) = setup();
    let addr = serve(respond);
    let cx = ToolContext::new(dir.path()).unwrap();
    let err = run(&cx, "fetch", json!({"url": format!("http://{addr}/hello")}))
        .await
        .unwrap_err();
    assert!(err.contains("127.0.0.1 is a loopback address"), "{err}");
    let err = run(
        &cx,
        "fetch",
        json!({"url": format!("http://localhost:{}/hello", addr.port())}),
    )
    .await
    .unwrap_err();
    assert!(
        err.contains("resolves only to special-purpose addresses")
            && err.contains("loopback address"),
        "{err}"
    );
    let err = run(
        &cx,
        "fetch",
        json!({"url": "http://169.254.169.254/latest/meta-data"}),
    )
    .await
    .unwrap_err();
    assert!(err.contains("169.254.169.254 is a link-local"), "{err}");
    // The IPv6 forms of the metadata address and of loopback.
    for (url, range) in [
        (
            "http://[64:ff9b::a9fe:a9fe]/latest/meta-data",
            "link-local (NAT64)",
        ),
        ("http://[::127.0.0.1]/", "IPv4-compatible (deprecated)"),
        ("http://[2002:7f00:1::]/", "loopback (6to4)"),
        (
            "http://[::ffff:169.254.169.254]/",
            "link-local (IPv4-mapped)",
        ),
    ] {
        let err = run(&cx, "fetch", json!({ "url": url })).await.unwrap_err();
        assert!(err.contains(range), "{url}: {err}");
    }
    let err = run(&cx, "fetch", json!({"url": "file:///etc/passwd"}))
        .await
        .unwrap_err();
    assert!(err.contains("only http and https"), "{err}");
    let err = run(&cx, "fetch", json!({"url": "not a url"}))
        .await
        .unwrap_err();
    assert!(err.contains("`url` is not a valid URL"), "{err}");
}

#[tokio::test]
async fn a_failed_call_that_took_no_snapshot_leaves_the_earlier_ones() {
    let (_dir, cx) = setup();
    run(
        &cx,
        "write",
        json!({"file_path": "a.txt", "content": "one\n"}),
    )
    .await
    .unwrap();
    let path = root(&cx).join("a.txt");
    assert_eq!(cx.snapshots().depth(&path), 1);
    // `read` takes no snapshot; its failure must not drop the one `write` took.
    let err = run(&cx, "read", json!({"file_path": "a.txt", "start_line": 5}))
        .await
        .unwrap_err();
    assert!(err.contains("past the end"), "{err}");
    assert_eq!(cx.snapshots().depth(&path), 1);
    assert_eq!(
        run(&cx, "undo", json!({"path": "a.txt"})).await.unwrap(),
        "Deleted a.txt (it did not exist before)"
    );
}

#[test]
fn a_call_env_shows_its_call_and_stage_in_debug() {
    let (_dir, cx) = setup();
    let tools = Tools::ALL;
    let env = ToolCallEnv::new(
        ToolCall::new("c7", "read", json!({"file_path": "a.txt"})),
        &tools,
        &cx,
    );
    let shown = format!("{env:?}");
    assert!(
        shown.starts_with("ToolCallEnv {") && shown.contains("c7") && shown.contains("read"),
        "{shown}"
    );
    assert!(shown.contains("prepared: false"), "{shown}");
}
