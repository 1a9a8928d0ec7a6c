//! The durability step: how the conversation's changes reach a store while a turn runs.
//!
//! **No layer has to remember it.** The durability step is taken by code the framework
//! owns, at every point where control passes between layers that may have changed the
//! conversation, so a middleware, a tool layer or a terminal written against the
//! public contract (`brute::stack`, `brute::agent`) is durable without calling
//! anything:
//!
//! ```text
//! SessionLog ─ way in: load, install the store as the env's Persist ─ persist ─┐
//!   │                                                                          │
//!   ├─ Loop (every loop layer of brute) ─ persist before the first pass, and   │
//!   │     after every pass returns (whatever the layers inside did: a tool     │
//!   │     layer's results, a reply a hand-written layer pushed, an edit on the │
//!   │     way up)                                                              │
//!   │    │                                                                     │
//!   │    ├─ any middleware, brute's or yours: pushes, edits ─ nothing to call  │
//!   │    │                                                                     │
//!   │    └─ the terminal every `run` line builds (a model, `|env| ..`,         │
//!   │         `async |env| ..`): persist ─▶ model call ─▶ push the reply ─▶    │
//!   │         persist, so everything before the call and the reply itself are  │
//!   │         stored before any tool runs or the next call starts             │
//!   │                                                                          │
//! SessionLog ─ way up: persist (what the layers above the loop did) ───────────┘
//! ```
//!
//! Each step is [`Env::persist`](super::Env::persist): the changes since the last step,
//! as the [`Transcript`](super::Transcript) recorded them, go to the env's [`Persist`]:
//!
//! ```text
//! changes = env.messages.changes_since(saved mark)
//!   Changes::None                         ──▶ nothing (one branch)
//!   Changes::Appended(new)                ──▶ append the new messages
//!   Changes::Rewritten { from, messages } ──▶ replace what is stored from position
//!                                             `from` on (one transaction; a JSONL
//!                                             file is cut at that line, crash-safe)
//! ```
//!
//! So a message is durable before the next model call whichever layer produced it, and
//! at the latest when the layer that produced it hands the env back to a loop or to
//! `SessionLog`. [`Env::persist`](super::Env::persist) stays callable: a layer that
//! wants a message stored *at once* (the tool pipeline stores each result as soon as
//! its tool returns, so that a crash during the next tool keeps it) calls it, but the
//! guarantee does not depend on it. The one stack the framework cannot see into is a
//! hand-written handler that itself calls an inner layer many times (a loop of your
//! own) over a terminal of your own: call `env.persist()` between those calls, or use
//! brute's `Loop`. Without a persistence layer every step is one branch.
//!
//! The transcript knows exactly what changed ([`Changes`](super::Changes)), so the
//! store never guesses, and an edit of the last message (a `Tag`-style middleware on
//! the way up) rewrites that message only: the per-turn cost does not grow with the
//! session.

use std::future::Future;
use std::pin::Pin;

use super::transcript::Changes;
use crate::cost::Spend;
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
///             Changes::Rewritten { from, messages } => {
///                 self.0.truncate(from);
///                 self.0.extend(messages.iter().cloned());
///             }
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

    /// What the turn's model calls have spent so far, told just before the
    /// [`save`](Self::save) of the same durability step, so that a sink can store the
    /// session's running total with those messages (`SessionLog`'s does). Told only
    /// once a call reported usage; the default ignores it.
    fn spent(&mut self, turn: Spend) {
        let _ = turn;
    }
}
