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
