//! `DefaultCompactionPipeline`: decides when to compact, and runs the compactor.

use std::future::Future;
use std::sync::Arc;

use crate::compaction::CompactionEnv;
use crate::compaction::strategies::{SlidingWindow, Summarize, ToolResults};
use crate::compaction::tokens::{Heuristic, TokenCache, TokenEstimator, conversation_tokens};
use crate::env::Env;
use crate::error::Error;
use crate::event::Event;
use crate::handler::Handler;
use crate::model::Model;
use crate::trace::traced;

/// When compaction starts.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Trigger {
    /// When the conversation fills this fraction of the window.
    Fraction(f64),
    /// When the conversation is larger than this many tokens.
    Tokens(usize),
    /// When the conversation has more than this many messages.
    Messages(usize),
}

impl Default for Trigger {
    fn default() -> Self {
        Trigger::Fraction(0.8)
    }
}

/// Compacts the conversation before a model call once it fills too much of the
/// model's window. Sits inside the loop (so it runs before every call) and inside
/// `SessionLog` (so the log persists what survives); both are checked at compile time.
///
/// Three ways to say *what goes*, from most to least explicit:
///
/// - `compactor: pipeline! { use ToolResults; use SlidingWindow; run Summarize::new(model); }`
/// - `compactor: (ToolResults::default(), SlidingWindow::default(), Summarize::new(model))`,
///   a list run cheapest first;
/// - `summariser: model`, the same ladder already wired (without a summariser, only
///   the two free strategies run).
///
/// Compaction is lossy and says so: every compaction emits
/// [`Event::Compacted`] with the messages removed or rewritten, so an application can
/// archive them. A summariser failure leaves the conversation as the cheaper strategies
/// left it and reports [`Event::Error`]; the turn goes on if the conversation fits the
/// window, and fails with a clear error if it does not.
///
/// ```
/// use brute::compaction::DefaultCompactionPipeline;
/// use brute::{Message, brute_agent, middleware::Loop, providers::ScriptedModel};
///
/// let summariser = ScriptedModel::from_fn(|_env| Message::assistant("Goal: ..."));
/// let agent = brute_agent! {
///     use Loop::While;
///     use DefaultCompactionPipeline { window: 200_000, summariser: summariser };
///     run |_env| async { Ok(Message::assistant("ok")) };
/// };
/// # let _ = agent;
/// ```
///
/// # Options
///
/// | option | type | default | what it is |
/// |---|---|---|---|
/// | `window` | `usize` | `128_000` | the model's context window, in tokens |
/// | `trigger` | [`Trigger`] | `Trigger::Fraction(0.8)` | when to compact: a fraction of the window, a token count, a message count |
/// | `target` | `f64` | `0.5` | the size to compact to, as a fraction of the window (of the conversation, when the trigger fired below that) |
/// | `compactor` | a [`pipeline!`](crate::pipeline!) over [`CompactionEnv`], or a tuple of strategies | [`DefaultLadder`] | what goes |
/// | `summariser` | any [`Model`] | [`NoSummariser`] | the model that summarises, for the default ladder |
/// | `estimator` | `Arc<dyn TokenEstimator>` | [`Heuristic`] | how tokens are counted when the provider reports none |
///
/// Placement: inside a loop, and inside `SessionLog` when there is one (the log keeps
/// what survives); checked at compile time.
#[derive(crate::Middleware, Clone)]
#[middleware(crate = crate, provides = crate::kind::Compaction)]
pub struct DefaultCompactionPipeline<A, C, M> {
    app: A,
    /// The model's context window, in tokens.
    #[middleware(default = 128_000)]
    window: usize,
    /// When to compact (default: at 80% of the window).
    trigger: Trigger,
    /// The size to compact to, as a fraction of the window (default 0.5); when the
    /// trigger fires under that size (`Trigger::Messages`, or `Trigger::Tokens` below
    /// it), as a fraction of the conversation's size.
    #[middleware(default = 0.5)]
    target: f64,
    /// A compactor of your own: a `pipeline!` over `CompactionEnv`, or a tuple of
    /// strategies.
    #[middleware(default_type = DefaultLadder)]
    compactor: C,
    /// The model that summarises, for the default ladder.
    #[middleware(default_type = NoSummariser)]
    summariser: M,
    /// How tokens are counted when the provider reports no usage.
    #[middleware(default = Arc::new(Heuristic))]
    estimator: Arc<dyn TokenEstimator>,
}

