//! `SqliteStore`: many sessions in one SQLite database file (WAL mode), written by one
//! thread that commits the writes of concurrent turns together.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};
use tokio::sync::oneshot;

use crate::cost::Spend;
use crate::message::Message;
use crate::session::admin::retention::{SessionInfo, SessionSize, StoreSize};
use crate::session::error::SessionError;
use crate::session::sql::holder::Holder;
use crate::session::sql::lease::{DbLease, Dialect, Sql, Step, Unreleased, next_after, ttl_ms};
use crate::session::sql::retention_db;
use crate::session::sql::rows::{bodies, parse};
use crate::session::store::{Abandoned, SessionStore};
use crate::session::totals;

/// The commit of a batch, shared by its requests.
type Committed = Result<(), Arc<rusqlite::Error>>;

/// The work of one request inside the batch's transaction; its reply is sent once the
/// transaction is committed (or failed).
type Job = Box<dyn FnOnce(&Connection) -> Box<dyn FnOnce(Committed) + Send> + Send>;

/// The most requests committed together.
const MAX_BATCH: usize = 1024;

/// Sessions in one SQLite database file: pick it for one machine with many sessions
/// (one file to back up, no directory of thousands of files), or several processes of
/// one machine sharing sessions.
///
/// The database is in WAL mode with `synchronous = FULL` (every commit is fsynced).
/// One writer thread per store owns the connection: it takes every request waiting,
/// runs them in one transaction (each in a savepoint, so one failure does not undo
/// the others) and commits once: concurrent turns share one fsync (group commit), and
/// each is durable before its future is done. Nothing runs on the async runtime.
///
/// The lease is a row (`brute_leases`) with an owner and an expiry (`lease_ttl`,
/// renewed by every write); a write whose lease expired and was taken fails with
/// [`SessionError::LeaseLost`]. A process killed mid-turn frees its sessions at once
/// on the same machine (Linux): each store holds an OS lock on a file of its own in
/// `<db>-owners/` beside the database, and a lease whose owner's lock is free (the
/// process is gone) is taken over as an expired one is (fenced, its dangling calls
/// repaired). A lease of a live process is refused; one of another machine (a shared
/// volume) or of a system without a boot id waits for its expiry. Do not remove that
/// folder while processes use the database.
///
/// ```
/// use brute::session::{SessionStore, SqliteStore};
/// use brute::Message;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// # let dir = std::env::temp_dir().join(format!("brute-doc-sqlite-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// let store = SqliteStore::open(dir.join("sessions.db"))?;
/// let (mut lease, history) = store.open("alice").await?;
/// assert!(history.is_empty());
/// store.append(&mut lease, &[Message::user("hi")]).await?;
/// store.release(lease).await?;
/// assert_eq!(store.load("alice").await?, [Message::user("hi")]);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), brute::session::SessionError>(()) }).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct SqliteStore {
    queue: Sender<Job>,
    path: PathBuf,
    /// The protocol's statements in SQLite's dialect.
    sql: Arc<Sql>,
    /// This store's lock beside the database, whose lease owners it makes; the writer
    /// thread keeps it until its last job is done.
    holder: Arc<Holder>,
    /// The leases it could not give back, taken back by the next turn.
    unreleased: Arc<Unreleased>,
    ttl: Duration,
}

/// The owner of the lease of `?1` that has not expired.
const LIVE_OWNER: &str = "SELECT owner FROM brute_leases WHERE session = ?1 AND expires >= CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";

/// Takes the lease of `?1` from the gone owner `?4` for owner `?2` for `?3` ms.
const TAKE_OVER: &str = "UPDATE brute_leases SET owner = ?2, expires = (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) + ?3) WHERE session = ?1 AND owner = ?4";

/// SQLite's dialect: `expires` is milliseconds since the epoch, by SQLite's clock.
const DIALECT: Dialect = Dialect {
    store: "sqlite",
    now: "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
    later: "(CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) + {})",
    placeholder: "?",
    for_update: "",
    take_creates: false,
};

