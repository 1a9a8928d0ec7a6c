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
//! guarantee does not depend on it. A loop of your own is covered too when its
//! stack ends in a `run` line of `brute_agent!` (a model or a closure: the terminal
//! `run` builds takes the step around every call; `tests/session/session_user_terminal_crash.rs`
//! kills one). The one stack the framework cannot see into is a `pipeline!` whose `run`
//! is a plain handler of your own, under a loop of your own: nothing of brute's runs
//! between those passes, so call `env.persist()` between them, or use brute's `Loop`. Without a persistence layer every step is one branch.
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
pub(crate) type SaveFuture<'a> = Pin<Box<dyn Future<Output = Result<(), Error>> + Send + 'a>>;

/// Where [`Env::persist`](super::Env::persist) sends the conversation's changes: the
/// persistence layer (`SessionLog`) installs one in the env for the length of a turn and
/// takes it back on the way out. Crate-private: durability is the framework's, and no
/// layer can remove or replace it; a store of your own plugs in as a `SessionStore`.
pub(crate) trait Persist: Send + Sync {
    /// Saves `changes` durably; the turn goes on only when the future is done. `spent`
    /// is what the turn's model calls have spent so far, once a call reported usage, so
    /// that the sink stores the session's running total with the same step's messages.
    /// One dynamic call per durability step.
    fn save<'a>(&'a mut self, changes: Changes<'a>, spent: Option<Spend>) -> SaveFuture<'a>;
}
