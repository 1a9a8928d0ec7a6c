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