impl<A, C, M> DefaultCompactionPipeline<A, C, M> {
    fn triggered(&self, tokens: usize, messages: usize) -> bool {
        match self.trigger {
            Trigger::Fraction(fraction) => tokens as f64 > self.window as f64 * fraction,
            Trigger::Tokens(limit) => tokens > limit,
            Trigger::Messages(limit) => messages > limit,
        }
    }

    fn target_tokens(&self) -> usize {
        (self.window as f64 * self.target.clamp(0.0, 1.0)) as usize
    }

    /// The size to compact to when the trigger fired at `before` tokens: `target` of
    /// the window, or, when the trigger fired below that (a message count, or a token
    /// limit under the target), `target` of the conversation as it is, so that a
    /// trigger that fires always compacts.
    fn target_for(&self, before: usize) -> usize {
        let target = self.target_tokens();
        if before > target {
            return target;
        }
        let relative = (before as f64 * self.target.clamp(0.0, 1.0)) as usize;
        tracing::debug!(
            brute.compaction.tokens_before = before,
            brute.compaction.window_target = target,
            brute.compaction.target = relative,
            "the trigger fired under the window's target: compacting to a fraction of the conversation"
        );
        relative
    }
}

/// What compacts, given the `compactor` and `summariser` options. Implemented for
/// the combinations the options allow; you do not implement it (it is sealed).
pub trait Compactor<M>: sealed::Sealed<M> + Send + Sync {
    /// Compacts `env` with this compactor (and `summariser`, for the default ladder).
    fn compact(
        &self,
        summariser: &M,
        env: &mut CompactionEnv,
    ) -> impl Future<Output = Result<(), Error>> + Send;
}

/// The `compactor` when none is given: the ladder `ToolResults`, `SlidingWindow`, and
/// `Summarize` when a `summariser` is given.
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultLadder;

/// The `summariser` when none is given: the default ladder stops at the free strategies.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoSummariser;

mod sealed {
    /// Seals [`Compactor`](super::Compactor): implemented for exactly the same
    /// combinations, in a module no other crate can name.
    pub trait Sealed<M> {}
}

impl<M: Model> sealed::Sealed<M> for DefaultLadder {}
impl sealed::Sealed<NoSummariser> for DefaultLadder {}
impl<C: Handler<CompactionEnv>> sealed::Sealed<NoSummariser> for C {}

/// No compactor given, a summariser given: the default ladder `ToolResults`,
/// `SlidingWindow`, `Summarize`.
impl<M: Model> Compactor<M> for DefaultLadder {
    async fn compact(&self, summariser: &M, env: &mut CompactionEnv) -> Result<(), Error> {
        let ladder = (
            ToolResults::default(),
            SlidingWindow::default(),
            Summarize::new(Borrowed(summariser)),
        );
        ladder.call(env).await
    }
}

/// Neither given: the two free strategies.
impl Compactor<NoSummariser> for DefaultLadder {
    async fn compact(&self, _: &NoSummariser, env: &mut CompactionEnv) -> Result<(), Error> {
        (ToolResults::default(), SlidingWindow::default())
            .call(env)
            .await
    }
}

/// A compactor given: it decides alone.
impl<C: Handler<CompactionEnv>> Compactor<NoSummariser> for C {
    fn compact(
        &self,
        _: &NoSummariser,
        env: &mut CompactionEnv,
    ) -> impl Future<Output = Result<(), Error>> + Send {
        self.call(env)
    }
}

/// An estimator whose counts are multiplied by `scale`: the heuristic calibrated to
/// what the provider reported.
struct Scaled {
    inner: Arc<dyn TokenEstimator>,
    scale: f64,
}

impl crate::compaction::TokenEstimator for Scaled {
    fn estimate(&self, message: &crate::message::Message) -> usize {
        scale_tokens(self.inner.estimate(message), self.scale)
    }
}

fn scale_tokens(tokens: usize, scale: f64) -> usize {
    (tokens as f64 * scale).ceil() as usize
}

/// The summariser, borrowed by the default ladder for one compaction.
struct Borrowed<'a, M>(&'a M);

impl<M: Model> Model for Borrowed<'_, M> {
    fn complete(&self, env: &Env) -> impl Future<Output = Result<crate::Completion, Error>> + Send {
        self.0.complete(env)
    }

    fn name(&self) -> &str {
        self.0.name()
    }
}

