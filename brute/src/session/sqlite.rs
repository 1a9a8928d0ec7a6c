//! `SqliteStore`: many sessions in one SQLite database file (WAL mode), written by one
//! thread that commits the writes of concurrent turns together.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};
use tokio::sync::oneshot;

use super::error::{SessionError, db_error};
use super::rows::{bodies, new_owner, now_ms, parse};
use super::store::{Abandoned, SessionStore};
use crate::message::Message;

/// The work of one request inside the batch's transaction; its reply is sent once the
/// transaction is committed (or failed).
type Job = Box<dyn FnOnce(&Connection) -> Box<dyn FnOnce(Result<(), String>) + Send> + Send>;

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
/// renewed by every write), so a crashed process's lease frees itself; a write whose
/// lease expired and was taken fails with [`SessionError::LeaseLost`].
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
/// # Ok::<(), brute::middleware::SessionError>(()) }).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct SqliteStore {
    queue: Sender<Job>,
    path: PathBuf,
    ttl: Duration,
}

/// A SQLite session held for a turn.
#[derive(Debug)]
pub struct SqliteLease {
    session: String,
    owner: String,
    /// The position of the next message.
    next: i64,
}

impl SqliteLease {
    /// The session id.
    pub fn session(&self) -> &str {
        &self.session
    }
}

impl SqliteStore {
    /// Opens (or creates) the database at `path` and starts its writer thread.
    pub fn open(path: impl Into<PathBuf>) -> Result<SqliteStore, SessionError> {
        let path = path.into();
        let where_ = path.display().to_string();
        let conn =
            Connection::open(&path).map_err(db_error("sqlite", || format!("open {where_}")))?;
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
        .map_err(db_error("sqlite", || format!("set up {where_}")))?;
        let (queue, jobs) = mpsc::channel();
        thread::Builder::new()
            .name("brute-sqlite-writer".into())
            .spawn(move || work(&conn, &jobs))
            .map_err(db_error("sqlite", || "start the writer thread".to_string()))?;
        Ok(SqliteStore {
            queue,
            path,
            ttl: Duration::from_secs(60),
        })
    }

