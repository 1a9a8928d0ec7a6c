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
    SUMMARY_PROMPT, SlidingWindow, Strategy, Summarize, ToolResults, blocks, is_well_paired,
};
pub use tokens::{Heuristic, TokenCache, TokenEstimator, conversation_tokens};

use std::sync::Arc;

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
    estimator: Arc<dyn TokenEstimator>,
    /// What the strategies asked a model and what it answered, for the events the
    /// pipeline emits on the turn's env.
    model_calls: Vec<ModelCall>,
    /// Work a strategy did and threw away, with the reason.
    discarded: Vec<(&'static str, String)>,
}

/// One model call a strategy made (the summariser's), reported on the turn's env as
/// [`Event::ModelRequest`](crate::Event::ModelRequest) and
/// [`Event::ModelResponse`](crate::Event::ModelResponse), like any model call.
#[derive(Debug)]
pub(crate) struct ModelCall {
    /// The messages sent.
    pub(crate) messages: usize,
    /// The tools advertised.
    pub(crate) tools: usize,
    /// The answer.
    pub(crate) completion: crate::Completion,
}

impl CompactionEnv {
    /// A compaction env for `messages`, to get under `target` tokens.
    pub fn new(messages: Vec<Message>, target: usize, estimator: Arc<dyn TokenEstimator>) -> Self {
        let estimates = messages.iter().map(|m| estimator.estimate(m)).collect();
        Self::with_estimates(messages, estimates, target, estimator)
    }

    /// A compaction env whose per-message estimates are already known.
    pub fn with_estimates(
        messages: Vec<Message>,
        estimates: Vec<usize>,
        target: usize,
        estimator: Arc<dyn TokenEstimator>,
    ) -> Self {
        debug_assert_eq!(messages.len(), estimates.len());
        CompactionEnv {
            messages,
            estimates,
            target,
            removed: Vec::new(),
            applied: Vec::new(),
            estimator,
            model_calls: Vec::new(),
            discarded: Vec::new(),
        }
    }

    /// Records a model call a strategy made: `request` as sent and the `completion`
    /// it got. `DefaultCompactionPipeline` reports it on the turn's env as the model
    /// events of any call ([`Event::ModelRequest`](crate::Event::ModelRequest), then
    /// [`Event::ModelResponse`](crate::Event::ModelResponse)), when the compaction is
    /// done. `Summarize` records each of its calls; a strategy of your own that calls
    /// a model should too.
    pub fn record_model_call(&mut self, request: &crate::Env, completion: &crate::Completion) {
        self.model_calls.push(ModelCall {
            messages: request.messages.len(),
            tools: request.tools.len(),
            completion: completion.clone(),
        });
    }

    /// Records that `strategy` threw away work it did (for example a summary no
    /// smaller than what it would replace), and why. `DefaultCompactionPipeline`
    /// reports it on the turn's env as [`Event::Error`](crate::Event::Error) from that
    /// strategy; the turn goes on.
    pub fn discard(&mut self, strategy: &'static str, reason: impl Into<String>) {
        self.discarded.push((strategy, reason.into()));
    }

    /// The model calls and discarded work recorded, taken out for the events.
    pub(crate) fn take_reports(&mut self) -> (Vec<ModelCall>, Vec<(&'static str, String)>) {
        (
            std::mem::take(&mut self.model_calls),
            std::mem::take(&mut self.discarded),
        )
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
