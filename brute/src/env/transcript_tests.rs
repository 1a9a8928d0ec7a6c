//! The unit tests of `Transcript`: what each change records, and what a store is told.
use super::*;

fn appended(changes: Changes<'_>) -> Vec<&str> {
    match changes {
        Changes::Appended(new) => new.iter().map(|m| m.content.as_str()).collect(),
        other => panic!("expected an append, got {other:?}"),
    }
}

fn rewritten(changes: Changes<'_>) -> (usize, Vec<&str>) {
    match changes {
        Changes::Rewritten { from, messages } => {
            let record = messages.iter().filter(|m| m.role != Role::System);
            (from, record.map(|m| m.content.as_str()).collect())
        }
        other => panic!("expected a rewrite, got {other:?}"),
    }
}

#[test]
fn a_rewrite_starts_at_the_lowest_position_touched_since_the_mark() {
    let mut t: Transcript = [
        ("s", Role::System),
        ("a", Role::User),
        ("b", Role::Assistant),
    ]
    .into_iter()
    .chain([("c", Role::User), ("d", Role::Assistant)])
    .map(|(text, role)| Message::new(role, text))
    .collect();
    let mark = t.mark();
    if let Some(last) = t.last_mut() {
        last.content.push('!');
    }
    t.push(Message::user("e"));
    // The edit of `d` (position 3) and the push after it: both from position 3,
    // and the system message in front is no position.
    assert_eq!(rewritten(t.changes_since(mark)), (3, vec!["d!", "e"]));
    t.truncate(t.len() - 3);
    // `e`, `d!` and `c` cut off: the record is unchanged before 2.
    assert_eq!(rewritten(t.changes_since(mark)), (2, vec![]));
    // A later mark sees only what came after it.
    let mark = t.mark();
    t.push(Message::user("f"));
    assert_eq!(appended(t.changes_since(mark)), ["f"]);
}

#[test]
fn a_fresh_mark_sees_nothing() {
    let t = Transcript::from(vec![Message::user("a")]);
    assert_eq!(t.changes_since(t.mark()), Changes::None);
}

#[test]
fn pushes_are_appends() {
    let mut t = Transcript::from(vec![Message::user("a")]);
    let mark = t.mark();
    t.push(Message::assistant("b"));
    t.push(Message::user("c"));
    assert_eq!(appended(t.changes_since(mark)), ["b", "c"]);
}

#[test]
fn a_system_message_inserted_in_front_is_not_a_change() {
    let mut t = Transcript::from(vec![Message::user("a"), Message::assistant("b")]);
    let mark = t.mark();
    t.insert(0, Message::system("s"));
    assert_eq!(t.changes_since(mark), Changes::None);
    t.push(Message::user("c"));
    assert_eq!(appended(t.changes_since(mark)), ["c"]);
}

#[test]
fn an_insert_before_the_end_of_the_record_is_a_rewrite() {
    let mut t = Transcript::from(vec![Message::user("a"), Message::assistant("b")]);
    let mark = t.mark();
    t.insert(1, Message::user("x"));
    assert_eq!(rewritten(t.changes_since(mark)), (1, vec!["x", "b"]));
}

#[test]
fn mark_at_covers_a_loaded_prefix() {
    // A store loaded two messages; the prompt came after them.
    let mut t = Transcript::from(vec![Message::user("prompt")]);
    t.insert(0, Message::user("old-1"));
    t.insert(1, Message::assistant("old-2"));
    let mark = t.mark_at(2);
    assert_eq!(appended(t.changes_since(mark)), ["prompt"]);
}

#[test]
fn editing_a_saved_message_is_a_rewrite_but_editing_a_new_one_is_not() {
    let mut t = Transcript::from(vec![Message::user("a")]);
    let mark = t.mark();
    t.push(Message::assistant("b"));
    if let Some(last) = t.last_mut() {
        last.content.push('!');
    }
    assert_eq!(appended(t.changes_since(mark)), ["b!"]);
    let mark = t.mark();
    if let Some(last) = t.last_mut() {
        last.content.push('!');
    }
    assert_eq!(rewritten(t.changes_since(mark)), (1, vec!["b!!"]));
}

#[test]
fn truncation_of_saved_messages_is_a_rewrite() {
    let mut t = Transcript::from(vec![Message::user("a"), Message::assistant("b")]);
    let mark = t.mark();
    t.truncate(1);
    assert_eq!(rewritten(t.changes_since(mark)), (1, vec![]));
    // Truncating what a mark never saw is not.
    let mark = t.mark();
    t.push(Message::assistant("c"));
    t.truncate(1);
    assert_eq!(t.changes_since(mark), Changes::None);
}

#[test]
fn a_mark_of_another_transcript_sees_a_rewrite() {
    let old = Transcript::from(vec![Message::user("a")]);
    let mark = old.mark();
    let new = Transcript::from(vec![Message::user("a"), Message::assistant("b")]);
    assert_eq!(rewritten(new.changes_since(mark)), (0, vec!["a", "b"]));
    assert_eq!(rewritten(old.clone().changes_since(mark)), (0, vec!["a"]));
}

#[test]
fn an_edit_is_a_rewrite_for_every_earlier_mark() {
    let mut t = Transcript::from(vec![Message::user("a")]);
    let early = t.mark();
    t.push(Message::assistant("b"));
    let late = t.mark();
    t.replace(vec![Message::user("summary")]);
    assert_eq!(rewritten(t.changes_since(early)), (0, vec!["summary"]));
    assert_eq!(rewritten(t.changes_since(late)), (0, vec!["summary"]));
    assert_eq!(t.changes_since(t.mark()), Changes::None);
}
