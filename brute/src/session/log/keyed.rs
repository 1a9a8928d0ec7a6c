//! Idempotency keys in a session: a server that stores a request's key with what the
//! request wrote (a turn's prompt, the reply a decision decided on) finds, on a retry
//! of that request, how far the first attempt got ([`keyed_turn`]), and `SessionLog`
//! makes sure under the session's lease that a retry never stores a prompt twice
//! ([`SessionError::KeyStored`]) and never resumes a turn that has ended
//! ([`ResumeKeyed`], [`SessionError::NotResumable`]).

use crate::env::Env;
use crate::message::{Message, Role};
use crate::session::error::SessionError;
use crate::stop::ApprovalDecision;
use crate::stream::pending_approvals;

/// Where the turn of an idempotency key stands in a history ([`keyed_turn`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyedTurn {
    /// The turn ended with the model's answer (or the conversation went on after it).
    Finished,
    /// The turn ended paused: calls of its last reply wait for approval.
    Paused,
    /// The turn has not ended: it is running, or its process died before its end.
    Unfinished,
}

/// The message that carries idempotency key `key` in `history` (the last one, if
/// several do), the end of its turn (the next user message, or the history's end),
/// and where that turn stands; `None` when no message carries the key.
///
/// ```
/// use brute::Message;
/// use brute::session::{KeyedTurn, keyed_turn};
///
/// let mut history = vec![Message::user("hi").with_idempotency_key("k1")];
/// assert_eq!(keyed_turn(&history, "k1"), Some((0, 1, KeyedTurn::Unfinished)));
/// history.push(Message::assistant("hello"));
/// assert_eq!(keyed_turn(&history, "k1"), Some((0, 2, KeyedTurn::Finished)));
/// assert_eq!(keyed_turn(&history, "k2"), None);
/// ```
pub fn keyed_turn(history: &[Message], key: &str) -> Option<(usize, usize, KeyedTurn)> {
    let at = history.iter().rposition(|m| m.has_idempotency_key(key))?;
    let end = history[at + 1..]
        .iter()
        .position(|m| m.role == Role::User)
        .map_or(history.len(), |i| at + 1 + i);
    if end < history.len() {
        return Some((at, end, KeyedTurn::Finished));
    }
    if !pending_approvals(history).is_empty() {
        return Some((at, end, KeyedTurn::Paused));
    }
    let answered = end > at + 1
        && history[end - 1].role == Role::Assistant
        && history[end - 1].tool_calls.is_empty();
    let state = if answered {
        KeyedTurn::Finished
    } else {
        KeyedTurn::Unfinished
    };
    Some((at, end, state))
}

/// In a turn's env extensions, with no new message: the turn resumes the one whose
/// message carries this idempotency key (its process died before the turn's end).
/// `SessionLog` runs it only if the loaded history shows that turn
/// [`Unfinished`](KeyedTurn::Unfinished), under the session's lease, and refuses it
/// with [`SessionError::NotResumable`] otherwise, before anything runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResumeKeyed(pub String);

/// In a turn's env extensions beside an [`ApprovalDecision`]: the idempotency key of
/// the decision. `SessionLog` adds it to the reply that holds the decided call and
/// stores it before the decision is applied (a reply that carries it already is left
/// as it is: the request is a retry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecisionKey(pub String);