impl SqliteStore {
    /// Opens (or creates) the database at `path` and starts its writer thread.
    pub fn open(path: impl Into<PathBuf>) -> Result<SqliteStore, SessionError> {
        let path = path.into();
        let sql = Sql::new(&DIALECT);
        let where_ = path.display().to_string();
        let conn = Connection::open(&path).map_err(sql.fail(Step::Setup, &where_))?;
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = FULL;
             PRAGMA busy_timeout = 10000;
             CREATE TABLE IF NOT EXISTS brute_sessions (
                 id TEXT PRIMARY KEY
             ) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS brute_messages (
                 session TEXT NOT NULL,
                 seq INTEGER NOT NULL,
                 body TEXT NOT NULL,
                 PRIMARY KEY (session, seq)
             ) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS brute_leases (
                 session TEXT PRIMARY KEY,
                 owner TEXT NOT NULL,
                 expires INTEGER NOT NULL
             ) WITHOUT ROWID;",
        )
        .and_then(|()| conn.execute_batch(totals::TABLE))
        .map_err(sql.fail(Step::Setup, &where_))?;
        conn.execute_batch(retention_db::SQLITE_SCHEMA)
            .map_err(sql.fail(Step::Setup, &where_))?;
        let holder = Arc::new(Holder::new(&path));
        let kept = holder.clone();
        let (queue, jobs) = mpsc::channel();
        thread::Builder::new()
            .name("brute-sqlite-writer".into())
            .spawn(move || {
                work(&conn, &jobs);
                drop(kept);
            })
            .map_err(sql.fail(Step::Setup, "the writer thread"))?;
        Ok(SqliteStore {
            queue,
            path,
            sql: Arc::new(sql),
            holder,
            unreleased: Arc::default(),
            ttl: Duration::from_secs(60),
        })
    }

    /// How long a lease lasts without a write (60 s by default): a process killed
    /// mid-turn on another machine (or where its lock cannot tell) holds its sessions
    /// this long; a turn that writes nothing for longer
    /// (a very slow model call) loses its session to the next worker that asks.
    ///
    /// It is a property of this value: clones made before keep their own, clones made
    /// after get this one (as `PostgresStore::lease_ttl`).
    pub fn lease_ttl(mut self, ttl: Duration) -> SqliteStore {
        self.ttl = ttl;
        self
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `job` in the writer thread's next transaction and gives back its result
    /// once that transaction is committed.
    pub(in crate::session) fn run<R: Send + 'static>(
        &self,
        session: &str,
        job: impl FnOnce(&Connection, &Sql) -> Result<R, SessionError> + Send + 'static,
    ) -> impl Future<Output = Result<R, SessionError>> + Send + 'static {
        let (reply, result) = oneshot::channel();
        let sql = self.sql.clone();
        let session = session.to_string();
        let job: Job = Box::new(move |conn| {
            let done = in_savepoint(conn, &sql, |conn| job(conn, &sql));
            Box::new(move |committed: Committed| {
                let outcome = match (done, committed) {
                    (Ok(value), Ok(())) => Ok(value),
                    (Err(e), _) => Err(e),
                    (Ok(_), Err(e)) => Err(sql.fail(Step::Commit, &session)(e)),
                };
                let _ = reply.send(outcome);
            })
        });
        let sent = self.queue.send(job).is_ok();
        async move {
            if !sent {
                return Err(SessionError::WriterGone { store: "sqlite" });
            }
            result
                .await
                .map_err(|_| SessionError::WriterGone { store: "sqlite" })?
        }
    }

    /// Queues `job` without waiting for it (from synchronous code): it is sent when
    /// made, and dropping its future only drops the reply.
    fn queue(
        &self,
        session: &str,
        job: impl FnOnce(&Connection, &Sql) -> Result<(), SessionError> + Send + 'static,
    ) {
        drop(self.run(session, job));
    }
}

