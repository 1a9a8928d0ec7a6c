//! `Transcript`: the conversation of a turn, which records its own changes.
//!
//! Every change to the conversation goes through a method of [`Transcript`], so the
//! transcript knows, for any earlier [`Mark`], whether the record was only appended to
//! since then (and what was appended) or rewritten. A persistence layer saves exactly
//! those [`Changes`]: it never has to guess what another layer did.
//!
//! **The record** is the conversation without its `system` messages: those are
//! instructions that `SystemPrompt` puts back each turn, and no store keeps them. A
//! system message added, moved or removed is not a change to the record, so the
//! system prompt inserted at the front of a loaded history costs a store nothing.

use std::fmt;
use std::ops::Deref;

use super::call_index::CallIndex;
use crate::message::{Message, Role};

/// The conversation so far, oldest first, recording what changes.
///
/// It reads like a slice (`Deref<Target = [Message]>`: `iter`, `last`, `len`, indexing)
/// and changes only through its methods, so that every change is recorded:
///
/// ```
/// use brute::env::Changes;
/// use brute::Message;
/// use brute::env::Transcript;
///
/// let mut transcript = Transcript::from(vec![Message::user("hi")]);
/// let saved = transcript.mark();
/// transcript.insert(0, Message::system("You are terse.")); // not part of the record
/// transcript.push(Message::assistant("hello"));
/// assert!(matches!(transcript.changes_since(saved), Changes::Appended(new) if new.len() == 1));
///
/// let saved = transcript.mark();
/// if let Some(last) = transcript.last_mut() {
///     last.content.push('!'); // a rewrite of the last position only
/// }
/// assert!(matches!(transcript.changes_since(saved), Changes::Rewritten { from: 1, messages } if messages.len() == 1));
///
/// let saved = transcript.mark();
/// transcript.edit(|messages| messages.retain(|m| m.content != "hi")); // a rewrite from 0
/// assert!(matches!(transcript.changes_since(saved), Changes::Rewritten { from: 0, .. }));
/// ```
pub struct Transcript {
    /// Which transcript this is: a mark of another one (after `env.messages` was
    /// assigned a new transcript) sees a rewrite.
    id: u64,
    messages: Vec<Message>,
    /// How many messages are not `system`: the length of the record.
    recorded: usize,
    /// One entry per rewrite, in order: the lowest position of the record it touched.
    rewrites: Rewrites,
    /// The tool-call ids of the messages, built on the first read of
    /// [`call_ids`](Self::call_ids) and kept up to date by every change after it
    /// (dropped by a free edit): a pointer until then, as for `rewrites`.
    calls: Option<Box<CallIndex>>,
}

/// The rewrites of a transcript: a pointer until the first one, so that the env, which
/// moves with every turn, stays small (most turns only append).
#[derive(Default)]
#[expect(
    clippy::box_collection,
    reason = "one pointer in the env instead of a Vec's three words; allocated on the first rewrite only"
)]
struct Rewrites(Option<Box<Vec<usize>>>);

impl Rewrites {
    fn push(&mut self, position: usize) {
        self.0.get_or_insert_default().push(position);
    }

    #[inline]
    fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |r| r.len())
    }

    /// The rewrites after the first `seen`.
    #[inline]
    fn since(&self, seen: usize) -> &[usize] {
        match &self.0 {
            Some(all) => &all[seen.min(all.len())..],
            None => &[],
        }
    }
}

/// A point in a transcript's history, taken with [`Transcript::mark`]: what a store
/// holds after it saved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mark {
    /// The transcript it was taken of.
    id: u64,
    /// Rewrites seen.
    rewrites: usize,
    /// Length of the record.
    recorded: usize,
}

impl Mark {
    /// How many messages of the record this mark covers.
    pub fn recorded(&self) -> usize {
        self.recorded
    }
}

