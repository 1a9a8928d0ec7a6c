//! Sessions: where a conversation lives between turns, and `SessionLog`, the layer that
//! loads and saves it.
//!
//! - [`SessionStore`]: the trait of the stores: load, append, replace atomically, an
//!   exclusive lease for one turn, list, delete. [`Store`] is the shared handle that
//!   `SessionLog`'s `store` option takes; [`BoxStore`] is any store behind one
//!   pointer, itself a store.
//! - [`JsonlStore`]: one JSONL file per session (the default; [`SessionFile`] is one
//!   such file, with blocking I/O).
//! - `SqliteStore` (feature `sqlite`): one database file for many sessions, WAL mode.
//! - `PostgresStore` (feature `postgres`): many workers on many machines, the lease in
//!   the database; its connections replace themselves when the database restarts.
//!
//! The two database stores share one lease protocol (a row per session with an owner
//! and an expiry, fenced writes), and `lease_ttl` is a property of the store value on
//! both.
//!
//! A store's lease, what [`SessionStore::open`] hands out for one turn, is named
//! through the store, `<S as SessionStore>::Lease`.
//! - [`copy_sessions`]: moves sessions between stores.
//! - Size ([`SessionSize`], [`StoreSize`]), retention ([`Retention`]) and pruning into
//!   an [`Archive`]; fork and rewind ([`SessionStore::fork`], [`SessionStore::rewind`]):
//!   provided by every store.
//!
//! Which to pick: JSONL for one process or machine and sessions you read with `jq`;
//! SQLite for one machine with many sessions (one file to back up, no directory of
//! thousands of files); PostgreSQL when several worker processes or machines serve
//! the same sessions.

mod admin;
mod boxed;
mod copy;
mod error;
mod jsonl;
mod lock;
pub(crate) mod log;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;
mod store;
mod totals;
mod validate;

pub use crate::stream::pending::ABANDONED_APPROVAL;
pub use admin::fork::{ForkError, check_point};
pub use admin::retention::{
    Archive, Retention, RetentionError, RetentionReport, SessionInfo, SessionSize, StoreSize,
    discard,
};
pub use boxed::{BoxStore, Store};
pub use copy::copy_sessions;
pub use error::SessionError;
pub use jsonl::JsonlStore;
pub use jsonl::file::SessionFile;
pub use log::keyed::{DecisionKey, KeyedTurn, ResumeKeyed, keyed_turn};
pub use log::turn_lease::CANCELLED_TOOL_CALL;
pub use log::{SessionId, SessionPath, TurnSaved};
#[cfg(feature = "postgres")]
pub use sql::postgres::PostgresStore;
#[cfg(feature = "sqlite")]
pub use sql::sqlite::SqliteStore;
pub use store::{Abandoned, SessionStore};
pub use validate::{INTERRUPTED_TOOL_CALL, Problem, Validation, check_history};
