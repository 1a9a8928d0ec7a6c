//! Valid histories only: the tool-call rules providers enforce, checked when a session
//! is loaded, and repaired (with a warning naming each repair) or refused.
//!
//! The rules: every tool result answers a call of the assistant message right before
//! its block of results; a call id is not empty and is used once in the whole history;
//! a call has one result; every call has a result. Only assistant messages carry tool
//! calls, a `system` message comes only before the conversation, and only a result in
//! the last block of results can wait for approval (see [`shape`]). A crash between a
//! call and its result breaks the pairing, so a missing result is always repaired (with
//! [`INTERRUPTED_TOOL_CALL`]); the others are repaired or refused as [`Validation`]
//! says. A repair keeps what it dropped: [`warn_repaired`] logs each dropped message as
//! its JSON line.

pub(in crate::session) mod history_error;

use std::collections::{HashMap, HashSet};
use std::fmt;

use crate::message::{Message, Role};

mod shape;

/// The content of the synthetic result given to a tool call that has none.
pub const INTERRUPTED_TOOL_CALL: &str = "error: this tool call was interrupted before it returned a result (the session was restored after the agent stopped); its effect is unknown, check before retrying";

/// What loading does with a history that breaks the tool-call rules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Validation {
    /// Repair it and log a warning naming each repair (the default): orphan and
    /// duplicate results are dropped, duplicate call ids renamed, missing results
    /// given [`INTERRUPTED_TOOL_CALL`]; the repair is written back.
    #[default]
    Repair,
    /// Refuse it with [`SessionError::Invalid`](crate::session::SessionError::Invalid) naming the
    /// session and the message, leaving it untouched. A call without a result (what a
    /// crash leaves) is still repaired.
    Refuse,
}

/// One thing wrong with a history. Messages are numbered from 1, in the history as
/// loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Problem {
    /// A tool result that answers no call of the assistant message before it.
    OrphanResult {
        /// The result's message.
        message: usize,
        /// Its call id, if it has one.
        id: Option<String>,
    },
    /// A call id used twice in one assistant message.
    DuplicateCallId {
        /// The assistant message.
        message: usize,
        /// The id.
        id: String,
    },
    /// A second result for one call.
    DuplicateResult {
        /// The second result's message.
        message: usize,
        /// The call id.
        id: String,
    },
    /// A call without a result (a crash between the call and its result).
    MissingResult {
        /// The assistant message.
        message: usize,
        /// The call id.
        id: String,
    },
    /// A call id an earlier assistant message already used: providers such as
    /// Anthropic refuse a conversation that repeats a `tool_use` id. Repaired by
    /// renaming the later call and its result.
    ReusedCallId {
        /// The later assistant message.
        message: usize,
        /// The id.
        id: String,
        /// The earlier message that used it.
        first: usize,
    },
    /// A tool call with an empty id. Repaired by giving it one (and its result, when
    /// that has the empty id too).
    EmptyCallId {
        /// The assistant message.
        message: usize,
    },
    /// A `system` message after the conversation started (providers take the system
    /// prompt before the conversation only). Repaired by dropping it.
    SystemInConversation {
        /// The system message.
        message: usize,
    },
    /// Tool calls on a message that is not the assistant's (a `user`, `tool` or
    /// `system` message): no result can answer them. Repaired by dropping the calls.
    CallsOnWrongRole {
        /// The message.
        message: usize,
        /// Its role.
        role: Role,
    },
    /// An `awaiting_approval` marker where no pause leaves one: on a message that is
    /// not a tool result, or on a result before the last block of results (a forged
    /// marker would run the call when someone approves it). Repaired by clearing the
    /// marker; a result then says the call was not run.
    StrayApproval {
        /// The marked message.
        message: usize,
    },
}

impl Problem {
    /// The message concerned, 1 for the first.
    pub fn message(&self) -> usize {
        match self {
            Problem::OrphanResult { message, .. }
            | Problem::DuplicateCallId { message, .. }
            | Problem::DuplicateResult { message, .. }
            | Problem::MissingResult { message, .. }
            | Problem::ReusedCallId { message, .. }
            | Problem::EmptyCallId { message }
            | Problem::SystemInConversation { message }
            | Problem::CallsOnWrongRole { message, .. }
            | Problem::StrayApproval { message } => *message,
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::OrphanResult { id: Some(id), .. } => {
                write!(f, "tool result for call {id:?} answers no call before it")
            }
            Problem::OrphanResult { id: None, .. } => {
                write!(f, "tool result without a call id")
            }
            Problem::DuplicateCallId { id, .. } => {
                write!(f, "call id {id:?} is used twice in one message")
            }
            Problem::DuplicateResult { id, .. } => {
                write!(f, "a second result for call {id:?}")
            }
            Problem::MissingResult { id, .. } => write!(f, "call {id:?} has no result"),
            Problem::ReusedCallId { id, first, .. } => {
                write!(f, "call id {id:?} was already used by message {first}")
            }
            Problem::EmptyCallId { .. } => write!(f, "a tool call has an empty id"),
            Problem::SystemInConversation { .. } => {
                write!(f, "a system message after the conversation started")
            }
            Problem::CallsOnWrongRole { role, .. } => {
                write!(
                    f,
                    "a {role} message carries tool calls; only assistant messages may"
                )
            }
            Problem::StrayApproval { .. } => write!(
                f,
                "an awaiting_approval marker outside the last block of tool results"
            ),
        }
    }
}

