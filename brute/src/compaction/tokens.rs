//! Token counts: a pluggable estimator and a per-message cache, so the size check
//! before each model call costs O(new messages), not O(history).

use crate::env::Env;
use crate::message::Message;

/// Estimates how many tokens a message costs in a model's context.
///
/// The default, [`Heuristic`], counts about four bytes per token. Plug in a real
/// tokenizer by implementing this trait.
pub trait TokenEstimator: Send + Sync {
    /// Estimated tokens of `message`, including its per-message overhead.
    fn estimate(&self, message: &Message) -> usize;
}

/// About four bytes of text per token, plus a fixed overhead per message and per tool
/// call. Fast, and within a few tens of percent of real tokenizers for English and
/// code.
///
/// Images and documents ([`Message::parts`]) are counted as providers bill them, not by
/// their bytes: an image by its pixels (read from its header: about `width × height /
/// 750` tokens, at most 1,600 once scaled down), a PDF at 3,000 tokens a page. What
/// brute cannot see, an image or a document given by URL, counts as a full-size image or
/// one page.
///
/// ```
/// use brute::{Message, compaction::{Heuristic, TokenEstimator}, message::Part};
///
/// let text = Message::user("What is in this picture?");
/// let with_image = Message::user("What is in this picture?")
///     .with_part(Part::image_url("https://example.com/cat.png"));
/// assert_eq!(Heuristic.estimate(&with_image) - Heuristic.estimate(&text), 1_600);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Heuristic;

/// Tokens a message costs beyond its text (role, separators).
const MESSAGE_OVERHEAD: usize = 4;

impl TokenEstimator for Heuristic {
    fn estimate(&self, message: &Message) -> usize {
        let mut bytes = message.content.len();
        if let Some(reasoning) = message.reasoning() {
            bytes += reasoning.len();
        }
        for call in &message.tool_calls {
            bytes += call.name.len() + call.id.len() + json_len(&call.arguments) + 8;
        }
        let attachments: usize = message
            .parts()
            .iter()
            .map(super::attachments::part_tokens)
            .sum();
        MESSAGE_OVERHEAD + bytes.div_ceil(4) + attachments
    }
}

/// Length of a JSON value as compact text, without allocating it.
fn json_len(value: &serde_json::Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.0,
        Err(_) => 0,
    }
}

/// Per-message token estimates of the conversation in an env, kept in the env's
/// extensions across the passes of a turn.
///
/// The cache assumes the history grows by appending, which is what every built-in
/// layer does between compactions. It re-checks the last cached message and the
/// length, so a truncated or rewritten tail is noticed; a layer that edits an earlier
/// message in place should call [`TokenCache::invalidate`].
#[derive(Clone, Debug, Default)]
pub struct TokenCache {
    estimates: Vec<usize>,
    total: usize,
    /// The content length of the last cached message, to notice a rewritten tail.
    last_len: usize,
}

impl TokenCache {
    /// The estimated size of `messages`, estimating only messages not seen before.
    pub fn total(&mut self, messages: &[Message], estimator: &dyn TokenEstimator) -> usize {
        let cached = self.estimates.len();
        let tail_changed = cached > 0
            && (cached > messages.len() || messages[cached - 1].content.len() != self.last_len);
        if tail_changed {
            self.invalidate();
        }
        for message in &messages[self.estimates.len()..] {
            let estimate = estimator.estimate(message);
            self.estimates.push(estimate);
            self.total += estimate;
        }
        self.last_len = messages.last().map_or(0, |m| m.content.len());
        self.total
    }

    /// The cached per-message estimates, aligned with the messages last counted.
    pub fn estimates(&self) -> &[usize] {
        &self.estimates
    }

    /// Forgets everything: the next [`TokenCache::total`] estimates every message.
    pub fn invalidate(&mut self) {
        self.estimates.clear();
        self.total = 0;
        self.last_len = 0;
    }

    /// Replaces the cache with known estimates (after a compaction computed them).
    pub(crate) fn reset(&mut self, estimates: Vec<usize>, messages: &[Message]) {
        self.total = estimates.iter().sum();
        self.estimates = estimates;
        self.last_len = messages.last().map_or(0, |m| m.content.len());
    }
}

/// The estimated size of `env.messages`, through the env's [`TokenCache`].
///
/// When the provider reported usage for the last call ([`Env::last_call`]), its count
/// replaces the estimate of the messages it covered.
pub fn conversation_tokens(env: &mut Env, estimator: &dyn TokenEstimator) -> usize {
    let cache = env.extensions.get_or_insert_with(TokenCache::default);
    let estimated = cache.total(&env.messages, estimator);
    let Some(reported) = env.last_call() else {
        return estimated;
    };
    let reported_tokens = usize::try_from(reported.usage.total()).unwrap_or(usize::MAX);
    let Some(cache) = env.extensions.get::<TokenCache>() else {
        return estimated;
    };
    // The reply is the message right after the prompt the provider counted.
    let covered = reported.prompt_messages + 1;
    match cache.estimates().get(covered..) {
        Some(tail) if covered <= env.messages.len() => {
            reported_tokens.saturating_add(tail.iter().sum::<usize>())
        }
        _ => estimated,
    }
}
