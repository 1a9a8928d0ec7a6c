//! The event handlers of an agent, shared by the envs of its turns.

use std::sync::Arc;

use super::Env;
use crate::event::{Event, EventKind};

/// A registered event handler: see [`Agent::on`](crate::Agent::on).
pub type EventHandler = Arc<dyn Fn(&Env, &Event<'_>) + Send + Sync>;

const KINDS: usize = EventKind::ALL.len();

/// The handlers of one agent, by event kind.
#[derive(Clone, Default)]
pub(crate) struct Listeners {
    by_kind: [Vec<EventHandler>; KINDS],
}

impl Listeners {
    pub(crate) fn add(&mut self, kind: EventKind, handler: EventHandler) {
        self.by_kind[kind as usize].push(handler);
    }

    pub(crate) fn listens(&self, kind: EventKind) -> bool {
        !self.by_kind[kind as usize].is_empty()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.by_kind.iter().all(Vec::is_empty)
    }

    pub(crate) fn dispatch(&self, env: &Env, event: &Event<'_>) {
        for handler in &self.by_kind[event.kind() as usize] {
            handler(env, event);
        }
    }
}

impl Env {
    /// Adds `handler` for the events of `kinds` to this env only (the agent's handlers
    /// stay as they are): how a streamed turn hears its own events.
    pub(crate) fn listen(&mut self, kinds: &[EventKind], handler: EventHandler) {
        let listeners = Arc::make_mut(self.listeners.get_or_insert_with(Default::default));
        for &kind in kinds {
            listeners.add(kind, handler.clone());
        }
    }
}

impl Env {
    /// Sends this env's events of `kinds` to the handler `make` builds alone, until
    /// [`restore_listeners`](Env::restore_listeners): `make` is given the handlers as
    /// they were, to forward to, and they are returned (how `Guardrail` sees a
    /// reply's deltas before the caller does).
    pub(crate) fn intercept(
        &mut self,
        kinds: &[EventKind],
        make: impl FnOnce(Option<Arc<Listeners>>) -> EventHandler,
    ) -> Option<Arc<Listeners>> {
        let saved = self.listeners.clone();
        let handler = make(saved.clone());
        let mut listeners = saved.as_deref().cloned().unwrap_or_default();
        for &kind in kinds {
            listeners.by_kind[kind as usize] = vec![handler.clone()];
        }
        self.listeners = Some(Arc::new(listeners));
        saved
    }

    /// Puts back the handlers [`intercept`](Env::intercept) returned.
    pub(crate) fn restore_listeners(&mut self, saved: Option<Arc<Listeners>>) {
        self.listeners = saved;
    }
}
