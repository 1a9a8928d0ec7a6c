//! [`Env`] itself, public at the crate root (`brute::Env`), its one path; the event
//! handlers it carries (`listeners.rs`).

pub(super) mod listeners;

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use listeners::Listeners;

use super::extensions::Extensions;
use super::persist::Persist;
use super::transcript::{Changes, Mark, Transcript};
use crate::cost::{Cost, Spend};
use crate::error::Error;
use crate::event::{Event, EventKind};
use crate::message::Message;
use crate::stop::{ExitReason, PassLimit};
use crate::tool::ToolSpec;
use crate::usage::{LastCall, Usage};

/// Everything a turn knows, passed down the stack by `&mut`.
///
/// Middleware communicate by leaving values here: the system prompt becomes a message,
/// tools are advertised in [`tools`](Env::tools), the terminal counts [`usage`](Env::usage()),
/// and typed values go in [`extensions`](Env::extensions).
///
/// ```
/// use brute::{Env, Message};
///
/// let mut env = Env::new();
/// env.messages.push(Message::user("hi"));
/// env.metadata.insert("session".into(), "abc".into());
/// env.extensions.insert(42u32);
/// assert_eq!(env.extensions.get::<u32>(), Some(&42));
/// assert!(env.should_exit.is_none());
/// assert_eq!(env.usage().total(), 0);
/// ```
#[derive(Default)]
#[non_exhaustive]
pub struct Env {
    /// The conversation so far, oldest first; every change is recorded.
    pub messages: Transcript,
    /// Tools advertised to the model on the next call.
    pub tools: Vec<ToolSpec>,
    /// Free-form JSON values for the application (ids, tags); brute's own layers keep
    /// their facts in typed fields.
    pub metadata: Map<String, Value>,
    /// Set by a layer to end the turn; loops stop at the next check.
    pub should_exit: Option<ExitReason>,
    /// How many passes a loop layer has started this turn (1 for the first).
    pub iteration: u32,
    /// Set by a guard (`MaxIterations`) when no further pass is allowed: the loop ends
    /// the turn instead of starting one (see [`PassLimit`]).
    pass_limit: Option<PassLimit>,
    /// Tokens used by the model calls of this turn, as the providers reported them.
    usage: Usage,
    /// What the provider counted on the last model call, when it reported usage.
    last_call: Option<LastCall>,
    /// What the turn's calls cost, and how many of them had a cost (see [`Env::cost`]).
    money: Money,
    /// Typed values that middleware leave for each other.
    pub extensions: Extensions,
    listeners: Option<Arc<Listeners>>,
    capture_content: bool,
    /// Whether a model terminal ran this turn (see `Agent`'s check).
    reached_terminal: bool,
    /// How many times a layer of a `brute_agent!` stack called the layer below it this
    /// turn (see `agent::watch`).
    /// Per `use` line of a `brute_agent!` stack (the first 16): how often it called
    /// the layer below this turn, and which lines are checked (see `agent/watch.rs`).
    layer_calls: LayerCalls,
    // Boxed: an env without a persistence layer stays small, and it moves every turn.
    persist: Option<Box<Persisting>>,
}

/// The money of a turn's model calls: the calls that reported usage, those of them
/// that had a price, what those cost, and the calls that reported no usage.
#[derive(Clone, Copy, Debug, Default)]
struct Money {
    with_usage: u64,
    priced: u64,
    cost: Cost,
    unreported: u64,
}

/// The persistence layer's sink and the mark of what it holds.
struct Persisting {
    sink: Box<dyn Persist>,
    saved: Mark,
}

impl Env {
    /// An empty env with no event handlers.
    pub fn new() -> Self {
        Self::default()
    }

    /// An env whose events go to `listeners` (what `Agent` does for each turn).
    #[inline]
    pub(crate) fn with_listeners(listeners: Option<Arc<Listeners>>, capture: bool) -> Self {
        Env {
            listeners,
            capture_content: capture,
            ..Self::default()
        }
    }

    /// Forgets that a terminal ran and what the layers called: a turn starts.
    #[inline]
    pub(crate) fn reset_terminal(&mut self) {
        self.reached_terminal = false;
        self.layer_calls = LayerCalls::default();
    }

    /// Records that a model terminal ran.
    #[inline]
    pub(crate) fn mark_terminal(&mut self) {
        self.reached_terminal = true;
    }

    /// The calls of each `use` line into the layer below it this turn.
    #[inline]
    pub(crate) fn layer_calls(&self) -> &LayerCalls {
        &self.layer_calls
    }

    /// The same, to count a call.
    #[inline]
    pub(crate) fn layer_calls_mut(&mut self) -> &mut LayerCalls {
        &mut self.layer_calls
    }