/// What changed in the record since a [`Mark`].
#[derive(Debug, PartialEq)]
pub enum Changes<'a> {
    /// Nothing.
    None,
    /// Messages were only appended: these, which may include `system` messages that a
    /// store skips.
    Appended(&'a [Message]),
    /// A message the store holds was changed or removed, or one was inserted before
    /// it: replace what the store holds from position `from` on with `messages`
    /// (skipping `system` ones). An edit of the last message rewrites one message.
    Rewritten {
        /// The first position of the record (`system` messages not counted: the
        /// store's positions) that changed; those before it are as stored.
        from: usize,
        /// The conversation from that position on.
        messages: &'a [Message],
    },
}

impl Transcript {
    /// An empty transcript.
    pub fn new() -> Self {
        Self::default()
    }

    /// The messages, as a slice.
    #[inline]
    pub fn as_slice(&self) -> &[Message] {
        &self.messages
    }

    /// The messages, taken out of the transcript.
    pub fn into_vec(self) -> Vec<Message> {
        self.messages
    }

    /// Appends `message`.
    #[inline]
    pub fn push(&mut self, message: Message) {
        self.recorded += usize::from(message.role != Role::System);
        self.messages.push(message);
    }

    /// Appends `message`, then lets `fix` change it where it now is: still an append,
    /// and the message is not moved again after the push (a terminal gives its reply
    /// unique call ids this way).
    #[inline]
    pub(crate) fn push_then(&mut self, message: Message, fix: impl FnOnce(&mut Message)) {
        self.push(message);
        if let Some(last) = self.messages.last_mut() {
            fix(last);
        }
    }

    /// Inserts `message` at `index` (panics past the end, like `Vec::insert`). A
    /// message of the record inserted before another one of the record is a rewrite.
    pub fn insert(&mut self, index: usize, message: Message) {
        if let Some(calls) = self.calls.as_deref_mut()
            && index < calls.covered()
        {
            calls.insert(&message);
        }
        if message.role != Role::System {
            let position = self.position_of(index);
            if position < self.recorded {
                self.rewrites.push(position);
            }
            self.recorded += 1;
        }
        self.messages.insert(index, message);
    }

    /// Changes the conversation freely: `edit` may change, remove, insert or reorder
    /// messages. Recorded as a rewrite of the whole record (a layer that only appends
    /// uses [`push`](Self::push), which is not).
    pub fn edit<R>(&mut self, edit: impl FnOnce(&mut Vec<Message>) -> R) -> R {
        let result = edit(&mut self.messages);
        self.rewritten_whole();
        result
    }

    /// Records a rewrite of the whole record, after the messages changed freely.
    fn rewritten_whole(&mut self) {
        self.calls = None;
        self.recorded = self
            .messages
            .iter()
            .filter(|m| m.role != Role::System)
            .count();
        self.rewrites.push(0);
    }

    /// Takes the messages out, to work on them by value across an `await` (what
    /// compaction does); the transcript is empty until [`put_back`](Self::put_back).
    pub fn take_out(&mut self) -> Vec<Message> {
        std::mem::take(&mut self.messages)
    }

    /// Puts back messages taken with [`take_out`](Self::take_out). `changed` says
    /// whether they were changed meanwhile: `true` records a rewrite; `false` promises
    /// they are exactly as taken, and records nothing.
    pub fn put_back(&mut self, messages: Vec<Message>, changed: bool) {
        self.messages = messages;
        if changed {
            self.rewritten_whole();
        }
    }

    /// Replaces the whole conversation with `messages`: a rewrite.
    pub fn replace(&mut self, messages: Vec<Message>) -> Vec<Message> {
        self.edit(|current| std::mem::replace(current, messages))
    }

    /// The last message, to change it in place. Changing a message of the record that
    /// a store already holds is a rewrite, so it is recorded as one from that message's
    /// position; a message appended since the store's last mark is still an append.
    pub fn last_mut(&mut self) -> Option<&mut Message> {
        let last = self.messages.last()?;
        if last.role != Role::System {
            self.rewrites.push(self.recorded - 1);
        }
        // Its calls may change: the index counts them again on its next read.
        if let Some(calls) = self.calls.as_deref_mut()
            && calls.covered() == self.messages.len()
        {
            calls.uncover([last]);
        }
        self.messages.last_mut()
    }

