//! Sessions: where a conversation lives between turns, and `SessionLog`, the layer that
//! loads and saves it.
//!
//! - [`SessionStore`]: the trait of the stores: load, append, replace atomically, an
//!   exclusive lease for one turn, list, delete. [`Store`] is the shared handle that
//!   `SessionLog`'s `store` option takes.
//! - [`JsonlStore`]: one JSONL file per session (the default; [`SessionFile`] is one
//!   such file, with blocking I/O).
//! - `SqliteStore` (feature `sqlite`): one database file for many sessions, WAL mode.
//! - `PostgresStore` (feature `postgres`): many workers on many machines, the lease in
//!   the database.
//! - [`copy_sessions`]: moves sessions between stores.
//!
//! Which to pick: JSONL for one process or machine and sessions you read with `jq`;
//! SQLite for one machine with many sessions (one file to back up, no directory of
//! thousands of files); PostgreSQL when several worker processes or machines serve
//! the same sessions.

mod copy;
mod error;
mod file;
mod jsonl;
mod lock;
mod log;
mod pending;
mod pool;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod rows;
#[cfg(feature = "sqlite")]
mod sqlite;
mod store;
mod turn_lease;
mod validate;

pub use copy::copy_sessions;
pub use error::SessionError;
pub use file::SessionFile;
pub use jsonl::{FileLease, JsonlStore};
pub use log::{SessionId, SessionLog, SessionPath};
pub use pending::ABANDONED_APPROVAL;
#[cfg(feature = "postgres")]
pub use postgres::{PgLease, PostgresStore};
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteLease, SqliteStore};
pub use store::{Abandoned, SessionStore, Store, StoreFuture};
pub use turn_lease::CANCELLED_TOOL_CALL;
pub use validate::{INTERRUPTED_TOOL_CALL, Problem, Validation, check_history};
