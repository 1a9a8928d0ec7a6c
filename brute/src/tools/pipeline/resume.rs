//! What a loaded session means for the calls that wait for approval: the part of the
//! approval room that runs when a persistence layer (`SessionLog`) loads a history,
//! before the stack runs.
//!
//! A paused call is stored as a placeholder result marked `awaiting_approval` (see
//! `pause`). When the next turn of the session is loaded:
//!
//! - a turn that carries an [`ApprovalDecision`] resumes: the placeholders of the last
//!   reply stay pending (the pipeline decides on one of them), and a decision on a call
//!   that does not wait is refused before anything runs ([`ApprovalError::NotPending`],
//!   naming the calls that do wait);
//! - any other turn means the conversation went on without a decision: every
//!   placeholder is answered with [`ABANDONED_APPROVAL`] and is not pending any more.
//!
//! The persistence layer only loads and saves: it hands the history here and writes
//! back what [`settle`] changed.

use crate::message::{Message, Role};
use crate::stop::{ApprovalDecision, ApprovalError};
use crate::stream::pending::ABANDONED_APPROVAL;
use crate::stream::{pending_approvals, pending_call};

/// What [`settle`] did with a loaded history.
#[derive(Debug)]
pub(crate) struct Settled {
    /// Whether the history changed (placeholders answered): the store must be
    /// rewritten with it.
    pub(crate) changed: bool,
    /// Why the turn must not run: its decision is on a call that does not wait.
    pub(crate) refused: Option<ApprovalError>,
}

/// Settles the calls of the loaded `history` of `session` that wait for approval, for
/// a turn that carries `decision` (or none): see the module.
pub(crate) fn settle(
    history: &mut [Message],
    decision: Option<&ApprovalDecision>,
    session: &str,
) -> Settled {
    let changed = abandon(history, decision.is_some());
    let refused = decision
        .filter(|decision| pending_call(history, &decision.call_id).is_none())
        .map(|decision| ApprovalError::NotPending {
            call_id: decision.call_id.clone(),
            session: Some(session.to_string()),
            waiting: pending_approvals(history)
                .into_iter()
                .map(|c| c.id.clone())
                .collect(),
        });
    Settled { changed, refused }
}

/// Answers the calls of `messages` that wait for approval with [`ABANDONED_APPROVAL`]
/// (they are not pending any more), except, when `resuming`, those of the last reply
/// (the turn decides on one of them). Says whether anything changed.
fn abandon(messages: &mut [Message], resuming: bool) -> bool {
    // The results block of the last reply: the tool messages at the end.
    let tail = messages
        .iter()
        .rposition(|m| m.role != Role::Tool)
        .map_or(0, |i| i + 1);
    let keep = if resuming { tail } else { messages.len() };
    let mut changed = false;
    for message in &mut messages[..keep] {
        if message.awaiting_approval() {
            message.set_awaiting_approval(false);
            message.content = ABANDONED_APPROVAL.to_string();
            changed = true;
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;
    use crate::stop::Verdict;

    fn paused() -> Vec<Message> {
        let call = ToolCall::new("c1", "shell", serde_json::Value::Null);
        let mut placeholder = Message::tool_result("c1", "not run yet");
        placeholder.set_awaiting_approval(true);
        vec![
            Message::user("go"),
            Message::tool_calls("", vec![call]),
            placeholder,
        ]
    }

    #[test]
    fn a_turn_without_a_decision_abandons_the_paused_calls() {
        let mut history = paused();
        let settled = settle(&mut history, None, "s");
        assert!(settled.changed && settled.refused.is_none());
        assert_eq!(history[2].content, ABANDONED_APPROVAL);
        assert!(!history[2].awaiting_approval());
    }

    #[test]
    fn a_decision_keeps_its_call_pending_and_one_on_another_call_is_refused() {
        let mut history = paused();
        let settled = settle(
            &mut history,
            Some(&ApprovalDecision::new("c1", Verdict::Approve)),
            "s",
        );
        assert!(!settled.changed && settled.refused.is_none());
        assert!(history[2].awaiting_approval());
        let settled = settle(
            &mut history,
            Some(&ApprovalDecision::new("nope", Verdict::Approve)),
            "s",
        );
        let Some(ApprovalError::NotPending { waiting, .. }) = settled.refused else {
            panic!("refusal expected");
        };
        assert_eq!(waiting, ["c1"]);
    }

    #[test]
    fn a_history_that_begins_with_the_paused_reply_resumes_its_call() {
        // A transcript given from the reply on (no prompt before it): the results block
        // still begins right after the reply.
        let mut history = paused();
        history.remove(0);
        let settled = settle(
            &mut history,
            Some(&ApprovalDecision::new("c1", Verdict::Approve)),
            "s",
        );
        assert!(!settled.changed && settled.refused.is_none());
        assert!(history[1].awaiting_approval());
    }
}
