//! The lease protocol of the database stores (SQLite and PostgreSQL), written once: the
//! lease a turn holds ([`DbLease`]), the statements in a small SQL dialect, and what
//! their results mean.
//!
//! A session's lease is a row of `brute_leases` (session, owner, expiry). Taking it
//! succeeds when there is no row, the row has expired, or the row is already ours;
//! every write renews it in the same transaction and is refused when the row is not
//! ours any more (fencing); releasing deletes our row. The two stores differ only in
//! how they run a statement (a writer thread, a network client), in their clock
//! (`expires` is milliseconds in SQLite, a timestamp in PostgreSQL) and in how they
//! insert many rows.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use crate::cost::Spend;
use crate::error::BoxError;
use crate::session::error::SessionError;

/// A session of a database store (`SqliteStore`, `PostgresStore`) held for a turn:
/// the owner of its lease row and where its next message goes.
#[derive(Debug)]
pub struct DbLease {
    pub(crate) session: String,
    pub(crate) owner: String,
    /// The position of the next message.
    pub(crate) next: i64,
    /// The messages stored through this lease and still in the history (what a
    /// [`SessionError::LeaseLost`] reports).
    pub(crate) written: usize,
    /// Whether the stored positions are `0..next`, so that position `i` is `seq = i`
    /// (always, unless something other than brute wrote the table); otherwise a
    /// rewrite from a position looks its `seq` up.
    pub(crate) dense: bool,
    /// The session's running total (as loaded, or as set since).
    pub(crate) spend: Spend,
    /// A total set and not yet stored: stored with the next write (`session/totals.rs`).
    pub(crate) pending: Option<Spend>,
}

impl DbLease {
    /// A lease of `session` by `owner`, whose `rows` stored messages end before
    /// `next`, where the next message goes.
    pub(crate) fn new(session: String, owner: String, next: i64, rows: usize) -> DbLease {
        DbLease {
            session,
            owner,
            next,
            written: 0,
            dense: i64::try_from(rows).is_ok_and(|rows| rows == next),
            spend: Spend::default(),
            pending: None,
        }
    }

    /// The session id.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// `count` messages were appended.
    pub(crate) fn appended(&mut self, count: usize) {
        self.next += count as i64;
        self.written += count;
    }

    /// The `seq` of stored position `from`, when the positions are dense (see
    /// [`dense`](Self::dense)); otherwise the store looks it up with
    /// [`Sql::seq_at`].
    pub(crate) fn seq_of(&self, from: usize) -> Option<i64> {
        self.dense.then_some(from as i64)
    }

    /// The history from `seq` on was replaced by `count` messages.
    pub(crate) fn rewritten(&mut self, seq: i64, count: usize) {
        // This lease's own messages are the last `written`; those before `seq` stay.
        let own_first = self.next - self.written as i64;
        let kept = usize::try_from(seq - own_first).unwrap_or(0);
        self.written = kept.min(self.written) + count;
        self.next = seq + count as i64;
    }

    /// A copy for a job that runs elsewhere (a writer thread).
    pub(crate) fn copy(&self) -> DbLease {
        DbLease {
            session: self.session.clone(),
            owner: self.owner.clone(),
            next: self.next,
            written: self.written,
            dense: self.dense,
            spend: self.spend,
            pending: self.pending,
        }
    }

    /// The error of a write that found the lease row taken by another owner.
    pub(crate) fn lost(&self) -> SessionError {
        SessionError::LeaseLost {
            session: self.session.clone(),
            durable: self.written,
        }
    }
}

/// The leases a store value could not give back (the database failed at the release,
/// or while the turn before it ended): session and owner. The turn had ended, so its
/// lease holds nothing; the next take of the session by the same store (a clone
/// included) takes it under that owner, which succeeds at once ("the row is already
/// ours"), instead of refusing the session as leased until the lease expires.
#[derive(Debug, Default)]
pub(crate) struct Unreleased(Mutex<HashMap<String, String>>);

impl Unreleased {
    /// `lease` could not be given back.
    pub(crate) fn remember(&self, lease: &DbLease) {
        self.lock()
            .insert(lease.session.clone(), lease.owner.clone());
    }

    /// The owner for a take of `session`: the one of a lease this store could not
    /// give back, or `fresh`.
    pub(crate) fn owner(&self, session: &str, fresh: impl FnOnce() -> String) -> String {
        self.lock().remove(session).unwrap_or_else(fresh)
    }

