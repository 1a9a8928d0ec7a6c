//! Context compaction: giving up part of the history once it fills too much of the
//! model's window.
//!
//! [`DefaultCompactionPipeline`] decides *when* (before every model call, it sits
//! inside the loop); a compactor decides *what goes*. A compactor is a handler over a
//! [`CompactionEnv`], built like any stack, so the stack order is the cost policy: a
//! layer that got the conversation under target never calls the next.
//!
//! ```
//! use brute::compaction::{CompactionEnv, SlidingWindow, Summarize, ToolResults};
//! use brute::{Message, pipeline, providers::ScriptedModel};
//!
//! let summariser = ScriptedModel::from_fn(|_env| Message::assistant("Goal: ..."));
//! let compactor = pipeline! {
//!     use ToolResults { keep_recent: 2 };   // free: shrink old tool output
//!     use SlidingWindow;                   // free: drop the oldest turns
//!     run Summarize::new(summariser);      // one model call
//! };
//! # let _ = compactor;
//! ```
//!
//! Every cut keeps each tool call with its result: messages are cut in *blocks* (a
//! user message; an assistant message with the tool results answering it).

mod attachments;
mod pipeline;
mod strategies;
mod tokens;

pub use pipeline::{Compactor, DefaultCompactionPipeline, DefaultLadder, NoSummariser, Trigger};
pub use strategies::{
    SUMMARY_PROMPT, SlidingWindow, Strategy, Summarize, Summary, ToolResults, blocks,
    is_well_paired,
};
pub use tokens::{Heuristic, SharedEstimator, TokenCache, TokenEstimator, conversation_tokens};

use crate::message::Message;

/// The env of a compactor: the conversation, its size, and the target to get under.
pub struct CompactionEnv {
    /// The conversation being compacted.
    pub messages: Vec<Message>,
    /// Estimated tokens of each message, aligned with `messages`.
    pub estimates: Vec<usize>,
    /// The size to get under.
    pub target: usize,
    /// Messages removed or rewritten so far, as they were before.
    pub removed: Vec<Message>,
    /// Names of the strategies that changed something, in order.
    pub applied: Vec<&'static str>,
    estimator: SharedEstimator,
}

impl CompactionEnv {
    /// A compaction env for `messages`, to get under `target` tokens.
    pub fn new(messages: Vec<Message>, target: usize, estimator: SharedEstimator) -> Self {
        let estimates = messages.iter().map(|m| estimator.estimate(m)).collect();
        Self::with_estimates(messages, estimates, target, estimator)
    }

    /// A compaction env whose per-message estimates are already known.
    pub fn with_estimates(
        messages: Vec<Message>,
        estimates: Vec<usize>,
        target: usize,
        estimator: SharedEstimator,
    ) -> Self {
        debug_assert_eq!(messages.len(), estimates.len());
        CompactionEnv {
            messages,
            estimates,
            target,
            removed: Vec::new(),
            applied: Vec::new(),
            estimator,
        }
    }

    /// The estimated tokens of each message, aligned with `messages`.
    pub fn estimates(&self) -> &[usize] {
        &self.estimates
    }

    /// The estimated size of the conversation now.
    pub fn tokens(&self) -> usize {
        self.estimates.iter().sum()
    }

    /// Whether the conversation is still above the target.
    pub fn over_target(&self) -> bool {
        self.tokens() > self.target
    }

    /// The estimator in use.
    pub fn estimator(&self) -> &dyn crate::compaction::TokenEstimator {
        &*self.estimator
    }

    /// Replaces message `index` with `message`, keeping the original in `removed`.
    pub fn rewrite(&mut self, index: usize, message: Message) {
        self.estimates[index] = self.estimator.estimate(&message);
        let old = std::mem::replace(&mut self.messages[index], message);
        self.removed.push(old);
    }

    /// Removes `range` of messages and puts `replacement` (if any) where they were,
    /// keeping the originals in `removed`.
    pub fn splice(&mut self, range: std::ops::Range<usize>, replacement: Option<Message>) {
        let new_estimate = replacement.as_ref().map(|m| self.estimator.estimate(m));
        let start = range.start;
        self.removed
            .extend(self.messages.splice(range.clone(), replacement));
        self.estimates.splice(range, new_estimate);
        debug_assert_eq!(
            self.messages.len(),
            self.estimates.len(),
            "splice at {start}"
        );
    }

    /// Records that `strategy` changed the conversation.
    pub fn applied(&mut self, strategy: &'static str) {
        if self.applied.last() != Some(&strategy) {
            self.applied.push(strategy);
        }
    }
}

impl std::fmt::Debug for CompactionEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactionEnv")
            .field("messages", &self.messages.len())
            .field("tokens", &self.tokens())
            .field("target", &self.target)
            .field("removed", &self.removed.len())
            .field("applied", &self.applied)
            .finish()
    }
}