impl<A, C, M> Handler<Env> for DefaultCompactionPipeline<A, C, M>
where
    A: Handler<Env>,
    C: Compactor<M>,
    M: Send + Sync,
{
    const WATCHED: bool = false;

    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        let before = conversation_tokens(env, &*self.estimator);
        if self.triggered(before, env.messages.len()) {
            let span = tracing::info_span!(
                "brute.compaction",
                brute.layer = "DefaultCompactionPipeline",
                brute.compaction.tokens_before = before,
                brute.compaction.target = self.target_for(before),
            );
            traced!(self.compact(env, before), span)?;
        }
        self.app.call(env).await
    }
}

impl<A, C, M> DefaultCompactionPipeline<A, C, M>
where
    C: Compactor<M>,
    M: Send + Sync,
{
    async fn compact(&self, env: &mut Env, before: usize) -> Result<(), Error> {
        let estimates = env
            .extensions
            .get::<TokenCache>()
            .map(|c| c.estimates().to_vec())
            .filter(|e| e.len() == env.messages.len())
            .unwrap_or_else(|| {
                env.messages
                    .iter()
                    .map(|m| self.estimator.estimate(m))
                    .collect()
            });
        // When the provider counted more than the estimator (`before` comes from its
        // reported usage), the strategies work in the provider's units: every estimate
        // is scaled by the same factor, so that what they cut matches what it counts.
        let estimated: usize = estimates.iter().sum();
        // The provider's count, when `before` is one: the event reports it beside the
        // estimates, which are what the strategies cut by.
        let reported_before = (before != estimated).then_some(before);
        let (estimates, estimator) = if estimated > 0 && before > estimated {
            let scale = before as f64 / estimated as f64;
            let scaled: Arc<dyn TokenEstimator> = Arc::new(Scaled {
                inner: self.estimator.clone(),
                scale,
            });
            let estimates = estimates.iter().map(|&e| scale_tokens(e, scale)).collect();
            (estimates, scaled)
        } else {
            (estimates, self.estimator.clone())
        };
        // Before and after in one unit: the (scaled) estimates the strategies work in.
        let estimated_before: usize = estimates.iter().sum();
        let messages = env.messages.take_out();
        let target = self.target_for(before);
        let mut cenv = CompactionEnv::with_estimates(messages, estimates, target, estimator);
        let result = self.compactor.compact(&self.summariser, &mut cenv).await;
        let after = cenv.tokens();
        let (model_calls, discarded) = cenv.take_reports();
        let CompactionEnv {
            messages,
            estimates,
            removed,
            applied,
            ..
        } = cenv;
        // A rewrite when anything was removed: a session log then replaces its file
        // (atomically) at the next durability step.
        env.messages.put_back(messages, !removed.is_empty());
        env.extensions
            .get_or_insert_with(TokenCache::default)
            .reset(estimates, &env.messages);
        // The strategies' model calls and discarded work, as the events of any call.
        for call in &model_calls {
            env.emit(Event::ModelRequest {
                messages: call.messages,
                tools: call.tools,
            });
            env.emit(Event::ModelResponse {
                message: &call.completion.message,
                usage: call.completion.usage.as_ref(),
                cost: None,
            });
        }
        for (strategy, reason) in discarded {
            let error = Error::layer(strategy, reason);
            env.emit(Event::Error {
                layer: strategy,
                error: &error,
            });
        }
        if !removed.is_empty() {
            // The provider's count covered the conversation before the cut.
            env.forget_last_call();
            let strategy = applied.join("+");
            env.emit(Event::Compacted {
                strategy: &strategy,
                removed: &removed,
                tokens_before: estimated_before,
                tokens_after: after,
                reported_before,
            });
        }
        if let Err(error) = &result {
            env.emit(Event::Error {
                layer: "DefaultCompactionPipeline",
                error,
            });
        }
        if after > self.window {
            let cause = match result {
                Err(error) => format!(" (the last strategy failed: {error})"),
                Ok(()) => String::new(),
            };
            return Err(Error::layer(
                "DefaultCompactionPipeline",
                format!(
                    "the conversation is still {after} tokens after compaction, more than the window of {} tokens{cause}",
                    self.window
                ),
            ));
        }
        Ok(())
    }
}

impl<A, C, M> std::fmt::Debug for DefaultCompactionPipeline<A, C, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DefaultCompactionPipeline")
            .field("window", &self.window)
            .field("trigger", &self.trigger)
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}
