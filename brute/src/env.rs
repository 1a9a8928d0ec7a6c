//! The env: the one mutable value every layer of a turn sees.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::event::{Event, EventHandlers};
use crate::message::Message;
use crate::tool::ToolSpec;

/// Everything a turn knows, passed down the stack by `&mut`.
///
/// Middleware communicate by leaving values here: the system prompt becomes a message,
/// tools are advertised in [`tools`](Env::tools), counters and ids go in
/// [`metadata`](Env::metadata), and typed values in [`extensions`](Env::extensions).
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
/// ```
#[derive(Default)]
pub struct Env {
    /// The conversation so far, oldest first.
    pub messages: Vec<Message>,
    /// Tools advertised to the model on the next call.
    pub tools: Vec<ToolSpec>,
    /// Free-form JSON values: session ids, usage, custom rules.
    pub metadata: Map<String, Value>,
    /// Set by a layer to end the turn; loops stop at the next check.
    pub should_exit: Option<ExitReason>,
    /// How many passes a loop layer has started this turn (1 for the first).
    pub iteration: u32,
    /// Typed values that middleware leave for each other.
    pub extensions: Extensions,
    events: Option<Arc<EventHandlers>>,
    // Boxed and created by the first `add_checkpoint`: an env without a session log
    // stays small, and it moves on every turn.
    durability: Option<Box<Durability>>,
}

/// The checkpoints of an env and its history revision.
#[derive(Default)]
struct Durability {
    checkpoints: Vec<(CheckpointId, Box<dyn Checkpoint>)>,
    next_checkpoint: u64,
    history_revision: u64,
}

impl Env {
    /// An empty env with no event handlers.
    pub fn new() -> Self {
        Self::default()
    }

    /// An env whose events go to `handlers` (what `Agent` does for each turn).
    #[inline]
    pub(crate) fn with_events(handlers: Option<Arc<EventHandlers>>) -> Self {
        Env {
            events: handlers,
            ..Self::default()
        }
    }

    /// Sends `event` to the handlers registered with [`Agent::on`](crate::Agent::on).
    /// Costs one branch when nobody listens.
    #[inline]
    pub fn emit(&self, event: Event<'_>) {
        if let Some(handlers) = &self.events {
            handlers.dispatch(self, &event);
        }
    }

    /// Whether any handler listens to events of this kind; lets a layer skip building
    /// an expensive payload.
    #[inline]
    pub fn listens(&self, kind: crate::event::EventKind) -> bool {
        self.events.as_ref().is_some_and(|h| h.listens(kind))
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

    /// Registers a [`Checkpoint`]: from now on every [`Env::checkpoint`] calls it, until
    /// [`Env::remove_checkpoint`] with the returned id. `SessionLog` registers its
    /// writer here on the way in, so that the layers inside it (which it cannot see)
    /// make the conversation durable as the turn runs.
    pub fn add_checkpoint(&mut self, checkpoint: impl Checkpoint + 'static) -> CheckpointId {
        let durability = self.durability.get_or_insert_with(Default::default);
        durability.next_checkpoint += 1;
        let id = CheckpointId(durability.next_checkpoint);
        durability.checkpoints.push((id, Box::new(checkpoint)));
        id
    }

    /// Unregisters the checkpoint `id` and returns it.
    pub fn remove_checkpoint(&mut self, id: CheckpointId) -> Option<Box<dyn Checkpoint>> {
        let checkpoints = &mut self.durability.as_mut()?.checkpoints;
        let index = checkpoints.iter().position(|(i, _)| *i == id)?;
        Some(checkpoints.remove(index).1)
    }

    /// Makes the conversation durable: calls every registered [`Checkpoint`] with this
    /// env. The terminal calls it before and after each model call, and a tool pipeline
    /// after each tool result, so that every message is on disk before the next model
    /// call. Costs one branch when nothing is registered.
    ///
    /// ```
    /// use brute::{Checkpoint, Env, Error, Message};
    ///
    /// /// Counts the messages it has seen.
    /// struct Count(usize);
    /// impl Checkpoint for Count {
    ///     fn save(&mut self, env: &Env) -> Result<(), Error> {
    ///         self.0 = env.messages.len();
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let mut env = Env::new();
    /// let id = env.add_checkpoint(Count(0));
    /// env.messages.push(Message::user("hi"));
    /// env.checkpoint()?;
    /// assert!(env.remove_checkpoint(id).is_some());
    /// # Ok::<(), Error>(())
    /// ```
    #[inline]
    pub fn checkpoint(&mut self) -> Result<(), crate::error::Error> {
        match &self.durability {
            Some(durability) if !durability.checkpoints.is_empty() => self.save_checkpoints(),
            _ => Ok(()),
        }
    }

    #[cold]
    fn save_checkpoints(&mut self) -> Result<(), crate::error::Error> {
        let Some(durability) = self.durability.as_mut() else {
            return Ok(());
        };
        let mut checkpoints = std::mem::take(&mut durability.checkpoints);
        let result = checkpoints.iter_mut().try_for_each(|(_, c)| c.save(self));
        // Checkpoints registered by a `save` (none should) are kept after the others.
        let durability = self.durability.get_or_insert_with(Default::default);
        checkpoints.append(&mut durability.checkpoints);
        durability.checkpoints = checkpoints;
        result
    }

    /// Records that `messages` was rewritten rather than appended to (compaction,
    /// an edit of an earlier message), so that checkpoints replace what they saved
    /// instead of appending. A layer that changes or removes messages other than by
    /// pushing calls this.
    pub fn history_rewritten(&mut self) {
        // Without a checkpoint nobody keeps a copy that could go stale; one registered
        // later starts from the history as it is then.
        if let Some(durability) = self.durability.as_mut() {
            durability.history_revision += 1;
        }
    }

    /// How many times [`Env::history_rewritten`] was called in this turn.
    pub fn history_revision(&self) -> u64 {
        self.durability.as_ref().map_or(0, |d| d.history_revision)
    }
}

/// Makes the conversation durable as a turn runs: called by [`Env::checkpoint`]
/// (see there) with the env as it is. `SessionLog`'s writer is one.
pub trait Checkpoint: Send + Sync {
    /// Saves what changed in `env` since the last call.
    fn save(&mut self, env: &Env) -> Result<(), crate::error::Error>;
}

/// The id of a registered [`Checkpoint`], for [`Env::remove_checkpoint`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CheckpointId(u64);

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
            .field("extensions", &self.extensions)
            .finish_non_exhaustive()
    }
}