    /// How long a lease lasts without a write (60 s by default): a turn that writes
    /// nothing for longer loses its session to the next worker that asks.
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
    fn run<R: Send + 'static>(
        &self,
        job: impl FnOnce(&Connection) -> Result<R, SessionError> + Send + 'static,
    ) -> impl Future<Output = Result<R, SessionError>> + Send + 'static {
        let (reply, result) = oneshot::channel();
        let job: Job = Box::new(move |conn| {
            let done = in_savepoint(conn, job);
            Box::new(move |committed: Result<(), String>| {
                let outcome = match (done, committed) {
                    (Ok(value), Ok(())) => Ok(value),
                    (Err(e), _) => Err(e),
                    (Ok(_), Err(e)) => Err(SessionError::Database {
                        store: "sqlite",
                        action: "commit".to_string(),
                        source: e.into(),
                    }),
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
}

/// Runs `job` in a savepoint: undone alone when it fails.
fn in_savepoint<R>(
    conn: &Connection,
    job: impl FnOnce(&Connection) -> Result<R, SessionError>,
) -> Result<R, SessionError> {
    conn.execute_batch("SAVEPOINT job")
        .map_err(db_error("sqlite", || "open a savepoint".to_string()))?;
    let result = job(conn);
    let end = if result.is_ok() {
        "RELEASE job"
    } else {
        "ROLLBACK TO job; RELEASE job"
    };
    conn.execute_batch(end)
        .map_err(db_error("sqlite", || "close a savepoint".to_string()))?;
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
        let begun = conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(|e| e.to_string());
        for job in batch.drain(..) {
            replies.push(job(conn));
        }
        let committed = begun.and_then(|()| {
            conn.execute_batch("COMMIT").map_err(|e| {
                let _ = conn.execute_batch("ROLLBACK");
                e.to_string()
            })
        });
        for reply in replies.drain(..) {
            reply(committed.clone());
        }
    }
}

fn load(conn: &Connection, session: &str) -> Result<Vec<Message>, SessionError> {
    let mut statement = conn
        .prepare_cached("SELECT body FROM brute_messages WHERE session = ?1 ORDER BY seq")
        .map_err(db_error("sqlite", || format!("load session {session}")))?;
    let rows = statement
        .query_map([session], |row| row.get::<_, String>(0))
        .map_err(db_error("sqlite", || format!("load session {session}")))?;
    let mut messages = Vec::new();
    for (i, row) in rows.enumerate() {
        let body = row.map_err(db_error("sqlite", || format!("load session {session}")))?;
        messages.push(parse(session, i + 1, &body)?);
    }
    Ok(messages)
}

/// Checks that `lease` still holds its session and renews it.
fn renew(conn: &Connection, lease: &SqliteLease, ttl: Duration) -> Result<(), SessionError> {
    let renewed = conn
        .prepare_cached("UPDATE brute_leases SET expires = ?3 WHERE session = ?1 AND owner = ?2")
        .and_then(|mut s| {
            s.execute(params![
                lease.session,
                lease.owner,
                now_ms() + ttl.as_millis() as i64
            ])
        })
        .map_err(db_error("sqlite", || {
            format!("renew the lease of {}", lease.session)
        }))?;
    if renewed == 0 {
        return Err(SessionError::LeaseLost {
            session: lease.session.clone(),
        });
    }
    Ok(())
}

fn insert(
    conn: &Connection,
    session: &str,
    from: i64,
    bodies: &[String],
) -> Result<(), SessionError> {
    let mut statement = conn
        .prepare_cached("INSERT INTO brute_messages (session, seq, body) VALUES (?1, ?2, ?3)")
        .map_err(db_error("sqlite", || {
            format!("append to session {session}")
        }))?;
    for (i, body) in bodies.iter().enumerate() {
        statement
            .execute(params![session, from + i as i64, body])
            .map_err(db_error("sqlite", || {
                format!("append to session {session}")
            }))?;
    }
    Ok(())
}

impl SessionStore for SqliteStore {
    type Lease = SqliteLease;

    async fn open(&self, id: &str) -> Result<(SqliteLease, Vec<Message>), SessionError> {
        let session = id.to_string();
        let ttl = self.ttl.as_millis() as i64;
        self.run(move |conn| {
            let owner = new_owner();
            let now = now_ms();
            let taken = conn
                .prepare_cached(
                    "INSERT INTO brute_leases (session, owner, expires) VALUES (?1, ?2, ?3)
                     ON CONFLICT (session) DO UPDATE SET owner = excluded.owner, expires = excluded.expires
                     WHERE brute_leases.expires < ?4",
                )
                .and_then(|mut s| s.execute(params![session, owner, now + ttl, now]))
                .map_err(db_error("sqlite", || format!("take the lease of {session}")))?;
            if taken == 0 {
                return Err(SessionError::Leased { session });
            }
            conn.prepare_cached("INSERT OR IGNORE INTO brute_sessions (id) VALUES (?1)")
                .and_then(|mut s| s.execute([&session]))
                .map_err(db_error("sqlite", || format!("create session {session}")))?;
            let messages = load(conn, &session)?;
            let next: i64 = conn
                .query_row(
                    "SELECT COALESCE(MAX(seq) + 1, 0) FROM brute_messages WHERE session = ?1",
                    [&session],
                    |row| row.get(0),
                )
                .map_err(db_error("sqlite", || format!("load session {session}")))?;
            Ok((SqliteLease { session, owner, next }, messages))
        })
        .await
    }

    async fn append(
        &self,
        lease: &mut SqliteLease,
        messages: &[Message],
    ) -> Result<(), SessionError> {
        let bodies = bodies("sqlite", messages, &lease.session)?;
        if bodies.is_empty() {
            return Ok(());
        }
        let held = SqliteLease {
            session: lease.session.clone(),
            owner: lease.owner.clone(),
            next: lease.next,
        };
        let count = bodies.len() as i64;
        let ttl = self.ttl;
        self.run(move |conn| {
            renew(conn, &held, ttl)?;
            insert(conn, &held.session, held.next, &bodies)
        })
        .await?;
        lease.next += count;
        Ok(())
    }

    async fn replace(
        &self,
        lease: &mut SqliteLease,
        messages: &[Message],
    ) -> Result<(), SessionError> {
        let bodies = bodies("sqlite", messages, &lease.session)?;
        let held = SqliteLease {
            session: lease.session.clone(),
            owner: lease.owner.clone(),
            next: 0,
        };
        let count = bodies.len() as i64;
        let ttl = self.ttl;
        self.run(move |conn| {
            renew(conn, &held, ttl)?;
            conn.prepare_cached("DELETE FROM brute_messages WHERE session = ?1")
                .and_then(|mut s| s.execute([&held.session]))
                .map_err(db_error("sqlite", || {
                    format!("replace session {}", held.session)
                }))?;
            insert(conn, &held.session, 0, &bodies)
        })
        .await?;
        lease.next = count;
        Ok(())
    }

    /// Queues the append and the release on the writer thread, ahead of any later
    /// request (the next turn's `open` among them), without waiting for them.
    fn abandon(&self, lease: SqliteLease, ending: Abandoned) {
        let held = SqliteLease {
            session: lease.session.clone(),
            owner: lease.owner.clone(),
            next: lease.next,
        };
        let ttl = self.ttl;
        // Each job is sent when it is made: dropping its future only drops the reply.
        match ending {
            Abandoned::Append(messages) => {
                if let Ok(bodies) = bodies("sqlite", &messages, &lease.session) {
                    drop(self.run(move |conn| {
                        renew(conn, &held, ttl)?;
                        insert(conn, &held.session, held.next, &bodies)
                    }));
                }
            }
            Abandoned::RemoveLast(n) => {
                drop(self.run(move |conn| {
                    renew(conn, &held, ttl)?;
                    conn.prepare_cached(
                        "DELETE FROM brute_messages WHERE session = ?1 AND seq >= ?2",
                    )
                    .and_then(|mut s| s.execute(params![held.session, held.next - n as i64]))
                    .map_err(db_error("sqlite", || {
                        format!("remove a dropped turn's prompt from {}", held.session)
                    }))?;
                    Ok(())
                }));
            }
            Abandoned::Nothing => {}
        }
        drop(self.run(move |conn| {
            conn.prepare_cached("DELETE FROM brute_leases WHERE session = ?1 AND owner = ?2")
                .and_then(|mut s| s.execute(params![lease.session, lease.owner]))
                .map_err(db_error("sqlite", || {
                    format!("release the lease of {}", lease.session)
                }))?;
            Ok(())
        }));
    }

    async fn release(&self, lease: SqliteLease) -> Result<(), SessionError> {
        self.run(move |conn| {
            conn.prepare_cached("DELETE FROM brute_leases WHERE session = ?1 AND owner = ?2")
                .and_then(|mut s| s.execute(params![lease.session, lease.owner]))
                .map_err(db_error("sqlite", || {
                    format!("release the lease of {}", lease.session)
                }))?;
            Ok(())
        })
        .await
    }

    async fn load(&self, id: &str) -> Result<Vec<Message>, SessionError> {
        let session = id.to_string();
        self.run(move |conn| load(conn, &session)).await
    }

    async fn list(&self) -> Result<Vec<String>, SessionError> {
        self.run(|conn| {
            let mut statement = conn
                .prepare_cached("SELECT id FROM brute_sessions ORDER BY id")
                .map_err(db_error("sqlite", || "list the sessions".to_string()))?;
            let ids = statement
                .query_map([], |row| row.get::<_, String>(0))
                .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                .map_err(db_error("sqlite", || "list the sessions".to_string()))?;
            Ok(ids)
        })
        .await
    }

    async fn delete(&self, id: &str) -> Result<(), SessionError> {
        let session = id.to_string();
        self.run(move |conn| {
            let held: Option<i64> = conn
                .query_row(
                    "SELECT expires FROM brute_leases WHERE session = ?1 AND expires >= ?2",
                    params![session, now_ms()],
                    |row| row.get(0),
                )
                .optional()
                .map_err(db_error("sqlite", || format!("delete session {session}")))?;
            if held.is_some() {
                return Err(SessionError::Leased { session });
            }
            for table in [
                "brute_messages WHERE session",
                "brute_leases WHERE session",
                "brute_sessions WHERE id",
            ] {
                conn.execute(&format!("DELETE FROM {table} = ?1"), [&session])
                    .map_err(db_error("sqlite", || format!("delete session {session}")))?;
            }
            Ok(())
        })
        .await
    }
}
