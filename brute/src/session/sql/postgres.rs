//! `PostgresStore`: sessions in PostgreSQL, shared by many worker processes on many
//! machines, with the lease in the database.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio_postgres::Client;

use crate::cost::Spend;
use crate::message::Message;
use crate::session::admin::retention::{SessionInfo, SessionSize, StoreSize};
use crate::session::error::SessionError;
use crate::session::sql::lease::{DbLease, Dialect, Sql, Step, Unreleased, next_after, ttl_ms};
use crate::session::sql::pg_conn::{self, Conn, PgError, TxConn};
use crate::session::sql::postgres_write::{Append, UNFENCED_TRIM, write};
use crate::session::sql::retention_db;
use crate::session::sql::rows::{bodies, new_owner, parse};
use crate::session::store::{Abandoned, SessionStore};
use crate::session::totals;

/// The connections for single statements.
const SHARED: usize = 4;

/// PostgreSQL's dialect: `expires` is a timestamp, by the server's clock.
const DIALECT: Dialect = Dialect {
    store: "postgres",
    now: "now()",
    later: "(now() + {}::bigint * interval '1 millisecond')",
    placeholder: "$",
    for_update: " FOR UPDATE",
    take_creates: true,
};

/// Sessions in PostgreSQL: the scale-out store. Pick it when several worker
/// processes, on one machine or many, serve the same sessions.
///
/// Tables `brute_sessions`, `brute_messages` (one row per message, its JSON exactly as
/// the JSONL store writes it) and `brute_leases` are created on first connect. The
/// lease of a session is a row with an owner and an expiry (`lease_ttl`, renewed by
/// every write): two workers never run turns of one session at once, a killed
/// worker's lease frees itself when it expires, and every write checks the lease in
/// the same statement, so a worker whose lease expired and was taken writes nothing
/// more ([`SessionError::LeaseLost`], which says what the turn had stored).
///
/// **After a worker crashes** (SIGKILL, power loss, a lost machine) its sessions stay
/// leased until their lease expires: up to `lease_ttl` (60 s by default) after its
/// last write, during which a turn on them fails with [`SessionError::Leased`]. The
/// server cannot tell a dead worker from a slow one, so unlike `SqliteStore` on one
/// machine nothing frees them sooner; pick a shorter `lease_ttl` for a faster
/// takeover, longer than your slowest model call.
///
/// Appends are transactions (one statement), and the appends of concurrent turns are
/// committed together: a writer task takes every append waiting and stores them in one
/// statement, one commit (group commit), each with its session's running total;
/// each is durable before its future is done.
/// A rewrite from a position is one transaction (delete from that position, insert the
/// tail), whose cost is the tail's, not the session's. The connections run on the tokio
/// runtime that called [`PostgresStore::connect`] (network I/O, never blocking).
///
/// **A lost connection is replaced** (the server restarted or failed over, the
/// network dropped it): the statement that finds it lost reconnects, trying 5 times
/// over about 1.5 s (waits of 100, 200, 400 and 800 ms, on tokio's timer: build the
/// runtime with timers enabled), and fails if the server is still away; the next
/// statement tries again. So a turn that runs while the database is down fails (its
/// error names the step and the driver's error), and the next turn after it is back
/// succeeds, in the same process. A statement is never sent twice: an append whose
/// commit was cut off may or may not be stored, and its turn fails either way.
/// Leases are taken and given back with asynchronous commit (messages never are):
/// after a *crash* of the server (not a restart, which keeps every commit), a lease
/// given back in the last fraction of a second before it may come back with the
/// server, and its session then waits for that lease to expire (`lease_ttl`).
#[derive(Clone, Debug)]
pub struct PostgresStore {
    inner: Arc<Inner>,
    /// The lease length of this value (see [`PostgresStore::lease_ttl`]).
    ttl: Duration,
    /// Writes skip the lease fence: a fault test's broken fence, never set otherwise
    /// (see `__unfenced_writes_for_fault_tests_only`).
    unfenced: bool,
}