/// Runs `job` in a savepoint: undone alone when it fails.
fn in_savepoint<R>(
    conn: &Connection,
    sql: &Sql,
    job: impl FnOnce(&Connection) -> Result<R, SessionError>,
) -> Result<R, SessionError> {
    conn.execute_batch("SAVEPOINT job")
        .map_err(sql.fail(Step::Setup, "a savepoint"))?;
    let result = job(conn);
    let end = if result.is_ok() {
        "RELEASE job"
    } else {
        "ROLLBACK TO job; RELEASE job"
    };
    conn.execute_batch(end)
        .map_err(sql.fail(Step::Setup, "a savepoint"))?;
    result
}

/// The writer thread: every waiting request in one transaction, one commit.
fn work(conn: &Connection, jobs: &Receiver<Job>) {
    let mut batch = Vec::new();
    let mut replies = Vec::new();
    while let Ok(first) = jobs.recv() {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let begun = conn.execute_batch("BEGIN IMMEDIATE").map_err(Arc::new);
        for job in batch.drain(..) {
            replies.push(job(conn));
        }
        let committed = begun.and_then(|()| {
            conn.execute_batch("COMMIT").map_err(|e| {
                let _ = conn.execute_batch("ROLLBACK");
                Arc::new(e)
            })
        });
        for reply in replies.drain(..) {
            reply(committed.clone());
        }
    }
}

/// Runs statement `text` with `params`: the number of rows it changed.
fn execute(
    conn: &Connection,
    text: &str,
    params: impl rusqlite::Params,
) -> Result<u64, rusqlite::Error> {
    conn.prepare_cached(text)
        .and_then(|mut s| s.execute(params))
        .map(|rows| rows as u64)
}

/// The messages of `session` and the position after the last.
fn load(conn: &Connection, sql: &Sql, session: &str) -> Result<(Vec<Message>, i64), SessionError> {
    let fail = || sql.fail(Step::Load, session);
    let mut statement = conn.prepare_cached(&sql.load).map_err(fail())?;
    let rows = statement
        .query_map([session], |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
        })
        .map_err(fail())?;
    let mut messages = Vec::new();
    let mut last = None;
    for (i, row) in rows.enumerate() {
        let (seq, body) = row.map_err(fail())?;
        messages.push(parse(session, i + 1, &body)?);
        last = Some(seq);
    }
    Ok((messages, next_after(last)))
}

/// Checks that `lease` still holds its session and renews it.
fn renew(conn: &Connection, sql: &Sql, lease: &DbLease, ttl: i64) -> Result<(), SessionError> {
    let rows = execute(conn, &sql.renew, params![lease.session, lease.owner, ttl])
        .map_err(sql.fail(Step::Renew, &lease.session))?;
    sql.renewed(rows, lease)
}

/// Inserts `bodies` into `lease`'s session from position `from`.
fn insert(
    conn: &Connection,
    sql: &Sql,
    lease: &DbLease,
    from: i64,
    bodies: &[String],
) -> Result<(), SessionError> {
    let fail = || sql.fail(Step::Append, &lease.session);
    let mut statement = conn
        .prepare_cached("INSERT INTO brute_messages (session, seq, body) VALUES (?1, ?2, ?3)")
        .map_err(fail())?;
    for (i, body) in bodies.iter().enumerate() {
        statement
            .execute(params![lease.session, from + i as i64, body])
            .map_err(fail())?;
    }
    Ok(())
}

/// The owner of the lease of `session` that has not expired, if any.
fn live_owner(conn: &Connection, session: &str) -> Result<Option<String>, rusqlite::Error> {
    conn.prepare_cached(LIVE_OWNER)?
        .query_row([session], |row| row.get(0))
        .optional()
}

/// Takes the lease of `session` for `owner` if its holder is provably gone from this
/// machine: whether it was taken.
fn take_over(
    conn: &Connection,
    holder: &Holder,
    session: &str,
    owner: &str,
    ttl: i64,
) -> Result<bool, rusqlite::Error> {
    let Some(held_by) = live_owner(conn, session)? else {
        return Ok(false);
    };
    if !holder.gone(&held_by) {
        return Ok(false);
    }
    let taken = execute(conn, TAKE_OVER, params![session, owner, ttl, held_by])? == 1;
    if taken {
        tracing::info!(
            session,
            "took over the SQLite lease of a process that is gone"
        );
    }
    Ok(taken)
}

