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
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};

use foldhash::fast::RandomState;

use crate::message::Message;

/// Up to this many ids the hashes are a list searched in order (a few dozen
/// comparisons of integers, less than a map's bookkeeping); past it, a map.
const LIST: usize = 64;

/// The hashes of the tool-call ids of a transcript's first `covered` messages.
#[derive(Debug)]
pub(crate) struct CallIndex {
    /// How many messages, from the first, are in the index.
    covered: usize,
    /// The hashes, one per call.
    ids: Ids,
    /// How ids are hashed: seeded per index, so that no model can aim its ids at
    /// collisions.
    seed: RandomState,
}

/// The hashes of the indexed ids: a list while there are few, a multiset after.
#[derive(Debug)]
enum Ids {
    /// One hash per call, in no order.
    List(Vec<u64>),
    /// A hash → how many calls have it.
    Map(HashMap<u64, u32, BuildHasherDefault<Hashed>>),
}

impl CallIndex {
    /// An index of no message.
    pub(crate) fn new() -> CallIndex {
        CallIndex {
            covered: 0,
            ids: Ids::List(Vec::with_capacity(16)),
            seed: RandomState::default(),
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
            self.ids = Ids::List(Vec::new());
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
        self.holds(self.hash(id))
    }

    /// The hash of `id` in this index.
    #[inline]
    pub(crate) fn hash(&self, id: &str) -> u64 {
        self.seed.hash_one(id)
    }

    /// Whether a call of a covered message may have an id of this [`hash`](Self::hash).
    pub(crate) fn holds(&self, hash: u64) -> bool {
        match &self.ids {
            Ids::List(list) => list.contains(&hash),
            Ids::Map(map) => map.contains_key(&hash),
        }
    }

    /// Covers one more message, appended after the covered ones, whose one call has
    /// an id of this [`hash`](Self::hash).
    pub(crate) fn cover_with(&mut self, hash: u64) {
        self.add_hash(hash);
        self.covered += 1;
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
                match &mut self.ids {
                    Ids::List(list) => {
                        if let Some(at) = list.iter().position(|&h| h == hash) {
                            list.swap_remove(at);
                        }
                    }
                    Ids::Map(map) => {
                        if let Entry::Occupied(mut count) = map.entry(hash) {
                            *count.get_mut() -= 1;
                            if *count.get() == 0 {
                                count.remove();
                            }
                        }
                    }
                }
            }
            self.covered -= 1;
        }
    }

    fn add(&mut self, message: &Message) {
        for call in &message.tool_calls {
            self.add_hash(self.seed.hash_one(call.id.as_str()));
        }
    }

    fn add_hash(&mut self, hash: u64) {
        match &mut self.ids {
            Ids::List(list) if list.len() < LIST => list.push(hash),
            Ids::List(list) => {
                let mut map = HashMap::with_capacity_and_hasher(LIST * 2, Default::default());
                for &hash in list.iter() {
                    *map.entry(hash).or_default() += 1;
                }
                *map.entry(hash).or_default() += 1;
                self.ids = Ids::Map(map);
            }
            Ids::Map(map) => *map.entry(hash).or_default() += 1,
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
    fn many_ids_move_from_the_list_to_the_map_and_stay_exact() {
        let messages: Vec<Message> = (0..3 * LIST)
            .map(|n| reply(&[&format!("id{n}"), &format!("twin{}", n / 2)]))
            .collect();
        let mut index = CallIndex::new();
        index.catch_up(&messages[..LIST / 4]);
        assert!(matches!(index.ids, Ids::List(_)));
        index.catch_up(&messages);
        assert!(matches!(index.ids, Ids::Map(_)));
        assert!((0..3 * LIST).all(|n| index.may_hold(&format!("id{n}"))));
        assert!(!index.may_hold("id-none"));
        // `twin{last}` is held by the last two messages: gone with both only.
        let twin = format!("twin{}", (3 * LIST - 1) / 2);
        index.uncover(messages[3 * LIST - 1..].iter());
        assert!(index.may_hold(&twin) && !index.may_hold(&format!("id{}", 3 * LIST - 1)));
        index.uncover(messages[3 * LIST - 2..3 * LIST - 1].iter());
        assert!(!index.may_hold(&twin));
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
