//! The durability step: how the conversation's changes reach a store while a turn runs.
//!
//! The route a message travels, from the model's reply to the session file:
//!
//! ```text
//! model reply ──▶ Terminal: env.messages.push(reply); env.persist().await
//! tool result ──▶ tool pipeline: env.messages.push(result); env.persist().await
//!                    │
//!                    ▼  Env::persist: changes = env.messages.changes_since(saved mark)
//!                 the env's Persist (installed by SessionLog for the turn)
//!                    │  Changes::Appended(new) ──▶ append the new lines
//!                    ▼  Changes::Rewritten(all) ──▶ replace the file atomically
//!                 session file
//! ```
//!
//! The transcript knows exactly what changed ([`Changes`](super::Changes)), so the
//! store never guesses. Without a persistence layer, [`Env::persist`](super::Env::persist)
//! is one branch.

use std::future::Future;
use std::pin::Pin;

use super::transcript::Changes;
use crate::error::Error;

/// A boxed future of a [`Persist::save`].
pub type SaveFuture<'a> = Pin<Box<dyn Future<Output = Result<(), Error>> + Send + 'a>>;

/// Where [`Env::persist`](super::Env::persist) sends the conversation's changes: a
/// persistence layer (`SessionLog`) installs one in the env for the length of a turn
/// with [`Env::set_persist`](super::Env::set_persist), and takes it back on the way
/// out.
///
/// ```
/// use brute::env::{Changes, Persist, SaveFuture};
/// use brute::{Env, Message};
///
/// /// Keeps the record in memory.
/// #[derive(Default)]
/// struct Memory(Vec<Message>);
///
/// impl Persist for Memory {
///     fn save<'a>(&'a mut self, changes: Changes<'a>) -> SaveFuture<'a> {
///         match changes {
///             Changes::None => {}
///             Changes::Appended(new) => self.0.extend(new.iter().cloned()),
///             Changes::Rewritten(all) => self.0 = all.to_vec(),
///         }
///         Box::pin(async { Ok(()) })
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let mut env = Env::new();
/// env.messages.push(Message::user("hi"));
/// env.set_persist(Box::new(Memory::default()), 0);
/// env.persist().await?;
/// let saved = env.take_persist().expect("installed above");
/// # let _ = saved;
/// # Ok::<(), brute::Error>(()) }).unwrap();
/// ```
pub trait Persist: Send + Sync {
    /// Saves `changes` durably; the turn goes on only when the future is done.
    fn save<'a>(&'a mut self, changes: Changes<'a>) -> SaveFuture<'a>;
}
