//! The tool-call ids a transcript holds, kept as hashes so that a reply's ids are
//! checked against the whole session in time independent of its length.
//!
//! The index covers the first `covered` messages of its transcript; messages appended
//! since are added the next time it is read ([`CallIndex::catch_up`]), so an append
//! costs nothing here. The transcript keeps it exact under its other changes (an
//! insert, an edit of the last message, a cut) or drops it when the conversation was
//! changed freely, and it is rebuilt once, on the next read.
//!
//! It holds 64-bit hashes, not the ids: a hit may be a collision, so it only answers
//! "certainly free" or "maybe taken", and a caller confirms a maybe against the
//! messages themselves (a model repeating an id, the only case that is not free, is
//! rare).

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher, RandomState};

use crate::message::Message;

/// The hashes of the tool-call ids of a transcript's first `covered` messages.
#[derive(Debug)]
pub(crate) struct CallIndex {
    /// How many messages, from the first, are in the index.
    covered: usize,
    /// An id's hash → how many calls of the covered messages have it.
    ids: HashMap<u64, u32, BuildHasherDefault<Hashed>>,
    /// How ids are hashed: seeded per index, so that no model can aim its ids at
    /// collisions.
    seed: RandomState,
}

impl CallIndex {
    /// An index of no message.
    pub(crate) fn new() -> CallIndex {
        CallIndex {
            covered: 0,
            ids: HashMap::default(),
            seed: RandomState::new(),
        }
    }

    /// How many messages from the first are in the index.
    pub(crate) fn covered(&self) -> usize {
        self.covered
    }

    /// Brings the index up to `messages` (the transcript it covers): adds the messages
    /// appended since it was last read, or starts again when it covers more messages
    /// than there are (they were taken out).
    pub(crate) fn catch_up(&mut self, messages: &[Message]) {
        if self.covered > messages.len() {
            self.ids.clear();
            self.covered = 0;
        }
        for message in &messages[self.covered..] {
            self.add(message);
        }
        self.covered = messages.len();
    }

    /// Whether a call of a covered message may have `id`: `false` is certain, `true`
    /// may be a collision of hashes.
    pub(crate) fn may_hold(&self, id: &str) -> bool {
        self.ids.contains_key(&self.seed.hash_one(id))
    }

    /// Counts the calls of `message`, inserted among the covered messages.
    pub(crate) fn insert(&mut self, message: &Message) {
        self.add(message);
        self.covered += 1;
    }

    /// Forgets the calls of `removed`, the last covered messages, which are being
    /// removed or handed out to be changed.
    pub(crate) fn uncover<'a>(&mut self, removed: impl IntoIterator<Item = &'a Message>) {
        for message in removed {
            for call in &message.tool_calls {
                let hash = self.seed.hash_one(call.id.as_str());
                if let Entry::Occupied(mut count) = self.ids.entry(hash) {
                    *count.get_mut() -= 1;
                    if *count.get() == 0 {
                        count.remove();
                    }
                }
            }
            self.covered -= 1;
        }
    }

    fn add(&mut self, message: &Message) {
        for call in &message.tool_calls {
            let hash = self.seed.hash_one(call.id.as_str());
            *self.ids.entry(hash).or_default() += 1;
        }
    }
}

/// The hasher of keys that are hashes already: passes a `u64` through.
#[derive(Default)]
struct Hashed(u64);

impl Hasher for Hashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `u64` keys are hashed here (`write_u64`); any other input is folded in
        // so that the hasher stays correct if it ever gets one.
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_u64(&mut self, hash: u64) {
        self.0 = hash;
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

    #[test]
    fn appended_messages_are_counted_when_read_and_removed_ones_forgotten() {
        let mut messages = vec![reply(&["a"]), Message::user("x"), reply(&["b", "c"])];
        let mut index = CallIndex::new();
        index.catch_up(&messages);
        assert!(index.may_hold("a") && index.may_hold("c"));
        assert!(!index.may_hold("d"));
        messages.push(reply(&["d"]));
        assert!(!index.may_hold("d"), "not read yet");
        index.catch_up(&messages);
        assert!(index.may_hold("d"));
        assert_eq!(index.covered(), 4);
        index.uncover(messages[2..].iter());
        assert!(!index.may_hold("b") && !index.may_hold("d"));
        assert!(index.may_hold("a"));
        assert_eq!(index.covered(), 2);
    }

    #[test]
    fn an_id_used_twice_stays_until_both_are_gone() {
        let messages = vec![reply(&["same"]), reply(&["same"])];
        let mut index = CallIndex::new();
        index.catch_up(&messages);
        index.uncover(messages[1..].iter());
        assert!(index.may_hold("same"));
        index.uncover(messages[..1].iter());
        assert!(!index.may_hold("same"));
    }

    #[test]
    fn an_index_of_more_messages_than_there_are_starts_again() {
        let mut index = CallIndex::new();
        index.catch_up(&[reply(&["a"]), reply(&["b"])]);
        index.catch_up(&[reply(&["c"])]);
        assert!(!index.may_hold("a") && index.may_hold("c"));
        assert_eq!(index.covered(), 1);
    }
}