#[derive(Debug)]
struct Inner {
    /// Single statements (leases, loads), pipelined, with asynchronous commit (see
    /// `connect`); a session always uses the same one.
    shared: Vec<Conn>,
    /// Transactions, one at a time.
    transactions: TxConn,
    appends: mpsc::UnboundedSender<Append>,
    sql: Sql,
    /// The leases it could not give back, taken back by the next turn.
    unreleased: Unreleased,
}

const SCHEMA: &str = "
    SELECT pg_advisory_xact_lock(7305617724130431);
    CREATE TABLE IF NOT EXISTS brute_sessions (id TEXT PRIMARY KEY);
    CREATE TABLE IF NOT EXISTS brute_messages (
        session TEXT NOT NULL,
        seq BIGINT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (session, seq)
    );
    CREATE TABLE IF NOT EXISTS brute_leases (
        session TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        expires TIMESTAMPTZ NOT NULL
    );";

/// Leases are fenced (every write checks its lease in the same statement), so a lease
/// taken or given back need not wait for its own WAL flush: lost in a server crash, it
/// is simply not held, and the holder's next write fails with `LeaseLost`. Messages
/// are written by the other connections, with synchronous commit.
const SHARED_SETUP: &str = "SET synchronous_commit = off";

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user@host:port/db`, or
    /// `host=.. port=.. user=..`), creates the tables if missing, and starts the
    /// writer task, on the current tokio runtime. TLS is not supported: run it on a
    /// private network or through a local proxy.
    pub async fn connect(url: &str) -> Result<PostgresStore, SessionError> {
        let sql = Sql::new(&DIALECT);
        let url: Arc<str> = Arc::from(url);
        let mut transactions = pg_conn::connect(&url, Some(pg_conn::TX_SETUP))
            .await
            .map_err(sql.fail(Step::Connect, ""))?;
        create_tables(&mut transactions)
            .await
            .map_err(sql.fail(Step::Setup, "the tables"))?;
        retention_db::create_activity(&mut transactions)
            .await
            .map_err(sql.fail(Step::Setup, "the activity table"))?;
        let mut shared = Vec::with_capacity(SHARED);
        for _ in 0..SHARED {
            let client = pg_conn::connect(&url, Some(SHARED_SETUP))
                .await
                .map_err(sql.fail(Step::Connect, ""))?;
            shared.push(Conn::new(url.clone(), Some(SHARED_SETUP), client));
        }
        let writer = pg_conn::connect(&url, None)
            .await
            .map_err(sql.fail(Step::Connect, ""))?;
        let writer = Conn::new(url.clone(), None, writer);
        let (appends, queue) = mpsc::unbounded_channel();
        tokio::spawn(write(writer, queue));
        Ok(PostgresStore {
            inner: Arc::new(Inner {
                shared,
                transactions: TxConn::new(url, transactions),
                appends,
                sql,
                unreleased: Unreleased::default(),
            }),
            ttl: Duration::from_secs(60),
            unfenced: false,
        })
    }

    /// How long a lease lasts without a write (60 s by default): a worker killed
    /// mid-turn holds its sessions this long; a turn that writes nothing for longer
    /// (a very slow model call) loses its session to the next worker that asks.
    ///
    /// It is a property of this value, as for `SqliteStore::lease_ttl`: clones made
    /// before keep their own, clones made after get this one; the connections stay
    /// shared.
    pub fn lease_ttl(mut self, ttl: Duration) -> PostgresStore {
        self.ttl = ttl;
        self
    }

    /// BROKEN ON PURPOSE, for the scale-out fault tests only: this value's writes no
    /// longer check that its lease is still its own, and write over whatever another
    /// holder stored at the same positions. It exists so that a test can show that
    /// its checker catches a stale holder's writes; a store built with it loses data.
    #[doc(hidden)]
    pub fn __unfenced_writes_for_fault_tests_only(mut self) -> PostgresStore {
        self.unfenced = true;
        self
    }

    /// The connection of session `id`'s single statements.
    fn conn(&self, id: &str) -> &Conn {
        let hash = id.bytes().fold(0usize, |h, b| {
            h.wrapping_mul(31).wrapping_add(usize::from(b))
        });
        &self.inner.shared[hash % self.inner.shared.len()]
    }

    pub(in crate::session) fn sql(&self) -> &Sql {
        &self.inner.sql
    }

    /// Runs statement `text` on session `id`'s connection: the rows it changed.
    async fn execute(
        &self,
        id: &str,
        text: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<u64, PgError> {
        self.conn(id).execute(text, params).await
    }

    /// Runs query `text` on session `id`'s connection.
    pub(in crate::session) async fn query(
        &self,
        id: &str,
        text: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>, PgError> {
        self.conn(id).query(text, params).await
    }

    /// The messages of session `id` and the position after the last.
    async fn load_with_next(&self, id: &str) -> Result<(Vec<Message>, i64), SessionError> {
        let fail = || self.sql().fail(Step::Load, id);
        let rows = self
            .query(id, &self.sql().load, &[&id])
            .await
            .map_err(fail())?;
        let mut messages = Vec::with_capacity(rows.len());
        let mut last = None;
        for (i, row) in rows.iter().enumerate() {
            let (seq, body): (i64, &str) = row
                .try_get(0)
                .and_then(|seq| Ok((seq, row.try_get(1)?)))
                .map_err(|e| fail()(PgError::new(e)))?;
            messages.push(parse(id, i + 1, body)?);
            last = Some(seq);
        }
        Ok((messages, next_after(last)))
    }

    /// Runs `body` in a transaction on the transaction connection (`step` of
    /// `session` names it in errors).
    async fn transaction<T>(
        &self,
        step: Step,
        session: &str,
        body: impl AsyncFnOnce(
            &tokio_postgres::Transaction<'_>,
        ) -> Result<Result<T, SessionError>, tokio_postgres::Error>,
    ) -> Result<T, SessionError> {
        self.inner
            .transactions
            .run(body)
            .await
            .map_err(self.sql().fail(step, session))?
    }
}

/// Creates the tables if missing, in one transaction.
async fn create_tables(client: &mut Client) -> Result<(), PgError> {
    let setup = client.transaction().await?;
    setup.batch_execute(SCHEMA).await?;
    setup.batch_execute(totals::TABLE).await?;
    setup.commit().await?;
    Ok(())
}

/// Where [`PostgresStore::replace_from`] starts: a stored position, or a `seq`.
#[derive(Clone, Copy)]
enum Start {
    Position(usize),
    Seq(i64),
}

impl PostgresStore {
    /// One transaction: the lease renewed, the messages from `start` on deleted,
    /// `bodies` inserted there, and the session's running total stored if one was set
    /// on the lease (`session/totals.rs`).
    async fn replace_from(
        &self,
        lease: &mut DbLease,
        start: Start,
        bodies: Vec<String>,
    ) -> Result<(), SessionError> {
        let sql = self.sql();
        let ttl = ttl_ms(self.ttl);
        let held = &*lease;
        let spend = held.pending.as_ref().map(totals::encode);
        let upsert = totals::upsert("$");
        let seq = self
            .transaction(Step::Replace, &lease.session, async |tx| {
                let renewed = tx
                    .execute(&sql.renew, &[&held.session, &held.owner, &ttl])
                    .await?;
                if let Err(lost) = sql.renewed(renewed, held)
                    && !self.unfenced
                {
                    return Ok(Err(lost));
                }
                let seq = match (start, start_seq(held, start)) {
                    (_, Some(seq)) => seq,
                    (Start::Position(from), None) => tx
                        .query_opt(&sql.seq_at, &[&held.session, &(from as i64)])
                        .await?
                        .map(|row| row.try_get(0))
                        .transpose()?
                        .unwrap_or(held.next),
                    (Start::Seq(seq), None) => seq,
                };
                let trim = if self.unfenced { UNFENCED_TRIM } else { &sql.trim };
                tx.execute(trim, &[&held.session, &seq, &held.owner])
                    .await?;
                tx.execute(
                    "INSERT INTO brute_messages (session, seq, body)
                     SELECT $1, $3 + ord - 1, body FROM unnest($2::text[]) WITH ORDINALITY AS t(body, ord)",
                    &[&held.session, &bodies, &seq],
                )
                .await?;
                if let Some(spend) = &spend {
                    tx.execute(&upsert, &[&held.session, spend]).await?;
                }
                Ok(Ok(seq))
            })
            .await?;
        lease.rewritten(seq, bodies.len());
        lease.pending = None;
        Ok(())
    }
}

/// The `seq` where `start` is, when known without a query.
fn start_seq(lease: &DbLease, start: Start) -> Option<i64> {
    match start {
        Start::Position(from) => lease.seq_of(from),
        Start::Seq(seq) => Some(seq),
    }
}

impl SessionStore for PostgresStore {
    type Lease = DbLease;

    async fn open(&self, id: &str) -> Result<(DbLease, Vec<Message>), SessionError> {
        // A lease this store could not give back is taken back under its owner.
        let owner = self.inner.unreleased.owner(id, new_owner);
        let ttl = ttl_ms(self.ttl);
        let sql = self.sql();
        // The take records the session too (`take_creates`).
        let taken = match self.execute(id, &sql.take, &[&id, &owner, &ttl]).await {
            Ok(taken) => taken,
            Err(error) => {
                self.inner.unreleased.keep(id, owner);
                return Err(sql.fail(Step::Take, id)(error));
            }
        };
        sql.taken(taken, id)?;
        let (messages, next) = self.load_with_next(id).await?;
        let rows = messages.len();
        let mut lease = DbLease::new(id.to_string(), owner, next, rows);
        lease.spend = self.load_spend(id).await?;
        Ok((lease, messages))
    }

    async fn append(&self, lease: &mut DbLease, messages: &[Message]) -> Result<(), SessionError> {
        let bodies = bodies("postgres", messages, &lease.session)?;
        if bodies.is_empty() {
            return Ok(());
        }
        let count = bodies.len();
        if self.unfenced && lease.pending.is_some() {
            // The fault tests' broken fence writes as an unfenced holder did before
            // totals joined the batch: from its position on, over what is there (so a
            // stale holder's write always destroys what the new holder stored).
            let next = lease.next;
            return self.replace_from(lease, Start::Seq(next), bodies).await;
        }
        // With the session's running total, if it changed: the writer stores both in
        // its batch's one statement and commit, with the other sessions' appends.
        let (reply, result) = oneshot::channel();
        self.inner
            .appends
            .send(Append {
                lease: lease.copy(),
                bodies,
                ttl: ttl_ms(self.ttl),
                fenced: !self.unfenced,
                spend: lease.pending.as_ref().map(totals::encode),
                reply,
            })
            .map_err(|_| SessionError::WriterGone { store: "postgres" })?;
        result
            .await
            .map_err(|_| SessionError::WriterGone { store: "postgres" })??;
        lease.appended(count);
        lease.pending = None;
        Ok(())
    }

    /// One transaction: the lease renewed, the messages from position `from` on
    /// deleted, the tail inserted. Its cost is the tail's, not the session's.
    async fn rewrite(
        &self,
        lease: &mut DbLease,
        from: usize,
        messages: &[Message],
    ) -> Result<(), SessionError> {
        let bodies = bodies("postgres", messages, &lease.session)?;
        self.replace_from(lease, Start::Position(from), bodies)
            .await
    }

    /// Spawns the append and the release on the current tokio runtime (the
    /// connections need it); without one the lease expires after its ttl.
    fn abandon(&self, mut lease: DbLease, ending: Abandoned) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let store = self.clone();
        runtime.spawn(async move {
            match ending {
                Abandoned::Append(messages) => {
                    let _ = store.append(&mut lease, &messages).await;
                }
                Abandoned::RemoveLast(n) => {
                    // Fenced by the lease, as every write.
                    let from = lease.next - n as i64;
                    let trimmed = store
                        .execute(
                            &lease.session,
                            &store.sql().trim,
                            &[&lease.session, &from, &lease.owner],
                        )
                        .await;
                    if let Err(error) =
                        trimmed.map_err(store.sql().fail(Step::Trim, &lease.session))
                    {
                        tracing::warn!("{error}; the next turn starts after the unanswered prompt");
                    }
                }
                Abandoned::Nothing => {}
            }
            let _ = store.release(lease).await;
        });
    }

    /// A lease that cannot be given back (the database is away) is taken back by the
    /// next turn of the session on this store (or a clone), at once.
    async fn release(&self, mut lease: DbLease) -> Result<(), SessionError> {
        if lease.pending.is_some() {
            let next = lease.next;
            if let Err(error) = self
                .replace_from(&mut lease, Start::Seq(next), Vec::new())
                .await
            {
                self.inner.unreleased.remember(&lease);
                return Err(error);
            }
        }
        let sql = self.sql();
        let released = self
            .execute(
                &lease.session,
                &sql.release,
                &[&lease.session, &lease.owner],
            )
            .await;
        if released.is_err() {
            self.inner.unreleased.remember(&lease);
        }
        released.map_err(sql.fail(Step::Release, &lease.session))?;
        Ok(())
    }

    async fn load(&self, id: &str) -> Result<Vec<Message>, SessionError> {
        Ok(self.load_with_next(id).await?.0)
    }

    async fn list(&self) -> Result<Vec<String>, SessionError> {
        let sql = self.sql();
        let rows = self
            .query("", &sql.list, &[])
            .await
            .map_err(sql.fail(Step::List, ""))?;
        rows.iter()
            .map(|r| r.try_get(0))
            .collect::<Result<_, _>>()
            .map_err(|e| sql.fail(Step::List, "")(PgError::new(e)))
    }

    async fn delete(&self, id: &str) -> Result<(), SessionError> {
        let sql = self.sql();
        self.transaction(Step::Delete, id, async |tx| {
            if tx.query_opt(&sql.held, &[&id]).await?.is_some() {
                return Ok(Err(SessionError::Leased {
                    session: id.to_string(),
                }));
            }
            for statement in &sql.delete {
                tx.execute(statement, &[&id]).await?;
            }
            tx.execute(&totals::delete("$"), &[&id]).await?;
            Ok(Ok(()))
        })
        .await
    }

    /// The rows of the session and the bytes of their JSON.
    async fn size(&self, id: &str) -> Result<SessionSize, SessionError> {
        self.measure(id).await
    }

    async fn sessions(&self) -> Result<Vec<SessionInfo>, SessionError> {
        self.session_infos().await
    }

    async fn store_size(&self) -> Result<StoreSize, SessionError> {
        self.measure_store().await
    }

    fn spend(&self, lease: &DbLease) -> Spend {
        lease.spend
    }

    fn set_spend(&self, lease: &mut DbLease, spend: Spend) {
        lease.spend = spend;
        lease.pending = Some(spend);
    }

    async fn load_spend(&self, id: &str) -> Result<Spend, SessionError> {
        let sql = self.sql();
        let rows = self
            .query(id, &totals::select("$"), &[&id])
            .await
            .map_err(sql.fail(Step::Load, id))?;
        let body: Option<&str> = match rows.first() {
            Some(row) => Some(
                row.try_get(0)
                    .map_err(|e| sql.fail(Step::Load, id)(PgError::new(e)))?,
            ),
            None => None,
        };
        totals::decode(id, body)
    }
}
