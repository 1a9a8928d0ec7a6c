//! What the database stores share: messages as JSON rows, lease owners.

use std::hash::{BuildHasher, Hasher};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::message::{Message, Role};
use crate::session::error::{SessionError, db_error};

/// A lease owner unique across processes and time: the process, the time in
/// nanoseconds and 64 random bits (std's randomly keyed hasher, keyed anew each call).
pub(crate) fn new_owner() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(nanos);
    format!("{}-{nanos}-{:016x}", std::process::id(), hasher.finish())
}

/// The messages to store, each as the JSON line of the JSONL store (without its
/// newline); `system` ones are skipped.
pub(crate) fn bodies(
    store: &'static str,
    messages: &[Message],
    session: &str,
) -> Result<Vec<String>, SessionError> {
    messages
        .iter()
        .filter(|m| m.role != Role::System)
        .map(|m| {
            serde_json::to_string(m).map_err(db_error(store, || {
                format!("serialise a message of {session}")
            }))
        })
        .collect()
}

/// A stored row back to a message; `message` counts from 1.
pub(crate) fn parse(session: &str, message: usize, body: &str) -> Result<Message, SessionError> {
    serde_json::from_str(body).map_err(|source| SessionError::BadRow {
        session: session.to_string(),
        message,
        source,
    })
}
