//! Tool-call ids unique across the whole session, given to a reply before it is stored.
//!
//! Providers refuse a history in which two calls share an id (Anthropic rejects a
//! repeated `tool_use` id, so every later request of the session would fail) or a call
//! has none, and a tool result must answer exactly one call. A model may repeat an id
//! of an earlier reply (`same` twice), within one reply, or send none: the terminal,
//! which knows the history, fixes them here.

use std::collections::HashSet;

use crate::env::Transcript;
use crate::error::{Error, ModelError};
use crate::message::Message;
use crate::usage::Usage;

/// The longest tool-call id a reply may carry, in bytes. Providers' ids are a few dozen
/// bytes (`call_…`, `toolu_…`); an id is stored with its call and its result and sent
/// back on every later call of the session, so a model that sends megabytes of id is
/// refused instead of stored.
pub(crate) const MAX_CALL_ID_BYTES: usize = 256;

/// `reply` as it came, unless a call's id is longer than [`MAX_CALL_ID_BYTES`]: then
/// [`ModelError::TooLarge`] naming the tool and the cap, before anything is stored.
pub(crate) fn within_cap(
    reply: (Message, Option<Usage>),
) -> Result<(Message, Option<Usage>), Error> {
    match reply
        .0
        .tool_calls
        .iter()
        .find(|c| c.id.len() > MAX_CALL_ID_BYTES)
    {
        None => Ok(reply),
        Some(call) => Err(Error::Model(ModelError::TooLarge {
            limit: MAX_CALL_ID_BYTES,
            message: format!(
                "the id of the model's call of `{}` ({} bytes)",
                call.name,
                call.id.len()
            ),
        })),
    }
}

/// The ids that `history` has used, when `reply` has calls that need fixing against
/// them: `None` when every call of `reply` has an id of its own that the history has
/// not used (the common case: checked against the transcript's index of call ids, in
/// time independent of the history's length, with nothing copied), or when it has no
/// calls. Only a reply that repeats an id (or one whose id's hash collides with a
/// stored one's) reads the whole history.
pub(crate) fn taken_by(history: &mut Transcript, reply: &Message) -> Option<HashSet<String>> {
    let calls = &reply.tool_calls;
    if calls.is_empty() {
        return None;
    }
    let own = calls
        .iter()
        .enumerate()
        .all(|(n, call)| !call.id.is_empty() && calls[..n].iter().all(|c| c.id != call.id));
    if own {
        let index = history.call_ids();
        if !calls.iter().any(|call| index.may_hold(&call.id)) {
            return None;
        }
    }
    let taken: HashSet<String> = history
        .iter()
        .flat_map(|message| message.tool_calls.iter())
        .map(|call| call.id.clone())
        .collect();
    let clash = !own || calls.iter().any(|call| taken.contains(&call.id));
    clash.then_some(taken)
}

/// Appends the model's `reply` to `history` with call ids unique across the session
/// (fixed in place after the push, [`make_unique`], when they are not). A reply of one
/// call whose id is free, the common case, is hashed once: the same hash is checked
/// against the index and then added to it.
pub(crate) fn append(history: &mut Transcript, reply: Message, pass: u32) {
    if let [call] = reply.tool_calls.as_slice()
        && !call.id.is_empty()
    {
        let index = history.call_ids();
        let hash = index.hash(&call.id);
        if !index.holds(hash) {
            history.push_indexed(reply, hash);
            return;
        }
    }
    let taken = taken_by(history, &reply);
    history.push_then(reply, |reply| make_unique(taken, reply, pass));
}