    /// Whether a model terminal ran since the turn started.
    #[inline]
    pub(crate) fn reached_terminal(&self) -> bool {
        self.reached_terminal
    }

    /// Sends `event` to the handlers registered with [`Agent::on`](crate::Agent::on).
    /// Costs one branch when nobody listens.
    #[inline]
    pub fn emit(&self, event: Event<'_>) {
        if let Some(listeners) = &self.listeners {
            listeners.dispatch(self, &event);
        }
    }

    /// Whether any handler listens to events of this kind; lets a layer skip building
    /// an expensive payload.
    #[inline]
    pub fn listens(&self, kind: EventKind) -> bool {
        self.listeners.as_ref().is_some_and(|l| l.listens(kind))
    }

    /// Whether traces may carry message content (off unless the agent was told so with
    /// [`Agent::capture_content`](crate::Agent::capture_content)).
    #[inline]
    pub fn captures_content(&self) -> bool {
        self.capture_content
    }

    /// The last message, if any.
    pub fn last_message(&self) -> Option<&Message> {
        self.messages.last()
    }

    /// Ends the turn at the next loop check with `reason`, unless a reason is already set.
    pub fn exit(&mut self, reason: ExitReason) {
        if self.should_exit.is_none() {
            self.should_exit = Some(reason);
        }
    }

    /// Tokens used by the model calls of this turn, as the providers reported them.
    #[inline]
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// Adds what one model call used to the turn's [`usage`](Env::usage), without
    /// recording it as the last call (a model call outside the conversation, such as a
    /// summary).
    #[inline]
    pub fn add_usage(&mut self, usage: Usage) {
        self.usage += usage;
        self.money.with_usage += 1;
    }

    /// Adds what the model call just recorded ([`record_call`](Env::record_call),
    /// [`add_usage`](Env::add_usage)) cost, when its model has a price: what a model
    /// terminal does after each call. A call recorded without its cost leaves the
    /// turn's [`cost`](Env::cost) unknown.
    #[inline]
    pub fn add_cost(&mut self, cost: Cost) {
        self.money.priced += 1;
        self.money.cost += cost;
    }

    /// Counts a model call whose provider reported no usage: its cost is unknown.
    #[inline]
    pub(crate) fn count_unreported_call(&mut self) {
        self.money.unreported += 1;
    }

    /// What the model calls of this turn cost: `None` when any call's cost is unknown
    /// (its model has no price in the [`Prices`](crate::cost::Prices) table, or its
    /// provider reported no usage), never a made-up zero.
    ///
    /// ```
    /// use brute::{Env, Usage, cost::Cost};
    ///
    /// let mut env = Env::new();
    /// assert_eq!(env.cost(), Some(Cost::ZERO));
    /// env.record_call(1, Usage::new(10, 2));
    /// assert_eq!(env.cost(), None);
    /// env.add_cost(Cost::from_micros(7));
    /// assert_eq!(env.cost(), Some(Cost::from_micros(7)));
    /// ```
    pub fn cost(&self) -> Option<Cost> {
        let m = &self.money;
        (m.unreported == 0 && m.priced >= m.with_usage).then_some(m.cost)
    }

    /// The tokens and money of this turn's calls that reported usage: what a session
    /// store adds to the session's running total.
    pub fn spend(&self) -> Spend {
        Spend {
            usage: self.usage,
            priced: self.money.cost,
            unpriced_calls: self.money.with_usage.saturating_sub(self.money.priced),
            calls: self.money.with_usage,
        }
    }

    /// Returns the turn's usage so far and starts counting again from zero.
    pub fn take_usage(&mut self) -> Usage {
        std::mem::take(&mut self.usage)
    }

    /// What the provider counted on the last model call, when it reported usage.
    #[inline]
    pub fn last_call(&self) -> Option<LastCall> {
        self.last_call
    }

    /// Records a model call whose prompt was the first `prompt_messages` messages and
    /// which used `usage`: adds it to [`usage`](Env::usage) and makes it the
    /// [`last_call`](Env::last_call). What a model terminal does after each call.
    ///
    /// ```
    /// use brute::{Env, Usage};
    ///
    /// let mut env = Env::new();
    /// env.record_call(3, Usage::new(10, 2));
    /// env.record_call(5, Usage::new(20, 1));
    /// assert_eq!(env.usage(), Usage::new(30, 3));
    /// assert_eq!(env.last_call().map(|call| (call.prompt_messages, call.usage)), Some((5, Usage::new(20, 1))));
    /// assert_eq!(env.take_usage().total(), 33);
    /// assert_eq!(env.usage().total(), 0);
    /// ```
    #[inline]
    pub fn record_call(&mut self, prompt_messages: usize, usage: Usage) {
        self.usage += usage;
        self.money.with_usage += 1;
        self.last_call = Some(LastCall {
            prompt_messages,
            usage,
        });
    }

