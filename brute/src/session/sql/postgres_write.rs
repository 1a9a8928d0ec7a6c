//! `PostgresStore`'s writer task: appends waiting at the same time go to the database
//! in one statement and one commit, each fenced by its lease in that statement, with
//! the running totals (`brute_spend`) of the sessions that have one.

use tokio::sync::{mpsc, oneshot};

use crate::session::error::SessionError;
use crate::session::sql::lease::{DbLease, Step, database_error};
use crate::session::sql::pg_conn::Conn;

/// The most appends committed together.
const MAX_BATCH: usize = 2048;

/// One append waiting for the writer task.
pub(in crate::session) struct Append {
    pub(in crate::session) lease: DbLease,
    pub(in crate::session) bodies: Vec<String>,
    /// The lease's renewed length, in milliseconds.
    pub(in crate::session) ttl: i64,
    /// Whether the append checks its lease (always, but for the broken fence of the
    /// fault tests: `PostgresStore::__unfenced_writes_for_fault_tests_only`).
    pub(in crate::session) fenced: bool,
    /// The session's running total to store with the messages (`totals::encode`), if
    /// it changed.
    pub(in crate::session) spend: Option<String>,
    pub(in crate::session) reply: oneshot::Sender<Result<(), SessionError>>,
}

/// The appends, each stored only if its owner still holds its session's lease (which
/// the same statement renews).
const FENCED: &str = "
    WITH input AS (
        SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bigint[])
            AS t(session, owner, seq, body, ttl)
    ), sessions AS (
        INSERT INTO brute_sessions (id) SELECT DISTINCT session FROM input
        ON CONFLICT DO NOTHING
    ), renewed AS (
        UPDATE brute_leases l SET expires = now() + i.ttl * interval '1 millisecond'
        FROM (SELECT DISTINCT session, owner, ttl FROM input) i
        WHERE l.session = i.session AND l.owner = i.owner
        RETURNING l.session
    ), spent AS (
        INSERT INTO brute_spend (session, body)
        SELECT t.session, t.body FROM unnest($6::text[], $7::text[]) AS t(session, body)
        WHERE t.session IN (SELECT session FROM renewed)
        ON CONFLICT (session) DO UPDATE SET body = excluded.body
    )
    INSERT INTO brute_messages (session, seq, body)
    SELECT session, seq, body FROM input WHERE session IN (SELECT session FROM renewed)
    RETURNING session";

/// The broken fence: the appends stored whoever holds the lease, over what is stored
/// at their positions (the same parameters as [`FENCED`]).
const UNFENCED: &str = "
    WITH input AS (
        SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bigint[])
            AS t(session, owner, seq, body, ttl)
    ), sessions AS (
        INSERT INTO brute_sessions (id) SELECT DISTINCT session FROM input
        ON CONFLICT DO NOTHING
    ), spent AS (
        INSERT INTO brute_spend (session, body)
        SELECT t.session, t.body FROM unnest($6::text[], $7::text[]) AS t(session, body)
        ON CONFLICT (session) DO UPDATE SET body = excluded.body
    )
    INSERT INTO brute_messages (session, seq, body)
    SELECT session, seq, body FROM input
    ON CONFLICT (session, seq) DO UPDATE SET body = excluded.body
    RETURNING session";

/// The broken fence's trim: the messages of `$1` from `$2` on, whoever holds the
/// lease (`$3`, the owner, is ignored; the parameters are the fenced trim's).
pub(in crate::session) const UNFENCED_TRIM: &str =
    "DELETE FROM brute_messages WHERE session = $1 AND seq >= $2 AND $3::text IS NOT NULL";

/// The writer task: every waiting append in one statement, one commit.
pub(in crate::session) async fn write(conn: Conn, mut queue: mpsc::UnboundedReceiver<Append>) {
    let mut batch: Vec<Append> = Vec::new();
    while let Some(first) = queue.recv().await {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(append) => batch.push(append),
                Err(_) => break,
            }
        }
        let (fenced, unfenced): (Vec<Append>, Vec<Append>) =
            batch.drain(..).partition(|append| append.fenced);
        commit(&conn, FENCED, fenced).await;
        commit(&conn, UNFENCED, unfenced).await;
    }
}

/// Stores `batch` with `statement` and answers each append.
async fn commit(conn: &Conn, statement: &str, batch: Vec<Append>) {
    if batch.is_empty() {
        return;
    }
    let mut sessions: Vec<&str> = Vec::new();
    let mut owners: Vec<&str> = Vec::new();
    let mut seqs: Vec<i64> = Vec::new();
    let mut bodies: Vec<&str> = Vec::new();
    let mut ttls: Vec<i64> = Vec::new();
    // One total per session: a session has one append in a batch (its turn waits for
    // each), but a total upserted twice in one statement would fail them all.
    let mut totals: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
    for append in &batch {
        if let Some(spend) = &append.spend {
            totals.insert(append.lease.session.as_str(), spend.as_str());
        }
        for (i, body) in append.bodies.iter().enumerate() {
            sessions.push(append.lease.session.as_str());
            owners.push(append.lease.owner.as_str());
            seqs.push(append.lease.next + i as i64);
            bodies.push(body.as_str());
            ttls.push(append.ttl);
        }
    }
    let (spent, spends): (Vec<&str>, Vec<&str>) = totals.into_iter().unzip();
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 7] =
        [&sessions, &owners, &seqs, &bodies, &ttls, &spent, &spends];
    let result = conn.query(statement, &params).await;
    match result {
        Ok(rows) => {
            let written: std::collections::HashSet<String> = rows
                .iter()
                .filter_map(|r| r.try_get::<_, String>(0).ok())
                .collect();
            for append in batch {
                let outcome = if written.contains(&append.lease.session) {
                    Ok(())
                } else {
                    Err(append.lease.lost())
                };
                let _ = append.reply.send(outcome);
            }
        }
        Err(error) => {
            for append in batch {
                let failed = database_error(
                    "postgres",
                    Step::Append,
                    &append.lease.session,
                    error.clone(),
                );
                let _ = append.reply.send(Err(failed));
            }
        }
    }
}