/// What the keys of the turn in `env` require of the loaded `history` of `session`,
/// checked under the session's lease before anything runs: whether `history` changed
/// (a decision's key was added to its reply).
pub(in crate::session) fn check(
    history: &mut [Message],
    env: &Env,
    session: &str,
) -> Result<bool, SessionError> {
    for message in env.messages.iter().filter(|m| m.role != Role::System) {
        for key in message.idempotency_keys() {
            if history.iter().any(|m| m.has_idempotency_key(key)) {
                return Err(SessionError::KeyStored {
                    session: session.to_owned(),
                    key: key.clone(),
                });
            }
        }
    }
    if let Some(ResumeKeyed(key)) = env.extensions.get::<ResumeKeyed>()
        && !matches!(keyed_turn(history, key), Some((.., KeyedTurn::Unfinished)))
    {
        return Err(SessionError::NotResumable {
            session: session.to_owned(),
            key: key.clone(),
        });
    }
    let (Some(DecisionKey(key)), Some(decision)) = (
        env.extensions.get::<DecisionKey>(),
        env.extensions.get::<ApprovalDecision>(),
    ) else {
        return Ok(false);
    };
    let reply = history
        .iter_mut()
        .rev()
        .find(|m| m.tool_calls.iter().any(|c| c.id == decision.call_id));
    match reply {
        Some(reply) if !reply.has_idempotency_key(key) => {
            reply.add_idempotency_key(key.clone());
            Ok(true)
        }
        _ => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;

    fn paused() -> Vec<Message> {
        let mut placeholder = Message::tool_result("c1", "waits");
        placeholder.set_awaiting_approval(true);
        vec![
            Message::user("go").with_idempotency_key("k"),
            Message::tool_calls("", vec![ToolCall::new("c1", "t", serde_json::json!({}))]),
            placeholder,
        ]
    }

    #[test]
    fn a_turn_stands_where_its_history_ends() {
        let mut history = paused();
        assert_eq!(keyed_turn(&history, "k"), Some((0, 3, KeyedTurn::Paused)));
        history[2] = Message::tool_result("c1", "ran");
        assert_eq!(
            keyed_turn(&history, "k"),
            Some((0, 3, KeyedTurn::Unfinished))
        );
        history.push(Message::user("next"));
        assert_eq!(keyed_turn(&history, "k"), Some((0, 3, KeyedTurn::Finished)));
    }

    #[test]
    fn a_prompt_whose_key_is_stored_is_refused() {
        let mut history = paused();
        let mut env = Env::new();
        env.messages
            .push(Message::user("go").with_idempotency_key("k"));
        let refused = check(&mut history, &env, "s");
        assert!(
            matches!(refused, Err(SessionError::KeyStored { ref key, .. }) if key == "k"),
            "{refused:?}"
        );
    }

    #[test]
    fn only_an_unfinished_turn_resumes() {
        let mut history = paused();
        let mut env = Env::new();
        env.extensions.insert(ResumeKeyed("k".into()));
        assert!(matches!(
            check(&mut history, &env, "s"),
            Err(SessionError::NotResumable { .. })
        ));
        history[2] = Message::tool_result("c1", "ran");
        assert!(matches!(check(&mut history, &env, "s"), Ok(false)));
    }

    #[test]
    fn a_decision_key_goes_on_the_reply_once() {
        let mut history = paused();
        let mut env = Env::new();
        env.extensions.insert(DecisionKey("d".into()));
        env.extensions
            .insert(ApprovalDecision::new("c1", crate::stop::Verdict::Approve));
        assert!(matches!(check(&mut history, &env, "s"), Ok(true)));
        assert_eq!(history[1].idempotency_keys(), ["d"]);
        assert!(matches!(check(&mut history, &env, "s"), Ok(false)));
    }

    #[test]
    fn a_turn_is_finished_by_an_answer_after_its_keyed_message() {
        let mut history = vec![
            Message::user("earlier"),
            Message::assistant("reply"),
            Message::user("go").with_idempotency_key("k"),
        ];
        assert_eq!(
            keyed_turn(&history, "k"),
            Some((2, 3, KeyedTurn::Unfinished))
        );
        history.push(Message::assistant("done"));
        assert_eq!(keyed_turn(&history, "k"), Some((2, 4, KeyedTurn::Finished)));
        // A keyed message that is itself an answer: nothing after it answered the
        // request it carries.
        let reply = vec![
            Message::user("go"),
            Message::assistant("x").with_idempotency_key("d"),
        ];
        assert_eq!(keyed_turn(&reply, "d"), Some((1, 2, KeyedTurn::Unfinished)));
    }
}