    /// Forgets the last call's counts, when they no longer describe the conversation
    /// (compaction removed messages they covered).
    #[inline]
    pub fn forget_last_call(&mut self) {
        self.last_call = None;
    }

    /// The limit a guard set on the pass that just ran, if any (see [`PassLimit`]).
    #[inline]
    pub fn pass_limit(&self) -> Option<&PassLimit> {
        self.pass_limit.as_ref()
    }

    /// Says that the pass running is the last one `limit` allows: a guard inside a loop
    /// calls it, and the loop ends the turn rather than start another pass.
    #[inline]
    pub fn set_pass_limit(&mut self, limit: PassLimit) {
        self.pass_limit = Some(limit);
    }

    /// Takes the limit set on the pass that just ran: a loop calls it after each pass.
    #[inline]
    pub fn take_pass_limit(&mut self) -> Option<PassLimit> {
        self.pass_limit.take()
    }

    /// Installs `sink` as the persistence of this env, holding the first `recorded`
    /// messages of the record (the history it loaded), and returns the one it replaces.
    /// From now on [`Env::persist`] sends it what changed since. Crate-private: only
    /// `SessionLog` installs durability, and no layer can remove it.
    pub(crate) fn set_persist(
        &mut self,
        sink: Box<dyn Persist>,
        recorded: usize,
    ) -> Option<Box<dyn Persist>> {
        let saved = self.messages.mark_at(recorded);
        self.persist
            .replace(Box::new(Persisting { sink, saved }))
            .map(|p| p.sink)
    }

    /// Removes the persistence installed with [`Env::set_persist`] and returns it.
    pub(crate) fn take_persist(&mut self) -> Option<Box<dyn Persist>> {
        self.persist.take().map(|p| p.sink)
    }

    /// Whether a persistence layer is installed, so that [`Env::persist`] has work to
    /// do: lets a hot path skip building the step's future.
    #[inline]
    pub fn persists(&self) -> bool {
        self.persist.is_some()
    }

    /// The durability step: makes every change to the conversation since the last
    /// step durable, by handing exactly those [`Changes`] to the persistence
    /// `SessionLog` installed. The framework takes it itself (the terminal of every
    /// `run` line before and after the model call, every loop layer around its passes,
    /// `SessionLog` on the way in and out), so a layer
    /// never has to: call it to store a change *at once* (the tool pipeline does after
    /// each result). Costs one branch when no persistence is installed or nothing
    /// changed.
    #[inline]
    pub async fn persist(&mut self) -> Result<(), Error> {
        let spend = (self.money.with_usage > 0).then(|| self.spend());
        let Some(persisting) = self.persist.as_deref_mut() else {
            return Ok(());
        };
        let changes = self.messages.changes_since(persisting.saved);
        if matches!(changes, Changes::None) {
            return Ok(());
        }
        // The running total goes with the messages of the same step.
        persisting.sink.save(changes, spend).await?;
        persisting.saved = self.messages.mark();
        Ok(())
    }
}

impl fmt::Debug for Env {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Env")
            .field("messages", &self.messages)
            .field(
                "tools",
                &self.tools.iter().map(|t| &t.name).collect::<Vec<_>>(),
            )
            .field("metadata", &self.metadata)
            .field("should_exit", &self.should_exit)
            .field("iteration", &self.iteration)
            .field("usage", &self.usage)
            .field("cost", &self.cost())
            .field("extensions", &self.extensions)
            .finish_non_exhaustive()
    }
}

/// How often each of the first 16 `use` lines of a `brute_agent!` stack called the
/// layer below it this turn, and which lines are checked for it (a bit per line):
/// `agent/watch.rs` counts, `Agent` reads at the end of the turn.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LayerCalls {
    /// Calls made by line `i` into the layers below it.
    pub(crate) made: [u16; 16],
    /// Bit `i`: line `i` is a layer the check watches (`Handler::WATCHED`).
    pub(crate) watched: u32,
}

impl LayerCalls {
    /// Line `line` calls the layers below it, whose first line is watched or not.
    #[inline]
    pub(crate) fn count(&mut self, line: usize, below_watched: bool) {
        if let Some(made) = self.made.get_mut(line) {
            *made = made.saturating_add(1);
            if below_watched {
                self.watched |= 1 << (line + 1);
            }
        }
    }
}
