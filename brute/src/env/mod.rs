//! The env: the one mutable value every layer of a turn sees, and what it is made of.
//!
//! [`Env`] holds the conversation as a [`Transcript`], which records its own changes;
//! [`Env::persist`] is the one durability step that hands those changes to the
//! persistence `SessionLog` installed (ARCHITECTURE.md, "How a message travels from the
//! model's reply to the session file", draws the route). Durability belongs to the
//! framework: no layer can remove or replace it.

mod call_index;
mod extensions;
mod persist;
pub(crate) mod state;
mod transcript;

pub use crate::stop::PassLimit;
pub use extensions::Extensions;
pub(crate) use persist::{Persist, SaveFuture};
pub(crate) use state::Env;
pub use state::listeners::EventHandler;
pub(crate) use state::listeners::Listeners;
pub use transcript::{Changes, Mark, Transcript};