/// Gives `lease` back.
fn release(conn: &Connection, sql: &Sql, lease: &DbLease) -> Result<(), SessionError> {
    execute(conn, &sql.release, params![lease.session, lease.owner])
        .map_err(sql.fail(Step::Release, &lease.session))?;
    Ok(())
}

impl SessionStore for SqliteStore {
    type Lease = DbLease;

    async fn open(&self, id: &str) -> Result<(DbLease, Vec<Message>), SessionError> {
        let session = id.to_string();
        let ttl = ttl_ms(self.ttl);
        let holder = self.holder.clone();
        let unreleased = self.unreleased.clone();
        self.run(id, move |conn, sql| {
            // A lease this store could not give back is taken back under its owner.
            let owner = unreleased.owner(&session, || holder.owner());
            let mut taken = match execute(conn, &sql.take, params![session, owner, ttl]) {
                Ok(taken) => taken,
                Err(error) => {
                    unreleased.keep(&session, owner);
                    return Err(sql.fail(Step::Take, &session)(error));
                }
            };
            if taken == 0 {
                taken = take_over(conn, &holder, &session, &owner, ttl)
                    .map_err(sql.fail(Step::Take, &session))?
                    .into();
            }
            sql.taken(taken, &session)?;
            if let Some(create) = &sql.create {
                execute(conn, create, [&session]).map_err(sql.fail(Step::Take, &session))?;
            }
            let (messages, next) = load(conn, sql, &session)?;
            let rows = messages.len();
            let mut lease = DbLease::new(session, owner, next, rows);
            lease.spend = load_spend(conn, sql, &lease.session)?;
            Ok((lease, messages))
        })
        .await
    }

    async fn append(&self, lease: &mut DbLease, messages: &[Message]) -> Result<(), SessionError> {
        let bodies = bodies("sqlite", messages, &lease.session)?;
        if bodies.is_empty() {
            return Ok(());
        }
        let held = lease.copy();
        let count = bodies.len();
        let ttl = ttl_ms(self.ttl);
        self.run(&lease.session, move |conn, sql| {
            renew(conn, sql, &held, ttl)?;
            insert(conn, sql, &held, held.next, &bodies)?;
            store_spend(conn, sql, &held)
        })
        .await?;
        lease.appended(count);
        lease.pending = None;
        Ok(())
    }

    /// One transaction (a savepoint of the writer's batch): the lease renewed, the
    /// messages from position `from` on deleted, the tail inserted. Its cost is the
    /// tail's, not the session's.
    async fn rewrite(
        &self,
        lease: &mut DbLease,
        from: usize,
        messages: &[Message],
    ) -> Result<(), SessionError> {
        let bodies = bodies("sqlite", messages, &lease.session)?;
        let held = lease.copy();
        let count = bodies.len();
        let ttl = ttl_ms(self.ttl);
        let seq = self
            .run(&lease.session, move |conn, sql| {
                renew(conn, sql, &held, ttl)?;
                let fail = || sql.fail(Step::Replace, &held.session);
                let seq = match held.seq_of(from) {
                    Some(seq) => seq,
                    None => conn
                        .prepare_cached(&sql.seq_at)
                        .and_then(|mut q| {
                            q.query_row(params![held.session, from as i64], |row| row.get(0))
                                .optional()
                        })
                        .map_err(fail())?
                        .unwrap_or(held.next),
                };
                execute(conn, &sql.trim, params![held.session, seq, held.owner]).map_err(fail())?;
                insert(conn, sql, &held, seq, &bodies)?;
                store_spend(conn, sql, &held)?;
                Ok(seq)
            })
            .await?;
        lease.rewritten(seq, count);
        lease.pending = None;
        Ok(())
    }