    /// Removes the messages from `len` on. Removing messages of the record is a
    /// rewrite from the first one removed.
    pub fn truncate(&mut self, len: usize) {
        if len >= self.messages.len() {
            return;
        }
        let position = self.position_of(len);
        if position < self.recorded {
            self.rewrites.push(position);
        }
        if let Some(calls) = self.calls.as_deref_mut()
            && calls.covered() > len
        {
            calls.uncover(self.messages[len..calls.covered()].iter().rev());
        }
        self.messages.truncate(len);
        self.recorded = position;
    }

    /// Removes the last message and returns it; a rewrite when a store held it.
    pub fn pop(&mut self) -> Option<Message> {
        if let Some(calls) = self.calls.as_deref_mut()
            && calls.covered() == self.messages.len()
        {
            calls.uncover(self.messages.last());
        }
        let message = self.messages.pop()?;
        if message.role != Role::System {
            self.recorded -= 1;
            self.rewrites.push(self.recorded);
        }
        Some(message)
    }

    /// The index of the tool-call ids of every message, brought up to date: built on
    /// the first call (one pass over the conversation, as a loaded history is), then
    /// kept by every change, so that checking a reply's ids costs the same on the
    /// thousandth message as on the first.
    pub(crate) fn call_ids(&mut self) -> &CallIndex {
        let calls = self.calls.get_or_insert_with(|| Box::new(CallIndex::new()));
        calls.catch_up(&self.messages);
        calls
    }

    /// Appends `message`, whose one tool call has an id of this hash in the index of
    /// [`call_ids`](Self::call_ids), read just before: the index covers it at once,
    /// without hashing its id again.
    pub(crate) fn push_indexed(&mut self, message: Message, hash: u64) {
        if let Some(calls) = self.calls.as_deref_mut()
            && calls.covered() == self.messages.len()
        {
            calls.cover_with(hash);
        }
        self.push(message);
    }

    /// Reserves room for `additional` more messages.
    pub fn reserve(&mut self, additional: usize) {
        self.messages.reserve(additional);
    }

    /// Appends every message of `messages`.
    pub fn extend(&mut self, messages: impl IntoIterator<Item = Message>) {
        for message in messages {
            self.push(message);
        }
    }

    /// This point in the transcript's history: [`changes_since`](Self::changes_since)
    /// it reports [`Changes::None`] until the next change.
    #[inline]
    pub fn mark(&self) -> Mark {
        Mark {
            id: self.id,
            rewrites: self.rewrites.len(),
            recorded: self.recorded,
        }
    }

    /// A mark for a store that holds the first `recorded` messages of the record as
    /// it is now (for example the history a persistence layer just loaded, before the
    /// prompt that follows it).
    pub fn mark_at(&self, recorded: usize) -> Mark {
        Mark {
            id: self.id,
            rewrites: self.rewrites.len(),
            recorded: recorded.min(self.recorded),
        }
    }

