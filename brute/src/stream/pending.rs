//! Which calls of a conversation wait for a person's decision.

use crate::message::{Message, Role, ToolCall};

/// The result given to a call that waited for approval when the conversation went on
/// without a decision.
pub const ABANDONED_APPROVAL: &str =
    "not run: the conversation went on before anyone approved or denied this tool call";

/// The calls that wait for approval in `messages` (a session's history, or a paused
/// turn's env): the calls of the last reply whose result is still a placeholder
/// marked `awaiting_approval`, in call order. Only the last reply's calls can be
/// decided; earlier ones were abandoned when the conversation went on.
///
/// A server shows these (with approve and deny buttons) when it loads a session.
///
/// ```
/// use brute::{Message, ToolCall};
/// use brute::stream::pending_approvals;
///
/// let call = ToolCall::new("c1", "shell", serde_json::json!({"command": "make"}));
/// let mut placeholder = Message::tool_result("c1", "not run yet");
/// placeholder.set_awaiting_approval(true);
/// let history = [Message::user("build it"), Message::tool_calls("", vec![call.clone()]), placeholder];
/// assert_eq!(pending_approvals(&history), [&call]);
/// assert!(pending_approvals(&history[..2]).is_empty());
/// ```
pub fn pending_approvals(messages: &[Message]) -> Vec<&ToolCall> {
    let Some(start) = messages.iter().rposition(|m| m.role != Role::Tool) else {
        return Vec::new();
    };
    let block = &messages[start + 1..];
    messages[start]
        .tool_calls
        .iter()
        .filter(|call| placeholder_in(block, &call.id).is_some())
        .collect()
}

/// The index in `block` of the placeholder result of call `id`.
pub(crate) fn placeholder_in(block: &[Message], id: &str) -> Option<usize> {
    block
        .iter()
        .position(|m| m.awaiting_approval() && m.tool_call_id.as_deref() == Some(id))
}

/// The placeholder of the pending call `id` in `messages` and the call: (the
/// placeholder's index, the call).
#[cfg(feature = "tools")]
pub(crate) fn pending_call<'a>(messages: &'a [Message], id: &str) -> Option<(usize, &'a ToolCall)> {
    let start = messages.iter().rposition(|m| m.role != Role::Tool)?;
    let call = messages[start].tool_calls.iter().find(|c| c.id == id)?;
    let at = placeholder_in(&messages[start + 1..], id)?;
    Some((start + 1 + at, call))
}