    /// Queues the append and the release on the writer thread, ahead of any later
    /// request (the next turn's `open` among them), without waiting for them.
    fn abandon(&self, lease: DbLease, ending: Abandoned) {
        let held = lease.copy();
        let ttl = ttl_ms(self.ttl);
        match ending {
            Abandoned::Append(messages) => {
                if let Ok(bodies) = bodies("sqlite", &messages, &lease.session) {
                    self.queue(&lease.session, move |conn, sql| {
                        renew(conn, sql, &held, ttl)?;
                        insert(conn, sql, &held, held.next, &bodies)
                    });
                }
            }
            Abandoned::RemoveLast(n) => {
                self.queue(&lease.session, move |conn, sql| {
                    // Fenced by the lease, as every write.
                    let from = held.next - n as i64;
                    execute(conn, &sql.trim, params![held.session, from, held.owner])
                        .map_err(sql.fail(Step::Trim, &held.session))?;
                    Ok(())
                });
            }
            Abandoned::Nothing => {}
        }
        let session = lease.session.clone();
        self.queue(&session, move |conn, sql| {
            if lease.pending.is_some() {
                renew(conn, sql, &lease, ttl)?;
                store_spend(conn, sql, &lease)?;
            }
            release(conn, sql, &lease)
        });
    }

    /// A lease that cannot be given back is taken back by the next turn of the session
    /// on this store (or a clone), at once.
    async fn release(&self, lease: DbLease) -> Result<(), SessionError> {
        let session = lease.session.clone();
        let ttl = ttl_ms(self.ttl);
        let unreleased = self.unreleased.clone();
        self.run(&session, move |conn, sql| {
            let released = (|| {
                if lease.pending.is_some() {
                    renew(conn, sql, &lease, ttl)?;
                    store_spend(conn, sql, &lease)?;
                }
                release(conn, sql, &lease)
            })();
            if released.is_err() {
                unreleased.remember(&lease);
            }
            released
        })
        .await
    }

    async fn load(&self, id: &str) -> Result<Vec<Message>, SessionError> {
        let session = id.to_string();
        self.run(id, move |conn, sql| Ok(load(conn, sql, &session)?.0))
            .await
    }

    async fn list(&self) -> Result<Vec<String>, SessionError> {
        self.run("", |conn, sql| {
            let fail = || sql.fail(Step::List, "");
            let mut statement = conn.prepare_cached(&sql.list).map_err(fail())?;
            let ids = statement
                .query_map([], |row| row.get::<_, String>(0))
                .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                .map_err(fail())?;
            Ok(ids)
        })
        .await
    }

    async fn delete(&self, id: &str) -> Result<(), SessionError> {
        let session = id.to_string();
        let holder = self.holder.clone();
        self.run(id, move |conn, sql| {
            let fail = || sql.fail(Step::Delete, &session);
            let held = live_owner(conn, &session).map_err(fail())?;
            if held.is_some_and(|owner| !holder.gone(&owner)) {
                return Err(SessionError::Leased { session });
            }
            for statement in &sql.delete {
                execute(conn, statement, [&session]).map_err(fail())?;
            }
            execute(conn, &totals::delete("?"), [&session]).map_err(fail())?;
            Ok(())
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
        let session = id.to_string();
        self.run(id, move |conn, sql| load_spend(conn, sql, &session))
            .await
    }
}

/// The stored running total of `session` (none: zero).
fn load_spend(conn: &Connection, sql: &Sql, session: &str) -> Result<Spend, SessionError> {
    let body: Option<String> = conn
        .prepare_cached(&totals::select("?"))
        .and_then(|mut q| q.query_row([session], |row| row.get(0)).optional())
        .map_err(sql.fail(Step::Load, session))?;
    totals::decode(session, body.as_deref())
}

/// Stores the running total set on `lease` since its last write, if any, in the
/// caller's transaction (after its lease check).
fn store_spend(conn: &Connection, sql: &Sql, lease: &DbLease) -> Result<(), SessionError> {
    let Some(spend) = &lease.pending else {
        return Ok(());
    };
    execute(
        conn,
        &totals::upsert("?"),
        params![lease.session, totals::encode(spend)],
    )
    .map_err(sql.fail(Step::Append, &lease.session))?;
    Ok(())
}
