//! Retention and size: how big a session and a store are, deleting sessions past an
//! age or a count, and pruning the oldest history of a session into an archive. Its
//! items are public at `brute::session`.

use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::error::BoxError;
use crate::message::{Message, Role};
pub use crate::session::validate::history_error::RetentionError;

/// The size of one session.
///
/// What "size" counts, per store:
///
/// | store | `messages` | `bytes` | `disk_bytes` (store only) |
/// |---|---|---|---|
/// | `JsonlStore` | the lines of the file | the file's length | every file of the directory |
/// | `SqliteStore` | the rows | the bytes of the rows' JSON | the database file (pages in use and free) |
/// | `PostgresStore` | the rows | the bytes of the rows' JSON | the tables with their indexes and TOAST |
/// | a store of your own | the messages loaded | their JSON lines | unknown |
///
/// A session's `updated` ([`SessionInfo::updated`]) is the time of its last write (the
/// file's modification time; in the databases, the last message written or the
/// session's creation, kept by triggers in `brute_activity`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SessionSize {
    /// The messages stored.
    pub messages: u64,
    /// Their bytes as stored (see [`SessionSize`] for what each store counts).
    pub bytes: u64,
}

impl SessionSize {
    /// The size of `messages` as JSON lines: what a store of your own reports.
    pub fn of(messages: &[Message]) -> SessionSize {
        let stored = messages.iter().filter(|m| m.role != Role::System);
        let mut size = SessionSize::default();
        for message in stored {
            size.messages += 1;
            // A message always serialises; count its line and newline.
            size.bytes += serde_json::to_string(message).map_or(0, |line| line.len() as u64 + 1);
        }
        size
    }
}

/// One stored session: its id, size and last write.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SessionInfo {
    /// The session id.
    pub id: String,
    /// Its size.
    #[serde(flatten)]
    pub size: SessionSize,
    /// When it was last written, if the store knows (a store of your own, a database
    /// session written before brute kept the time).
    #[serde(serialize_with = "unix_ms")]
    pub updated: Option<SystemTime>,
}

/// The size of a whole store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StoreSize {
    /// The sessions stored.
    pub sessions: u64,
    /// The messages of all of them.
    pub messages: u64,
    /// Their bytes as stored, summed as for [`SessionSize::bytes`].
    pub bytes: u64,
    /// What the store takes on disk, overheads included, when the store can tell.
    pub disk_bytes: Option<u64>,
}

impl StoreSize {
    /// The totals of `sessions`.
    pub fn of(sessions: &[SessionInfo]) -> StoreSize {
        StoreSize {
            sessions: sessions.len() as u64,
            messages: sessions.iter().map(|s| s.size.messages).sum(),
            bytes: sessions.iter().map(|s| s.size.bytes).sum(),
            disk_bytes: None,
        }
    }
}

/// Which sessions [`SessionStore::retain`](crate::session::SessionStore::retain) deletes: those not written for longer than
/// `max_age`, and the oldest beyond the newest `max_sessions`. A session whose lease
/// is held (a turn runs on it) is never deleted: it is reported as
/// [`skipped`](RetentionReport::skipped).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Retention {
    /// Sessions not written for longer than this are deleted.
    pub max_age: Option<Duration>,
    /// At most this many sessions are kept, the most recently written; the others
    /// are deleted, oldest first.
    pub max_sessions: Option<usize>,
    /// The time ages are measured from (default: now).
    pub now: Option<SystemTime>,
}

impl Retention {
    /// A policy that deletes nothing.
    pub fn new() -> Retention {
        Retention::default()
    }

    /// Deletes sessions not written for longer than `age`.
    pub fn max_age(mut self, age: Duration) -> Retention {
        self.max_age = Some(age);
        self
    }

    /// Keeps at most `count` sessions, the most recently written.
    pub fn max_sessions(mut self, count: usize) -> Retention {
        self.max_sessions = Some(count);
        self
    }

    /// Measures ages from `now` instead of the current time.
    pub fn now(mut self, now: SystemTime) -> Retention {
        self.now = Some(now);
        self
    }

    /// The sessions of `sessions` this policy deletes, oldest first. A session whose
    /// time is unknown is never too old, and counts as the oldest for `max_sessions`.
    pub fn victims(&self, sessions: &[SessionInfo]) -> Vec<String> {
        let mut by_age: Vec<&SessionInfo> = sessions.iter().collect();
        by_age.sort_by(|a, b| a.updated.cmp(&b.updated).then_with(|| a.id.cmp(&b.id)));
        let now = self.now.unwrap_or_else(SystemTime::now);
        let too_many = self
            .max_sessions
            .map_or(0, |max| by_age.len().saturating_sub(max));
        by_age
            .iter()
            .enumerate()
            .filter(|(i, session)| {
                let too_old = match (self.max_age, session.updated) {
                    (Some(max), Some(updated)) => {
                        now.duration_since(updated).is_ok_and(|age| age > max)
                    }
                    _ => false,
                };
                *i < too_many || too_old
            })
            .map(|(_, session)| session.id.clone())
            .collect()
    }
}

/// What [`SessionStore::retain`](crate::session::SessionStore::retain) did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RetentionReport {
    /// The sessions deleted, oldest first.
    pub deleted: Vec<String>,
    /// The sessions the policy would delete but a turn holds: left alone.
    pub skipped: Vec<String>,
    /// The sessions left in the store.
    pub kept: usize,
}

/// Where [`SessionStore::prune`](crate::session::SessionStore::prune) hands the messages it removes, before it removes
/// them: the session id and the messages, oldest first (what [`Event::Compacted`]'s
/// `removed` carries for a compaction). An error stops the prune with nothing removed.
///
/// [`Event::Compacted`]: crate::Event::Compacted
pub type Archive<'a> = dyn Fn(&str, &[Message]) -> Result<(), BoxError> + Send + Sync + 'a;

/// An archive that keeps nothing: the removed messages are gone.
pub fn discard(_session: &str, _removed: &[Message]) -> Result<(), BoxError> {
    Ok(())
}

/// The position a prune to `keep` messages cuts at: the first user message (a cut
/// there splits no tool call) after which at most `keep` messages remain, or the
/// last user message if none; `0` (nothing to cut) when no user message is found.
pub(in crate::session) fn prune_point(messages: &[Message], keep: usize) -> usize {
    if messages.len() <= keep {
        return 0;
    }
    let mut starts = (1..messages.len()).filter(|&i| messages[i].role == Role::User);
    let first_fitting = starts.clone().find(|&i| messages.len() - i <= keep);
    let Some(cut) = first_fitting.or_else(|| starts.next_back()) else {
        return 0;
    };
    // A user message never sits between a call and its result in a valid history;
    // a history that is not valid is left whole.
    if crate::session::admin::fork::check_point("", messages, cut).is_ok() {
        cut
    } else {
        0
    }
}

/// `updated` as milliseconds since the Unix epoch (JSON has no time type).
fn unix_ms<S: serde::Serializer>(time: &Option<SystemTime>, s: S) -> Result<S::Ok, S::Error> {
    match time.and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok()) {
        Some(since) => s.serialize_u64(u64::try_from(since.as_millis()).unwrap_or(u64::MAX)),
        None => s.serialize_none(),
    }
}

/// A time of the database stores (milliseconds since the Unix epoch) as a time.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn from_unix_ms(ms: Option<i64>) -> Option<SystemTime> {
    let ms = u64::try_from(ms?).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_millis(ms))
}

#[cfg(test)]
#[path = "retention_tests.rs"]
mod tests;