    /// A take of `session` by `owner` failed on the database: its lease, if this store
    /// could not give it back, is still to be taken back.
    pub(crate) fn keep(&self, session: &str, owner: String) {
        self.lock().entry(session.to_string()).or_insert(owner);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A lease length as the statements take it: milliseconds.
pub(crate) fn ttl_ms(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX)
}

/// How one database writes its statements.
pub(crate) struct Dialect {
    /// The store's name in errors (`sqlite`, `postgres`).
    pub(crate) store: &'static str,
    /// The current time, in the type of the `expires` column.
    pub(crate) now: &'static str,
    /// The current time plus the milliseconds of a placeholder (`{}`), in that type.
    pub(crate) later: &'static str,
    /// The placeholder prefix: `$` (PostgreSQL) or `?` (SQLite), numbered from 1.
    pub(crate) placeholder: &'static str,
    /// What locks the rows a query reads until its transaction ends (empty where the
    /// writer is alone anyway).
    pub(crate) for_update: &'static str,
    /// Whether the take records the session too, in one statement (a data-modifying
    /// `WITH`); otherwise [`Sql::create`] is a statement of its own.
    pub(crate) take_creates: bool,
}

/// The statements of the protocol in one dialect.
#[derive(Debug)]
pub(crate) struct Sql {
    /// The dialect's name in errors.
    pub(crate) store: &'static str,
    /// Records session `$1` (nothing if it exists), where the take does not.
    #[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
    pub(crate) create: Option<String>,
    /// Takes the lease of `$1` for owner `$2` for `$3` ms: one row when it was taken.
    pub(crate) take: String,
    /// The stored messages of `$1`: `seq`, `body`, in order.
    pub(crate) load: String,
    /// Renews the lease of `$1` held by `$2` for `$3` ms: no row when it is not ours.
    pub(crate) renew: String,
    /// The `seq` of the `$2`-th stored message of `$1` (from 0).
    pub(crate) seq_at: String,
    /// Deletes the messages of `$1` from position `$2` on, if owner `$3` holds it.
    pub(crate) trim: String,
    /// Gives the lease of `$1` held by `$2` back.
    pub(crate) release: String,
    /// A row when someone holds a lease of `$1` that has not expired.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) held: String,
    /// The three statements that delete session `$1`.
    pub(crate) delete: [String; 3],
    /// The ids of the sessions, sorted.
    pub(crate) list: String,
}

impl Sql {
    /// The statements in `dialect`.
    pub(crate) fn new(d: &Dialect) -> Sql {
        let p = |sql: &str| sql.replace('$', d.placeholder);
        let later = |param: &str| d.later.replace("{}", param);
        let create = "INSERT INTO brute_sessions (id) VALUES ($1) ON CONFLICT DO NOTHING";
        Sql {
            store: d.store,
            create: (!d.take_creates).then(|| p(create)),
            take: p(&format!(
                "{}INSERT INTO brute_leases (session, owner, expires) VALUES ($1, $2, {})
                 ON CONFLICT (session) DO UPDATE
                 SET owner = excluded.owner, expires = excluded.expires
                 WHERE brute_leases.expires < {} OR brute_leases.owner = excluded.owner",
                if d.take_creates {
                    format!("WITH s AS ({create}) ")
                } else {
                    String::new()
                },
                later("$3"),
                d.now
            )),
            load: p("SELECT seq, body FROM brute_messages WHERE session = $1 ORDER BY seq"),
            renew: p(&format!(
                "UPDATE brute_leases SET expires = {} WHERE session = $1 AND owner = $2",
                later("$3")
            )),
            seq_at: p(
                "SELECT seq FROM brute_messages WHERE session = $1 ORDER BY seq LIMIT 1 OFFSET $2",
            ),
            trim: p("DELETE FROM brute_messages WHERE session = $1 AND seq >= $2
                     AND EXISTS (SELECT 1 FROM brute_leases WHERE session = $1 AND owner = $3)"),
            release: p("DELETE FROM brute_leases WHERE session = $1 AND owner = $2"),
            held: p(&format!(
                "SELECT 1 FROM brute_leases WHERE session = $1 AND expires >= {}{}",
                d.now, d.for_update
            )),
            delete: [
                p("DELETE FROM brute_messages WHERE session = $1"),
                p("DELETE FROM brute_leases WHERE session = $1"),
                p("DELETE FROM brute_sessions WHERE id = $1"),
            ],
            list: "SELECT id FROM brute_sessions ORDER BY id".to_string(),
        }
    }

    /// The `map_err` of `step` on `session`: a [`SessionError::Database`] naming both.
    pub(crate) fn fail<E: Into<BoxError>>(
        &self,
        step: Step,
        session: &str,
    ) -> impl FnOnce(E) -> SessionError + use<E> {
        let store = self.store;
        let session = session.to_string();
        move |source| database_error(store, step, &session, source)
    }

    /// What a take that changed `rows` rows means.
    pub(crate) fn taken(&self, rows: u64, session: &str) -> Result<(), SessionError> {
        if rows == 0 {
            return Err(SessionError::Leased {
                session: session.to_string(),
            });
        }
        Ok(())
    }

    /// What a renewal that changed `rows` rows means for `lease`.
    pub(crate) fn renewed(&self, rows: u64, lease: &DbLease) -> Result<(), SessionError> {
        if rows == 0 {
            return Err(lease.lost());
        }
        Ok(())
    }
}

/// The error of `step` on `session` of `store`, caused by `source`.
pub(crate) fn database_error(
    store: &'static str,
    step: Step,
    session: &str,
    source: impl Into<BoxError>,
) -> SessionError {
    SessionError::Database {
        store,
        action: step.action(session),
        source: source.into(),
    }
}

/// A step of the protocol, as an error names it.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(not(all(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) enum Step {
    Connect,
    Setup,
    Take,
    Load,
    Renew,
    Append,
    Replace,
    Trim,
    Release,
    List,
    Delete,
    Commit,
}

impl Step {
    /// What was being done, naming `session` where there is one.
    fn action(self, session: &str) -> String {
        match self {
            Step::Connect => "connect".to_string(),
            Step::Setup => format!("set up {session}"),
            Step::Take => format!("take the lease of {session}"),
            Step::Load => format!("load session {session}"),
            Step::Renew => format!("renew the lease of {session}"),
            Step::Append => format!("append to session {session}"),
            Step::Replace => format!("rewrite session {session}"),
            Step::Trim => format!("remove a dropped turn's prompt from {session}"),
            Step::Release => format!("release the lease of {session}"),
            Step::List => "list the sessions".to_string(),
            Step::Delete => format!("delete session {session}"),
            Step::Commit => format!("commit the writes of {session}"),
        }
    }
}

/// The position after the last of `seqs` (0 for none).
pub(crate) fn next_after(last: Option<i64>) -> i64 {
    last.map_or(0, |seq| seq + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_dialect_numbers_its_placeholders_and_keeps_its_clock() {
        let sqlite = Sql::new(&Dialect {
            store: "sqlite",
            now: "NOW_MS",
            later: "(NOW_MS + {})",
            placeholder: "?",
            for_update: "",
            take_creates: false,
        });
        assert!(
            sqlite.renew.contains("expires = (NOW_MS + ?3)"),
            "{}",
            sqlite.renew
        );
        assert!(!sqlite.take.contains('$'), "{}", sqlite.take);
        assert!(sqlite.take.contains("< NOW_MS OR"), "{}", sqlite.take);
        let postgres = Sql::new(&Dialect {
            store: "postgres",
            now: "now()",
            later: "later({})",
            placeholder: "$",
            for_update: " FOR UPDATE",
            take_creates: true,
        });
        assert!(postgres.create.is_none());
        assert!(
            postgres
                .take
                .starts_with("WITH s AS (INSERT INTO brute_sessions"),
            "{}",
            postgres.take
        );
        assert!(
            postgres.held.ends_with(">= now() FOR UPDATE"),
            "{}",
            postgres.held
        );
        assert!(postgres.renew.contains("later($3)"), "{}", postgres.renew);
    }

    #[test]
    fn a_lost_lease_says_what_it_stored() {
        let mut lease = DbLease::new("s".into(), "o".into(), 4, 4);
        lease.appended(2);
        assert_eq!(lease.next, 6);
        let SessionError::LeaseLost { durable, .. } = lease.lost() else {
            panic!("LeaseLost expected");
        };
        assert_eq!(durable, 2);
    }

    #[test]
    fn a_rewrite_keeps_count_of_what_the_lease_stored() {
        let mut lease = DbLease::new("s".into(), "o".into(), 4, 4);
        assert_eq!(lease.seq_of(3), Some(3));
        lease.appended(3); // positions 4, 5, 6 are this lease's
        lease.rewritten(6, 1); // the last one edited
        assert_eq!((lease.next, lease.written), (7, 3));
        lease.rewritten(2, 1); // two of the loaded history and all of its own gone
        assert_eq!((lease.next, lease.written), (3, 1));
        lease.rewritten(0, 0);
        assert_eq!((lease.next, lease.written), (0, 0));
        // Positions written by something else than brute are looked up.
        let gaps = DbLease::new("s".into(), "o".into(), 9, 3);
        assert_eq!(gaps.seq_of(1), None);
    }

    #[test]
    fn a_lease_names_its_session_and_each_step_says_what_it_did() {
        let lease = DbLease::new("alice".into(), "o".into(), 0, 0);
        assert_eq!(lease.session(), "alice");
        let error = database_error("sqlite", Step::Trim, "alice", "disk full");
        assert_eq!(
            error.to_string(),
            "sqlite session store: cannot remove a dropped turn's prompt from alice: disk full"
        );
    }

    #[test]
    fn leases_last_their_milliseconds_and_positions_follow_the_last() {
        assert_eq!(ttl_ms(Duration::from_secs(60)), 60_000);
        assert_eq!(ttl_ms(Duration::MAX), i64::MAX);
        assert_eq!(next_after(None), 0);
        assert_eq!(next_after(Some(4)), 5);
    }
}