    /// What changed in the record since `mark`: nothing, an append (the new
    /// messages), or a rewrite from the first position that changed. Costs a look at
    /// the rewrites since `mark` (usually none) and at the messages from the first
    /// changed or appended one on: never the whole history unless it all changed.
    pub fn changes_since(&self, mark: Mark) -> Changes<'_> {
        // Each rewrite left the record before its position as it was, so the record
        // is unchanged before the lowest of them.
        let from = if mark.id == self.id {
            self.rewrites
                .since(mark.rewrites)
                .iter()
                .copied()
                .filter(|&position| position < mark.recorded)
                .min()
        } else {
            Some(0)
        }
        // Fewer messages than the store holds, whichever way: a rewrite from the end.
        .or((self.recorded < mark.recorded).then_some(self.recorded));
        if let Some(from) = from {
            let from = from.min(self.recorded);
            let index = self.index_of_tail(self.recorded - from);
            return Changes::Rewritten {
                from,
                messages: &self.messages[index..],
            };
        }
        let new = self.recorded - mark.recorded;
        if new == 0 {
            return Changes::None;
        }
        Changes::Appended(&self.messages[self.index_of_tail(new)..])
    }

    /// How many messages of the record come before `index`.
    fn position_of(&self, index: usize) -> usize {
        // Counted from whichever end is nearer: inserts are usually near the end.
        if index > self.messages.len() / 2 {
            let after = self.messages[index.min(self.messages.len())..]
                .iter()
                .filter(|m| m.role != Role::System)
                .count();
            self.recorded - after
        } else {
            self.messages[..index]
                .iter()
                .filter(|m| m.role != Role::System)
                .count()
        }
    }

    /// The index of the first of the last `n` record messages (the end when `n` is 0).
    fn index_of_tail(&self, n: usize) -> usize {
        if n == 0 {
            return self.messages.len();
        }
        let mut seen = 0;
        for (i, message) in self.messages.iter().enumerate().rev() {
            if message.role != Role::System {
                seen += 1;
                if seen == n {
                    return i;
                }
            }
        }
        0
    }
}

/// A new transcript identity.
fn next_id() -> u64 {
    // 64 random bits (std's `RandomState` differs on every call, seeded randomly per
    // thread): no counter of brute's own in the process.
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u8(0);
    hasher.finish()
}

impl Default for Transcript {
    fn default() -> Self {
        Transcript::from(Vec::new())
    }
}

/// A clone is another transcript: marks of the original see it as rewritten.
impl Clone for Transcript {
    fn clone(&self) -> Self {
        Transcript {
            id: next_id(),
            messages: self.messages.clone(),
            recorded: self.recorded,
            rewrites: Rewrites::default(),
            calls: None,
        }
    }
}

/// Transcripts are equal when their messages are.
impl PartialEq for Transcript {
    fn eq(&self, other: &Self) -> bool {
        self.messages == other.messages
    }
}

impl Deref for Transcript {
    type Target = [Message];

    #[inline]
    fn deref(&self) -> &[Message] {
        &self.messages
    }
}

impl From<Vec<Message>> for Transcript {
    fn from(messages: Vec<Message>) -> Self {
        let recorded = messages.iter().filter(|m| m.role != Role::System).count();
        Transcript {
            id: next_id(),
            messages,
            recorded,
            rewrites: Rewrites::default(),
            calls: None,
        }
    }
}

impl From<Transcript> for Vec<Message> {
    fn from(transcript: Transcript) -> Self {
        transcript.messages
    }
}

impl FromIterator<Message> for Transcript {
    fn from_iter<I: IntoIterator<Item = Message>>(iter: I) -> Self {
        Transcript::from(iter.into_iter().collect::<Vec<_>>())
    }
}

impl<'a> IntoIterator for &'a Transcript {
    type Item = &'a Message;
    type IntoIter = std::slice::Iter<'a, Message>;

    fn into_iter(self) -> Self::IntoIter {
        self.messages.iter()
    }
}

impl PartialEq<Vec<Message>> for Transcript {
    fn eq(&self, other: &Vec<Message>) -> bool {
        self.messages == *other
    }
}

impl PartialEq<Transcript> for Vec<Message> {
    fn eq(&self, other: &Transcript) -> bool {
        *self == other.messages
    }
}

impl<const N: usize> PartialEq<[Message; N]> for Transcript {
    fn eq(&self, other: &[Message; N]) -> bool {
        self.messages == other
    }
}

impl PartialEq<[Message]> for Transcript {
    fn eq(&self, other: &[Message]) -> bool {
        self.messages == other
    }
}

impl fmt::Debug for Transcript {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.messages).finish()
    }
}

#[cfg(test)]
#[path = "transcript_tests.rs"]
mod tests;