/// Gives every call of `reply` an id not in `taken` (the history's, [`taken_by`]) and
/// used by no other call of `reply`: an empty id becomes `call_<pass>_<n>`, a taken
/// one gets `_<n>` appended until it is free (`n` is the call's place in the reply).
/// Ids that are free already are kept.
pub(crate) fn make_unique(taken: Option<HashSet<String>>, reply: &mut Message, pass: u32) {
    let Some(mut taken) = taken else {
        return;
    };
    for (n, call) in reply.tool_calls.iter_mut().enumerate() {
        if call.id.is_empty() {
            call.id = format!("call_{pass}_{n}");
        }
        while taken.contains(&call.id) {
            call.id = format!("{}_{n}", call.id);
        }
        taken.insert(call.id.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;

    fn reply(ids: &[&str]) -> Message {
        let mut message = Message::assistant("");
        message.tool_calls = ids
            .iter()
            .map(|id| ToolCall::new(*id, "t", serde_json::json!({})))
            .collect();
        message
    }

    fn make_unique<'a>(
        history: impl IntoIterator<Item = &'a Message>,
        reply: &mut Message,
        pass: u32,
    ) {
        let mut history: Transcript = history.into_iter().cloned().collect();
        super::make_unique(taken_by(&mut history, reply), reply, pass);
    }

    fn ids(message: &Message) -> Vec<&str> {
        message.tool_calls.iter().map(|c| c.id.as_str()).collect()
    }

    /// An id of the cap's length is stored; one byte more is refused, naming the tool
    /// and the length.
    #[test]
    fn an_id_up_to_the_cap_is_kept_and_a_longer_one_refused() {
        let at_cap = "i".repeat(MAX_CALL_ID_BYTES);
        let kept = within_cap((reply(&[&at_cap]), None)).map(|(message, _)| message);
        assert!(kept.is_ok_and(|message| ids(&message) == [at_cap.as_str()]));
        let over = "i".repeat(MAX_CALL_ID_BYTES + 1);
        let refused = within_cap((reply(&["short", &over]), None));
        let Err(Error::Model(ModelError::TooLarge { limit, message })) = refused else {
            panic!("{refused:?}");
        };
        assert_eq!(limit, MAX_CALL_ID_BYTES);
        assert_eq!(message, "the id of the model's call of `t` (257 bytes)");
    }

    #[test]
    fn free_ids_are_checked_without_collecting_the_history() {
        let mut history = Transcript::from(vec![reply(&["a"]), reply(&["b", "c"])]);
        assert!(taken_by(&mut history, &reply(&["d", "e"])).is_none());
        assert!(taken_by(&mut history, &Message::assistant("no calls")).is_none());
        for clash in [&["c"][..], &["d", "d"], &["d", ""]] {
            let taken = taken_by(&mut history, &reply(clash));
            assert_eq!(taken.map(|t| t.len()), Some(3), "{clash:?}");
        }
    }

    #[test]
    fn a_reply_appended_is_in_the_index_for_the_next() {
        let mut history = Transcript::from(vec![Message::user("hi")]);
        for pass in 0..3 {
            append(&mut history, reply(&["same"]), pass);
        }
        append(&mut history, reply(&["same", "other"]), 3);
        append(&mut history, reply(&["other"]), 4);
        let mut all: Vec<&str> = history
            .iter()
            .flat_map(|m| &m.tool_calls)
            .map(|c| c.id.as_str())
            .collect();
        assert_eq!(all[0], "same");
        let count = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), count, "{all:?}");
    }

    #[test]
    fn the_index_follows_every_change_of_the_transcript() {
        let mut history = Transcript::from(vec![Message::user("hi"), reply(&["a"])]);
        assert!(taken_by(&mut history, &reply(&["a"])).is_some());
        // Appended after the index was built.
        history.push(reply(&["b"]));
        assert!(taken_by(&mut history, &reply(&["b"])).is_some());
        // Removed: free again.
        history.pop();
        assert!(taken_by(&mut history, &reply(&["b"])).is_none());
        // The last message's calls changed in place.
        if let Some(last) = history.last_mut() {
            last.tool_calls[0].id = "renamed".into();
        }
        assert!(taken_by(&mut history, &reply(&["a"])).is_none());
        assert!(taken_by(&mut history, &reply(&["renamed"])).is_some());
        // Inserted before indexed messages.
        history.insert(0, reply(&["first"]));
        assert!(taken_by(&mut history, &reply(&["first"])).is_some());
        // Cut, then changed freely.
        history.truncate(1);
        assert!(taken_by(&mut history, &reply(&["renamed"])).is_none());
        assert!(taken_by(&mut history, &reply(&["first"])).is_some());
        history.edit(|messages| messages[0].tool_calls[0].id = "edited".into());
        assert!(taken_by(&mut history, &reply(&["first"])).is_none());
        assert!(taken_by(&mut history, &reply(&["edited"])).is_some());
        // Taken out and put back unchanged, then replaced.
        let out = history.take_out();
        history.put_back(out, false);
        assert!(taken_by(&mut history, &reply(&["edited"])).is_some());
        history.replace(vec![reply(&["new"])]);
        assert!(taken_by(&mut history, &reply(&["edited"])).is_none());
        assert!(taken_by(&mut history, &reply(&["new"])).is_some());
    }

    #[test]
    fn ids_repeated_across_replies_within_one_or_empty_become_unique() {
        let first = reply(&["same"]);
        let mut second = reply(&["same"]);
        make_unique([&first], &mut second, 1);
        assert_eq!(ids(&second), ["same_0"]);
        let mut third = reply(&["same", "same", "", "same_0"]);
        make_unique([&first, &second], &mut third, 2);
        let third_ids = ids(&third);
        let mut all: Vec<&str> = ["same", "same_0"].into_iter().chain(third_ids).collect();
        let count = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), count, "{all:?}");
        assert!(all.iter().all(|id| !id.is_empty()));
        let mut empty = reply(&[""]);
        make_unique([&reply(&["call_0_0"])], &mut empty, 0);
        assert_eq!(ids(&empty), ["call_0_0_0"]);
        let mut fresh = reply(&["a", "b"]);
        make_unique([&first], &mut fresh, 3);
        assert_eq!(ids(&fresh), ["a", "b"], "free ids are kept");
    }
}
