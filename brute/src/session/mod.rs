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
//! and an expiry, fenced writes; their lease is `DbLease`), and `lease_ttl` is a
//! property of the store value on both.
//! - [`copy_sessions`]: moves sessions between stores.
//! - Size, retention and pruning ([`retention`]); fork and rewind
//!   ([`SessionStore::fork`], [`SessionStore::rewind`]): provided by every store.
//!
//! Which to pick: JSONL for one process or machine and sessions you read with `jq`;
//! SQLite for one machine with many sessions (one file to back up, no directory of
//! thousands of files); PostgreSQL when several worker processes or machines serve
//! the same sessions.

mod boxed;
mod copy;
mod error;
mod file;
mod fork;
mod history_error;
#[cfg(feature = "sqlite")]
mod holder;
mod jsonl;
mod keyed;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod lease;
mod lock;
pub(crate) mod log;
mod pending;
#[cfg(feature = "postgres")]
mod pg_conn;
mod pool;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "postgres")]
mod postgres_size;
#[cfg(feature = "postgres")]
mod postgres_write;
pub mod retention;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod retention_db;
mod retention_fs;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod rows;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "sqlite")]
mod sqlite_size;
mod store;
mod tail;
mod totals;
mod turn_lease;
mod validate;

pub use crate::stream::pending::ABANDONED_APPROVAL;
pub use boxed::{BoxLease, BoxStore, Store};
pub use copy::copy_sessions;
pub use error::SessionError;
pub use file::SessionFile;
pub use fork::{ForkError, check_point};
pub use jsonl::{FileLease, JsonlStore};
pub use keyed::{DecisionKey, KeyedTurn, ResumeKeyed, keyed_turn};
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use lease::DbLease;
pub use log::{SessionId, SessionPath, TurnSaved};
#[cfg(feature = "postgres")]
pub use postgres::PostgresStore;
pub use retention::{Retention, RetentionReport, SessionInfo, SessionSize, StoreSize};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;
pub use store::{Abandoned, SessionStore, StoreFuture};
pub use turn_lease::CANCELLED_TOOL_CALL;
pub use validate::{INTERRUPTED_TOOL_CALL, Problem, Validation, check_history};
