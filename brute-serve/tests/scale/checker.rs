//! The checker: reads every session back through brute's PostgreSQL store and every
//! server's ledger, and lists each violation of what a user relies on.

use std::collections::HashMap;
use std::path::Path;

use brute::session::{PostgresStore, SessionStore, check_history};
use brute::{Message, Role};

use super::workload::{Outcome, Record};

/// What the run promises, by name (a violation names one).
pub const LOST: &str = "acknowledged message lost";
pub const DUPLICATED: &str = "message duplicated";
pub const TWICE: &str = "tool call executed twice";
pub const APPROVAL: &str = "approval not pending nor decided exactly once";
pub const INVALID: &str = "session does not load or validate";
pub const PHANTOM: &str = "tool result without its execution";
pub const UNANSWERED: &str = "request without an answer (refused, or failed on every retry)";

/// Every tool execution in the ledgers: call id to the servers that ran it.
pub fn ledgers(dir: &Path) -> HashMap<String, Vec<String>> {
    let mut runs: HashMap<String, Vec<String>> = HashMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let is_ledger = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("ledger-"));
        if !is_ledger {
            continue;
        }
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            if let Some((server, key)) = line.split_once(' ') {
                runs.entry(key.to_owned())
                    .or_default()
                    .push(server.to_owned());
            }
        }
    }
    runs
}

/// The violations in the sessions of `records` and in the ledgers of `dir`, each as
/// `PROPERTY: what`.
pub async fn check(store: &PostgresStore, records: &[Record], dir: &Path) -> Vec<String> {
    let mut violations = Vec::new();
    let runs = ledgers(dir);
    for (key, servers) in &runs {
        if servers.len() > 1 {
            violations.push(format!("{TWICE}: {key} ran on {servers:?}"));
        }
    }
    let mut by_session: HashMap<&str, Vec<&Record>> = HashMap::new();
    for record in records {
        by_session.entry(&record.session).or_default().push(record);
        if let Outcome::Refused(why) | Outcome::Failed(why) = &record.outcome {
            violations.push(format!(
                "{UNANSWERED}: {} {}: {why}",
                record.kind, record.prompt
            ));
        }
    }
    let mut seen_calls: HashMap<String, usize> = HashMap::new();
    for (session, records) in by_session {
        let messages = match store.load(session).await {
            Ok(messages) => messages,
            Err(e) => {
                violations.push(format!("{INVALID}: {session}: {e}"));
                continue;
            }
        };
        for problem in check_history(&messages) {
            violations.push(format!("{INVALID}: {session}: {problem}"));
        }
        check_session(session, &messages, &records, &runs, &mut violations);
        for m in &messages {
            for call in &m.tool_calls {
                *seen_calls.entry(call.id.clone()).or_default() += 1;
            }
        }
    }
    for key in runs.keys() {
        if !seen_calls.contains_key(key) {
            violations.push(format!(
                "{PHANTOM}: {key} ran but no session holds its call"
            ));
        }
    }
    violations
}

/// The checks within one session.
fn check_session(
    session: &str,
    messages: &[Message],
    records: &[&Record],
    runs: &HashMap<String, Vec<String>>,
    violations: &mut Vec<String>,
) {
    let mut texts: HashMap<&str, usize> = HashMap::new();
    let mut calls: HashMap<&str, usize> = HashMap::new();
    let mut results: HashMap<&str, Vec<&Message>> = HashMap::new();
    for m in messages {
        match m.role {
            Role::User | Role::Assistant if !m.content.is_empty() => {
                *texts.entry(m.content.as_str()).or_default() += 1;
            }
            _ => {}
        }
        for call in &m.tool_calls {
            *calls.entry(call.id.as_str()).or_default() += 1;
        }
        if let Some(id) = &m.tool_call_id {
            results.entry(id.as_str()).or_default().push(m);
        }
    }
    for (text, n) in &texts {
        if *n > 1 {
            violations.push(format!(
                "{DUPLICATED}: {session}: {text:?} stored {n} times"
            ));
        }
    }
    for (id, n) in &calls {
        if *n > 1 {
            violations.push(format!(
                "{DUPLICATED}: {session}: call {id} stored {n} times"
            ));
        }
    }
    for record in records {
        // A turn acknowledged (it answered 200 with an outcome) keeps its prompt.
        let acknowledged = matches!(record.outcome, Outcome::Completed(_) | Outcome::Paused(_));
        if acknowledged && record.kind == "turn" && !texts.contains_key(record.prompt.as_str()) {
            violations.push(format!("{LOST}: {session}: prompt {:?}", record.prompt));
        }
        match &record.outcome {
            Outcome::Completed(text) if !texts.contains_key(text.as_str()) => {
                violations.push(format!("{LOST}: {session}: answer {text:?}"));
            }
            Outcome::Paused(pending) => {
                for id in pending {
                    if !calls.contains_key(id.as_str()) {
                        violations.push(format!("{LOST}: {session}: paused call {id}"));
                    }
                }
            }
            _ => {}
        }
    }
    for (id, found) in &results {
        let real: Vec<&&Message> = found
            .iter()
            .filter(|m| m.content.starts_with("recorded "))
            .collect();
        if !real.is_empty() && !runs.contains_key(*id) {
            violations.push(format!(
                "{PHANTOM}: {session}: {id} has a result but never ran"
            ));
        }
        if id.ends_with("-gated") {
            let waiting = found.iter().filter(|m| m.awaiting_approval()).count();
            let decided = found.len() - waiting;
            let ok = (waiting == 1 && decided == 0) || (waiting == 0 && decided == 1);
            if !ok {
                violations.push(format!(
                    "{APPROVAL}: {session}: {id} has {waiting} waiting and {decided} decided results"
                ));
            }
        }
    }
}
