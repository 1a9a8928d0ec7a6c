//! The two database stores and the one lease protocol they share: a row per session
//! with an owner and an expiry, fenced writes (`lease.rs`, `DbLease`); each store is a
//! small SQL dialect over it (`sqlite.rs`, `postgres.rs`), with its size and retention
//! queries (`*_size.rs`, `retention_db.rs`) and the rows both read (`rows.rs`).
//! `pg_conn.rs` replaces lost PostgreSQL connections; `holder.rs` tells a crashed SQLite
//! holder on this machine.

#[cfg(feature = "sqlite")]
pub(in crate::session) mod holder;
pub(in crate::session) mod lease;
#[cfg(feature = "postgres")]
pub(in crate::session) mod pg_conn;
#[cfg(feature = "postgres")]
pub(in crate::session) mod postgres;
#[cfg(feature = "postgres")]
mod postgres_size;
#[cfg(feature = "postgres")]
mod postgres_write;
pub(in crate::session) mod retention_db;
pub(in crate::session) mod rows;
#[cfg(feature = "sqlite")]
pub(in crate::session) mod sqlite;
#[cfg(feature = "sqlite")]
mod sqlite_size;