/// What is wrong with `messages` by the tool-call rules (empty when nothing is): the
/// check `SessionLog` runs on every history it loads, for your own tools.
///
/// ```
/// use brute::session::{check_history, Problem};
/// use brute::Message;
///
/// let orphan = [Message::user("hi"), Message::tool_result("c1", "42")];
/// assert_eq!(
///     check_history(&orphan),
///     [Problem::OrphanResult { message: 2, id: Some("c1".into()) }]
/// );
/// ```
pub fn check_history(messages: &[Message]) -> Vec<Problem> {
    if !needs_repair(messages) {
        return Vec::new();
    }
    scan(messages)
}

/// What [`repair`] did.
#[derive(Debug, Default)]
pub(crate) struct Repaired {
    /// Everything found, in order.
    pub(crate) problems: Vec<Problem>,
    /// How many synthetic results were added at the very end (when that is the only
    /// change, the store appends them).
    pub(crate) appended: usize,
    /// Something before the end changed: the store replaces the history.
    pub(crate) rewritten: bool,
    /// What the repair dropped, as it was loaded: whole messages (orphan and
    /// duplicate results, misplaced system messages) and messages whose tool calls
    /// were dropped. [`warn_repaired`] logs them, so nothing is lost without a trace.
    pub(crate) dropped: Vec<Message>,
}

/// Checks `messages` and repairs them in place. With [`Validation::Refuse`], the first
/// problem other than a missing result is returned as an error and `messages` is
/// left as it was.
pub(crate) fn repair(messages: &mut Vec<Message>, mode: Validation) -> Result<Repaired, Problem> {
    if !needs_repair(messages) {
        return Ok(Repaired::default());
    }
    if mode == Validation::Refuse
        && let Some(problem) = scan(messages)
            .into_iter()
            .find(|p| !matches!(p, Problem::MissingResult { .. }))
    {
        return Err(problem);
    }
    let original = std::mem::take(messages);
    let total = original.len();
    let mut report = Repaired::default();
    let shaped = shape::repair(original, &mut report);
    let mut out = Vec::with_capacity(total + 4);
    // Every id of the calls kept so far, with the message (from 1) that used it first.
    let mut used: HashMap<String, usize> = HashMap::new();
    let mut input = shaped.into_iter().peekable();
    while let Some((i, mut message)) = input.next() {
        if message.role == Role::Tool {
            report.problems.push(Problem::OrphanResult {
                message: i + 1,
                id: message.tool_call_id.clone(),
            });
            report.rewritten = true;
            report.dropped.push(message);
            continue;
        }
        if !message.has_tool_calls() {
            out.push(message);
            continue;
        }
        // Ids unique in the history: an empty id, a duplicate in the message, or an
        // id an earlier message used gets a fresh one with a suffix.
        let mut seen = HashSet::new();
        let mut original_ids = Vec::with_capacity(message.tool_calls.len());
        for call in &mut message.tool_calls {
            original_ids.push(call.id.clone());
            let problem = if call.id.is_empty() {
                Some(Problem::EmptyCallId { message: i + 1 })
            } else if seen.contains(&call.id) {
                Some(Problem::DuplicateCallId {
                    message: i + 1,
                    id: call.id.clone(),
                })
            } else {
                used.get(&call.id).map(|&first| Problem::ReusedCallId {
                    message: i + 1,
                    id: call.id.clone(),
                    first,
                })
            };
            if let Some(problem) = problem {
                report.problems.push(problem);
                let base = if call.id.is_empty() {
                    "call"
                } else {
                    call.id.as_str()
                };
                let mut n = 2;
                let fresh = loop {
                    let candidate = format!("{base}~{n}");
                    if !seen.contains(&candidate) && !used.contains_key(&candidate) {
                        break candidate;
                    }
                    n += 1;
                };
                call.id = fresh;
                report.rewritten = true;
            }
            seen.insert(call.id.clone());
        }
        for id in &seen {
            used.entry(id.clone()).or_insert(i + 1);
        }
        let mut answered = vec![false; message.tool_calls.len()];
        let ids: Vec<String> = message.tool_calls.iter().map(|c| c.id.clone()).collect();
        out.push(message);
        // Its block of results: each answers the first unanswered call with its id.
        while let Some((j, mut result)) = input.next_if(|(_, m)| m.role == Role::Tool) {
            let wanted = result.tool_call_id.clone();
            let slot = wanted
                .as_deref()
                .and_then(|id| (0..ids.len()).find(|&k| !answered[k] && original_ids[k] == id));
            match (slot, wanted) {
                (Some(k), _) => {
                    answered[k] = true;
                    if result.tool_call_id.as_deref() != Some(ids[k].as_str()) {
                        result.tool_call_id = Some(ids[k].clone());
                    }
                    out.push(result);
                }
                (None, Some(id)) if original_ids.contains(&id) => {
                    report
                        .problems
                        .push(Problem::DuplicateResult { message: j + 1, id });
                    report.rewritten = true;
                    report.dropped.push(result);
                }
                (None, id) => {
                    report
                        .problems
                        .push(Problem::OrphanResult { message: j + 1, id });
                    report.rewritten = true;
                    report.dropped.push(result);
                }
            }
        }
        let at_end = input.peek().is_none();
        for (k, id) in ids.iter().enumerate().filter(|(k, _)| !answered[*k]) {
            report.problems.push(Problem::MissingResult {
                message: i + 1,
                id: original_ids[k].clone(),
            });
            out.push(Message::tool_result(id.clone(), INTERRUPTED_TOOL_CALL));
            if at_end {
                report.appended += 1;
            } else {
                report.rewritten = true;
            }
        }
    }
    if report.rewritten {
        report.appended = 0;
    }
    *messages = out;
    Ok(report)
}