/// Why a turn was ended early; readable by the caller in [`Outcome`](crate::Outcome).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExitReason {
    /// `MaxIterations` reached its limit.
    MaxIterations {
        /// The limit.
        max: u32,
    },
    /// A layer asked to stop.
    Requested {
        /// The layer that asked.
        by: String,
        /// Why.
        reason: String,
    },
}

impl fmt::Display for ExitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExitReason::MaxIterations { max } => write!(f, "reached the limit of {max} iterations"),
            ExitReason::Requested { by, reason } => write!(f, "{by}: {reason}"),
        }
    }
}

/// A type map for values middleware leave for each other, one value per type
/// (the idea of `http::Extensions`). Allocates nothing until the first insert.
#[derive(Default)]
pub struct Extensions {
    // Boxed on purpose: 8 bytes in every `Env` instead of a 48-byte `HashMap`, and no
    // allocation until the first insert. Env moves on every turn; it stays small.
    #[allow(clippy::box_collection)]
    map: Option<Box<HashMap<TypeId, Box<dyn Any + Send + Sync>>>>,
}

impl Extensions {
    /// Stores `value`, returning the previous value of the same type.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) -> Option<T> {
        self.map
            .get_or_insert_with(Default::default)
            .insert(TypeId::of::<T>(), Box::new(value))
            .and_then(|old| old.downcast().ok().map(|b: Box<T>| *b))
    }

    /// The value of type `T`, if one was stored.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.map
            .as_ref()?
            .get(&TypeId::of::<T>())
            .and_then(|b| b.downcast_ref())
    }

    /// The value of type `T`, mutably.
    pub fn get_mut<T: Send + Sync + 'static>(&mut self) -> Option<&mut T> {
        self.map
            .as_mut()?
            .get_mut(&TypeId::of::<T>())
            .and_then(|b| b.downcast_mut())
    }

    /// The value of type `T`, inserting `make()` first if there is none.
    pub fn get_or_insert_with<T: Send + Sync + 'static>(
        &mut self,
        make: impl FnOnce() -> T,
    ) -> &mut T {
        self.map
            .get_or_insert_with(Default::default)
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Box::new(make()))
            .downcast_mut()
            .expect("the entry for T holds a T")
    }

    /// Removes and returns the value of type `T`.
    pub fn remove<T: Send + Sync + 'static>(&mut self) -> Option<T> {
        self.map
            .as_mut()?
            .remove(&TypeId::of::<T>())
            .and_then(|b| b.downcast().ok().map(|b: Box<T>| *b))
    }

    /// How many values are stored.
    pub fn len(&self) -> usize {
        self.map.as_ref().map_or(0, |m| m.len())
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions")
            .field("len", &self.len())
            .finish()
    }
}
