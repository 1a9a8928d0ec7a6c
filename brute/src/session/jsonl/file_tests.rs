//! The unit tests of `file.rs`: limits, line positions, rewrites and cuts.
#![allow(clippy::unwrap_used)] // a test fails at the first step that does

use super::*;

fn line(message: &Message) -> String {
    serde_json::to_string(message).unwrap()
}

#[test]
fn a_line_of_exactly_the_limit_is_read_and_one_byte_more_is_refused() {
    let text = line(&Message::user("x"));
    let n = text.len() as u64;
    let bytes = format!("{text}\n").into_bytes();
    let at = Limits {
        line: n,
        file: 1 << 20,
    };
    let parsed = SessionFile::parse(Path::new("s.jsonl"), bytes.clone(), at).unwrap();
    assert_eq!(parsed.messages, [Message::user("x")]);
    let under = Limits { line: n - 1, ..at };
    let refused = SessionFile::parse(Path::new("s.jsonl"), bytes, under).err();
    assert!(
        matches!(refused, Some(SessionError::TooLarge { line: Some(1), size, limit, .. }) if size == n && limit == n - 1),
        "{refused:?}"
    );
}

#[test]
fn each_stored_message_starts_where_its_line_does() {
    // A byte order mark, a system line (not a stored message), a blank line, and
    // two messages, the last without its newline.
    let (system, one, two) = (
        line(&Message::system("s")),
        line(&Message::user("one")),
        line(&Message::assistant("two")),
    );
    let text = format!("\u{feff}{system}\n\n{one}\n{two}");
    let parsed =
        SessionFile::parse(Path::new("s.jsonl"), text.into_bytes(), Limits::DEFAULT).unwrap();
    let first = 3 + system.len() as u64 + 2;
    assert_eq!(parsed.starts, [first, first + one.len() as u64 + 1]);
    assert_eq!(parsed.messages.len(), 3);
    assert!(parsed.needs_newline);
}

#[test]
fn a_file_of_exactly_the_limit_is_read_and_one_byte_more_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    // The last line without its newline: a file read one byte short fails to parse.
    let (x, y) = (Message::user("x"), Message::assistant("y"));
    let text = format!("{}\n{}", line(&x), line(&y));
    std::fs::write(&path, &text).unwrap();
    let n = text.len() as u64;
    let at = Limits { line: n, file: n };
    assert_eq!(SessionFile::read_limited(&path, at).unwrap(), [x, y]);
    let under = Limits { file: n - 1, ..at };
    let refused = SessionFile::read_limited(&path, under).err();
    assert!(
        matches!(refused, Some(SessionError::TooLarge { line: None, size, .. }) if size == n),
        "{refused:?}"
    );
}

#[test]
fn rewrites_cuts_and_appends_chain_and_a_position_past_the_end_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let m = |text: &str| Message::user(text);
    let (mut file, _) = SessionFile::open(&path).unwrap();
    file.append(&[m("a"), m("b"), m("c")]).unwrap();
    let bytes = file.serialize(&[m("B")]).unwrap();
    file.rewrite_from(1, bytes).unwrap();
    // Positions after a rewrite from a position and an append are where they are.
    file.append(&[m("C")]).unwrap();
    let bytes = file.serialize(&[m("D")]).unwrap();
    file.rewrite_from(2, bytes).unwrap();
    assert_eq!(SessionFile::read(&path).unwrap(), [m("a"), m("B"), m("D")]);
    let bytes = file.serialize(&[m("x")]).unwrap();
    let refused = file.rewrite_from(9, bytes).err();
    assert!(
        refused
            .as_ref()
            .is_some_and(|e| e.to_string().contains("position 9 is past the 3 stored")),
        "{refused:?}"
    );
    // Cutting the last two lines, then appending: the positions follow the cut.
    file.cut_last(2).unwrap();
    assert_eq!(SessionFile::read(&path).unwrap(), [m("a")]);
    file.append(&[m("E")]).unwrap();
    let bytes = file.serialize(&[m("F")]).unwrap();
    file.rewrite_from(2, bytes).unwrap();
    assert_eq!(SessionFile::read(&path).unwrap(), [m("a"), m("E"), m("F")]);
}

/// Set in a child process of the tests below: the session file it works on.
const CHILD: &str = "BRUTE_TEST_CHILD_SESSION";

/// Runs test `test` of this module again, alone, in a child process whose shell first
/// runs `limit` (a `ulimit`), on the session file `path`; fails with the child's
/// output unless its test passed.
fn in_child(test: &str, limit: &str, path: &Path) {
    let name = module_path!().trim_start_matches("brute::");
    let child = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{limit} && exec \"$0\" \"$@\""))
        .arg(std::env::current_exe().unwrap())
        .args([&format!("{name}::{test}"), "--exact", "--test-threads=1"])
        .env(CHILD, path)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&child.stdout);
    let err = String::from_utf8_lossy(&child.stderr);
    assert!(child.status.success(), "{out}{err}");
    assert!(out.contains("1 passed"), "the child ran no test: {out}");
}

#[test]
fn a_rewrite_that_failed_after_its_cut_began_refuses_appends_until_it_is_finished() {
    let m = |text: &str| Message::user(text);
    if let Some(path) = std::env::var_os(CHILD) {
        // The child, which cannot write past 64 KB or less (`ulimit -f 64`, in blocks
        // of 512 or 1024 bytes by shell): the redo record (a short tail) is written,
        // the tail at the end of a 100 KB session is not.
        let (mut file, stored) = SessionFile::open(Path::new(&path)).unwrap();
        let bytes = file.serialize(&[m("new")]).unwrap();
        let failed = file.rewrite_from(stored.len() - 1, bytes);
        assert!(
            failed.is_err(),
            "the rewrite did not fail: is the file size limit set?"
        );
        let refused = file.append(&[m("after")]);
        assert!(
            refused.as_ref().is_err_and(|e| e
                .to_string()
                .contains("a rewrite of the file did not finish")),
            "{refused:?}"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let (mut file, _) = SessionFile::open(&path).unwrap();
    let filler = "x".repeat(100);
    let messages: Vec<Message> = (0..1000).map(|i| m(&format!("{i} {filler}"))).collect();
    file.append(&messages).unwrap();
    drop(file);
    in_child(
        "a_rewrite_that_failed_after_its_cut_began_refuses_appends_until_it_is_finished",
        "ulimit -f 64 && trap '' XFSZ",
        &path,
    );
    // Opened again (without the limit), the rewrite is finished from its record, and
    // the refused append is nowhere.
    let (_, stored) = SessionFile::open(&path).unwrap();
    assert_eq!(stored.len(), 1000);
    assert_eq!(stored.last(), Some(&m("new")));
}

#[test]
fn a_session_file_that_cannot_be_opened_is_an_error_not_an_empty_session() {
    if let Some(path) = std::env::var_os(CHILD) {
        // The child, with at most 64 files open (`ulimit -n 64`), opens files until it
        // can open no more: an error that, unlike a permission (which root passes), the
        // suite can cause on a regular file.
        let mut open = Vec::new();
        while let Ok(file) = File::open("/dev/null") {
            open.push(file);
        }
        let refused = SessionFile::read_limited(Path::new(&path), Limits::DEFAULT);
        drop(open);
        assert!(
            refused
                .as_ref()
                .is_err_and(|e| e.to_string().contains("read the file")),
            "{refused:?}"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, format!("{}\n", line(&Message::user("x")))).unwrap();
    in_child(
        "a_session_file_that_cannot_be_opened_is_an_error_not_an_empty_session",
        "ulimit -n 64",
        &path,
    );
}
