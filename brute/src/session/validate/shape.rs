//! The shape rules beside the tool-call pairing: which role may carry what, and where.
//!
//! - only assistant messages carry tool calls ([`Problem::CallsOnWrongRole`]): a
//!   `user` or `tool` message with calls would leave calls no result can answer, and
//!   the calls of a `tool` message were never reported as dangling;
//! - a `system` message comes only before the conversation
//!   ([`Problem::SystemInConversation`]);
//! - only a tool result in the last block of results can wait for approval
//!   ([`Problem::StrayApproval`]): that is the only place a pause leaves its
//!   placeholders, and a marker forged anywhere else would make a call look pending.
//!
//! The pass runs before the pairing pass and hands it the messages with their
//! positions as loaded, so every problem names the message as the file numbers it.

use super::{Problem, Repaired};
use crate::message::{Message, Role};
use crate::stream::pending::ABANDONED_APPROVAL;

/// Where the last block of tool results starts: after the last message that is not
/// a tool result.
fn last_block(messages: &[Message]) -> usize {
    messages
        .iter()
        .rposition(|m| m.role != Role::Tool)
        .map_or(0, |i| i + 1)
}

/// Whether the marker on message `index` is one a pause can leave.
fn marker_allowed(message: &Message, index: usize, block: usize) -> bool {
    message.role == Role::Tool && index >= block
}

/// A quick pass: whether a shape rule is broken (the common case is no).
pub(in crate::session) fn needs_repair(messages: &[Message]) -> bool {
    let block = last_block(messages);
    let mut started = false;
    for (index, message) in messages.iter().enumerate() {
        if message.role == Role::System {
            if started {
                return true;
            }
        } else {
            started = true;
        }
        if message.role != Role::Assistant && !message.tool_calls.is_empty() {
            return true;
        }
        if message.awaiting_approval() && !marker_allowed(message, index, block) {
            return true;
        }
        if message.tool_calls.iter().any(|c| c.id.is_empty()) {
            return true;
        }
    }
    false
}

/// Applies the shape rules to `messages`, recording each problem and what was dropped
/// in `report`; returns the messages kept, each with its position as loaded.
pub(in crate::session) fn repair(
    messages: Vec<Message>,
    report: &mut Repaired,
) -> Vec<(usize, Message)> {
    let block = last_block(&messages);
    let mut started = false;
    let mut out = Vec::with_capacity(messages.len());
    for (index, mut message) in messages.into_iter().enumerate() {
        let number = index + 1;
        if message.role == Role::System && started {
            report
                .problems
                .push(Problem::SystemInConversation { message: number });
            report.rewritten = true;
            report.dropped.push(message);
            continue;
        }
        started |= message.role != Role::System;
        if message.role != Role::Assistant && !message.tool_calls.is_empty() {
            report.problems.push(Problem::CallsOnWrongRole {
                message: number,
                role: message.role,
            });
            report.rewritten = true;
            report.dropped.push(message.clone());
            message.tool_calls.clear();
        }
        if message.awaiting_approval() && !marker_allowed(&message, index, block) {
            report
                .problems
                .push(Problem::StrayApproval { message: number });
            report.rewritten = true;
            message.set_awaiting_approval(false);
            if message.role == Role::Tool {
                message.content = ABANDONED_APPROVAL.to_string();
            }
        }
        out.push((index, message));
    }
    out
}