/// The problems of `messages`, without changing them.
pub(crate) fn scan(messages: &[Message]) -> Vec<Problem> {
    let mut copy = messages.to_vec();
    repair(&mut copy, Validation::Repair)
        .map(|r| r.problems)
        .unwrap_or_default()
}

/// A quick pass: whether anything breaks the rules (the common case is no).
fn needs_repair(messages: &[Message]) -> bool {
    if shape::needs_repair(messages) {
        return true;
    }
    // Call ids are unique in the whole history.
    let mut ids = HashSet::new();
    if !messages
        .iter()
        .flat_map(|m| &m.tool_calls)
        .all(|call| ids.insert(call.id.as_str()))
    {
        return true;
    }
    let mut i = 0;
    while i < messages.len() {
        let message = &messages[i];
        if message.role == Role::Tool {
            return true;
        }
        i += 1;
        if !message.has_tool_calls() {
            continue;
        }
        let calls = &message.tool_calls;
        let mut results = 0;
        while i < messages.len() && messages[i].role == Role::Tool {
            results += 1;
            i += 1;
        }
        if results != calls.len() {
            return true;
        }
        let block = &messages[i - results..i];
        // (A repeated id within the message was caught by the history-wide check.)
        for call in calls {
            let answers = block
                .iter()
                .filter(|m| m.tool_call_id.as_deref() == Some(call.id.as_str()))
                .count();
            if answers != 1 {
                return true;
            }
        }
    }
    false
}

