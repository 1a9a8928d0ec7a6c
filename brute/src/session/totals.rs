//! The running total of a session: the tokens and money ([`Spend`]) of every model
//! call its turns made, kept by each store with the session so that it survives a
//! restart and a compaction (which rewrites the messages, not the total).
//!
//! The turn's persistence (`turn_lease.rs`) tells the lease the new total just before
//! it hands over the messages of the same durability step; the lease holds it as
//! pending and the store writes it with those messages:
//!
//! - SQLite and PostgreSQL: a row of `brute_spend` (session, JSON body), upserted in
//!   the same transaction as the messages, fenced by the lease like every write;
//! - JSONL: a sidecar `.<name>.spend` beside the session file, replaced (temp file,
//!   rename, fsync when the store syncs) right after the messages are durable, in the
//!   same store call. A crash between the two loses the last call's addition to the
//!   total, never a message.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::cost::Spend;
use crate::session::error::{SessionError, io_error};
use crate::session::lock::{parent, sibling, sync_dir};

/// The table of the database stores, in a dialect both understand.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(super) const TABLE: &str = "CREATE TABLE IF NOT EXISTS brute_spend (
    session TEXT PRIMARY KEY,
    body TEXT NOT NULL
)";

/// The statement that stores the total `$2` of session `$1` (placeholders `?` in
/// SQLite, `$` in PostgreSQL: `p` is the prefix).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(super) fn upsert(p: &str) -> String {
    format!(
        "INSERT INTO brute_spend (session, body) VALUES ({p}1, {p}2)
         ON CONFLICT (session) DO UPDATE SET body = excluded.body"
    )
}

/// The statement that reads the total of session `$1`.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(super) fn select(p: &str) -> String {
    format!("SELECT body FROM brute_spend WHERE session = {p}1")
}

/// The statement that forgets the total of session `$1`.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(super) fn delete(p: &str) -> String {
    format!("DELETE FROM brute_spend WHERE session = {p}1")
}

/// The stored form of `spend`.
pub(super) fn encode(spend: &Spend) -> String {
    // A struct of integers always serializes.
    serde_json::to_string(spend).unwrap_or_default()
}

/// The total stored as `body` for `session` (none stored: zero).
pub(super) fn decode(session: &str, body: Option<&str>) -> Result<Spend, SessionError> {
    match body {
        None => Ok(Spend::default()),
        Some(body) => serde_json::from_str(body).map_err(|source| SessionError::BadSpend {
            session: session.to_string(),
            source,
        }),
    }
}

/// The sidecar of the JSONL session file at `path`.
pub(super) fn sidecar(path: &Path) -> PathBuf {
    sibling(path, ".", ".spend")
}

/// The total stored beside the JSONL session file at `path` (none: zero).
pub(super) fn read_sidecar(path: &Path) -> Result<Spend, SessionError> {
    let side = sidecar(path);
    match fs::read_to_string(&side) {
        Ok(body) => decode(&path.display().to_string(), Some(&body)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Spend::default()),
        Err(e) => Err(io_error(&side, "read the session's running total")(e)),
    }
}

/// Replaces the total beside the JSONL session file at `path` with `spend`: a temp
/// file renamed over it, both fsynced when `sync`.
pub(super) fn write_sidecar(path: &Path, spend: &Spend, sync: bool) -> Result<(), SessionError> {
    let side = sidecar(path);
    let temp = sibling(path, ".", ".spend.tmp");
    let fail = |action| io_error(&side, action);
    let written = fs::File::create(&temp).and_then(|mut file| {
        file.write_all(encode(spend).as_bytes())?;
        if sync {
            file.sync_all()?;
        }
        Ok(())
    });
    written.map_err(fail("write the session's running total"))?;
    fs::rename(&temp, &side).map_err(fail("replace the session's running total"))?;
    if sync {
        sync_dir(&parent(path))?;
    }
    Ok(())
}

/// Removes the total beside the JSONL session file at `path`, if any.
pub(super) fn remove_sidecar(path: &Path) -> Result<(), SessionError> {
    let side = sidecar(path);
    match fs::remove_file(&side) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            Err(io_error(&side, "delete the session's running total")(e))
        }
        _ => Ok(()),
    }
}