/// Logs the repairs of session `name`, naming each one, with what was dropped as its
/// JSON lines (field `brute.session.dropped`), so a repair loses nothing without a
/// trace.
pub(crate) fn warn_repaired(name: &str, report: &Repaired) {
    let what: Vec<String> = report
        .problems
        .iter()
        .map(|p| format!("message {}: {p}", p.message()))
        .collect();
    let dropped: Vec<String> = report
        .dropped
        .iter()
        .filter_map(|m| serde_json::to_string(m).ok())
        .collect();
    tracing::warn!(
        brute.session.path = %name,
        brute.session.repaired = report.problems.len(),
        brute.session.dropped = %dropped.join("\n"),
        "session {name} was repaired (dropped results without a call, duplicate results, misplaced system messages and tool calls on other roles; renamed empty and repeated call ids; cleared stray approval markers; gave calls without a result an error result): {}; {} message(s) dropped, logged in brute.session.dropped",
        what.join("; "),
        dropped.len()
    );
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::message::ToolCall;

    fn calls(ids: &[&str]) -> Message {
        Message::tool_calls(
            "",
            ids.iter()
                .map(|id| ToolCall::new(*id, "echo", serde_json::json!({})))
                .collect(),
        )
    }

    #[test]
    fn a_valid_history_is_left_alone() {
        let mut m = vec![
            Message::user("go"),
            calls(&["a", "b"]),
            Message::tool_result("b", "2"),
            Message::tool_result("a", "1"),
            Message::assistant("done"),
        ];
        let before = m.clone();
        let r = repair(&mut m, Validation::Refuse).unwrap();
        assert!(r.problems.is_empty() && !r.rewritten && r.appended == 0);
        assert_eq!(m, before);
    }

    #[test]
    fn missing_results_at_the_end_are_appended() {
        let mut m = vec![
            Message::user("go"),
            calls(&["a", "b"]),
            Message::tool_result("a", "1"),
        ];
        let r = repair(&mut m, Validation::Refuse).unwrap();
        assert_eq!(r.appended, 1);
        assert!(!r.rewritten);
        assert_eq!(m[3], Message::tool_result("b", INTERRUPTED_TOOL_CALL));
    }

    #[test]
    fn orphans_duplicates_and_reused_ids_are_repaired() {
        let mut m = vec![
            Message::tool_result("x", "orphan at the start"),
            Message::user("go"),
            calls(&["a", "a"]),
            Message::tool_result("a", "first"),
            Message::tool_result("a", "second"),
            Message::tool_result("a", "third"),
            Message::tool_result("zz", "unknown"),
            Message::assistant("done"),
        ];
        let r = repair(&mut m, Validation::Repair).unwrap();
        assert!(r.rewritten);
        assert_eq!(
            r.problems,
            [
                Problem::OrphanResult {
                    message: 1,
                    id: Some("x".into())
                },
                Problem::DuplicateCallId {
                    message: 3,
                    id: "a".into()
                },
                Problem::DuplicateResult {
                    message: 6,
                    id: "a".into()
                },
                Problem::OrphanResult {
                    message: 7,
                    id: Some("zz".into())
                },
            ]
        );
        assert_eq!(m.len(), 5);
        assert_eq!(m[1].tool_calls[1].id, "a~2");
        assert_eq!(m[2], Message::tool_result("a", "first"));
        assert_eq!(m[3], Message::tool_result("a~2", "second"));
        assert!(scan(&m).is_empty());
    }

    #[test]
    fn refusing_names_the_first_problem_and_leaves_the_history() {
        let mut m = vec![Message::user("go"), Message::tool_result("x", "?")];
        let before = m.clone();
        let problem = repair(&mut m, Validation::Refuse).unwrap_err();
        assert_eq!(
            problem,
            Problem::OrphanResult {
                message: 2,
                id: Some("x".into())
            }
        );
        assert_eq!(
            problem.to_string(),
            "tool result for call \"x\" answers no call before it"
        );
        assert_eq!(m, before);
    }

    #[test]
    fn a_result_without_an_id_is_an_orphan() {
        let mut result = Message::tool_result("a", "1");
        result.tool_call_id = None;
        let mut m = vec![Message::user("go"), calls(&["a"]), result];
        let r = repair(&mut m, Validation::Repair).unwrap();
        assert_eq!(
            r.problems,
            [
                Problem::OrphanResult {
                    message: 3,
                    id: None
                },
                Problem::MissingResult {
                    message: 2,
                    id: "a".into()
                },
            ]
        );
        assert_eq!(m[2], Message::tool_result("a", INTERRUPTED_TOOL_CALL));
    }

    #[test]
    fn the_quick_pass_finds_nothing_in_valid_histories() {
        // Its promise is the cost: a valid history (the common case) is never scanned.
        let histories = [
            vec![Message::user("hi"), Message::assistant("hello")],
            vec![
                Message::user("go"),
                calls(&["a", "b"]),
                Message::tool_result("b", "2"),
                Message::tool_result("a", "1"),
                Message::assistant("done"),
                Message::user("again"),
                calls(&["c"]),
                Message::tool_result("c", "3"),
            ],
        ];
        for history in &histories {
            assert!(!needs_repair(history), "{history:?}");
            assert!(check_history(history).is_empty());
        }
    }

    #[test]
    fn a_fresh_id_is_one_no_message_uses() {
        // "a" is reused by the third reply, and "a~2" is taken by the second: the
        // fresh id is "a~3".
        let mut m = vec![
            Message::user("go"),
            calls(&["a"]),
            Message::tool_result("a", "1"),
            calls(&["a~2"]),
            Message::tool_result("a~2", "2"),
            calls(&["a"]),
            Message::tool_result("a", "3"),
        ];
        let r = repair(&mut m, Validation::Repair).unwrap();
        assert_eq!(
            r.problems,
            [Problem::ReusedCallId {
                message: 6,
                id: "a".into(),
                first: 2
            }]
        );
        assert_eq!(m[5].tool_calls[0].id, "a~3");
        assert_eq!(m[6].tool_call_id.as_deref(), Some("a~3"));
    }
}
