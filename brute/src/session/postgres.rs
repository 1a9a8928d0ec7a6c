//! `PostgresStore`: sessions in PostgreSQL, shared by many worker processes on many
//! machines, with the lease in the database.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{Mutex, mpsc, oneshot};
use tokio_postgres::{Client, NoTls};

use super::error::{SessionError, db_error};
use super::rows::{bodies, new_owner, parse};
use super::store::{Abandoned, SessionStore};
use crate::message::Message;

/// The connections for single statements.
const SHARED: usize = 4;

/// The most appends committed together.
const MAX_BATCH: usize = 2048;

/// Sessions in PostgreSQL: the scale-out store. Pick it when several worker
/// processes, on one machine or many, serve the same sessions.
///
/// Tables `brute_sessions`, `brute_messages` (one row per message, its JSON exactly as
/// the JSONL store writes it) and `brute_leases` are created on first connect. The
/// lease of a session is a row with an owner and an expiry (`lease_ttl`, renewed by
/// every write): two workers never run turns of one session at once, a killed
/// worker's lease frees itself when it expires, and every write checks the lease in
/// the same statement, so a worker whose lease expired and was taken writes nothing
/// ([`SessionError::LeaseLost`]).
///
/// Appends are transactions (one statement), and the appends of concurrent turns are
/// committed together: a writer task takes every append waiting and stores them in one
/// statement, one commit (group commit); each is durable before its future is done.
/// A replace is one transaction (delete and insert). The connections run on the tokio
/// runtime that called [`PostgresStore::connect`] (network I/O, never blocking).
#[derive(Clone, Debug)]
pub struct PostgresStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Single statements (leases, loads), pipelined, with asynchronous commit (see
    /// `connect`); a session always uses the same one.
    shared: Vec<Client>,
    /// Transactions, one at a time.
    transactions: Mutex<Client>,
    appends: mpsc::UnboundedSender<Append>,
    /// The lease length in milliseconds.
    ttl: AtomicU64,
}

/// One append waiting for the writer task.
struct Append {
    session: String,
    owner: String,
    next: i64,
    bodies: Vec<String>,
    /// The lease's renewed length, in seconds.
    ttl: f64,
    reply: oneshot::Sender<Result<(), SessionError>>,
}

/// A PostgreSQL session held for a turn.
#[derive(Debug)]
pub struct PgLease {
    session: String,
    owner: String,
    /// The position of the next message.
    next: i64,
}

impl PgLease {
    /// The session id.
    pub fn session(&self) -> &str {
        &self.session
    }
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

async fn connect(url: &str) -> Result<Client, SessionError> {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .map_err(db_error("postgres", || "connect".to_string()))?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!(error = %e, "postgres session store: connection ended");
        }
    });
    Ok(client)
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user@host:port/db`, or
    /// `host=.. port=.. user=..`), creates the tables if missing, and starts the
    /// writer task, on the current tokio runtime. TLS is not supported: run it on a
    /// private network or through a local proxy.
    pub async fn connect(url: &str) -> Result<PostgresStore, SessionError> {
        let mut transactions = connect(url).await?;
        let setup = transactions
            .transaction()
            .await
            .map_err(db_error("postgres", || "create the tables".to_string()))?;
        setup
            .batch_execute(SCHEMA)
            .await
            .map_err(db_error("postgres", || "create the tables".to_string()))?;
        setup
            .commit()
            .await
            .map_err(db_error("postgres", || "create the tables".to_string()))?;
        let mut shared = Vec::with_capacity(SHARED);
        for _ in 0..SHARED {
            let client = connect(url).await?;
            // Leases are fenced (every write checks its lease in the same statement),
            // so a lease taken or given back need not wait for its own WAL flush: lost
            // in a server crash, it is simply not held, and the holder's next write
            // fails with `LeaseLost`. Messages are written by the other connections,
            // with synchronous commit.
            client
                .batch_execute("SET synchronous_commit = off")
                .await
                .map_err(db_error("postgres", || {
                    "configure a connection".to_string()
                }))?;
            shared.push(client);
        }
        let writer = Arc::new(connect(url).await?);
        let (appends, queue) = mpsc::unbounded_channel();
        tokio::spawn(write(writer, queue));
        Ok(PostgresStore {
            inner: Arc::new(Inner {
                shared,
                transactions: Mutex::new(transactions),
                appends,
                ttl: AtomicU64::new(60_000),
            }),
        })
    }

    /// How long a lease lasts without a write (60 s by default): a worker killed
    /// mid-turn holds its sessions this long; a turn that writes nothing for longer
    /// (a very slow model call) loses its session to the next worker that asks.
    pub fn lease_ttl(self, ttl: Duration) -> PostgresStore {
        let millis = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        self.inner.ttl.store(millis, Ordering::Relaxed);
        self
    }

    /// The connection of session `id`'s single statements.
    fn client(&self, id: &str) -> &Client {
        let hash = id.bytes().fold(0usize, |h, b| {
            h.wrapping_mul(31).wrapping_add(usize::from(b))
        });
        &self.inner.shared[hash % self.inner.shared.len()]
    }

    fn ttl_secs(&self) -> f64 {
        self.inner.ttl.load(Ordering::Relaxed) as f64 / 1000.0
    }
}

/// The writer task: every waiting append in one statement, one commit.
async fn write(client: Arc<Client>, mut queue: mpsc::UnboundedReceiver<Append>) {
    let statement = "
        WITH input AS (
            SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[])
                AS t(session, owner, seq, body)
        ), sessions AS (
            INSERT INTO brute_sessions (id) SELECT DISTINCT session FROM input
            ON CONFLICT DO NOTHING
        ), renewed AS (
            UPDATE brute_leases l SET expires = now() + make_interval(secs => $5)
            FROM (SELECT DISTINCT session, owner FROM input) i
            WHERE l.session = i.session AND l.owner = i.owner
            RETURNING l.session
        )
        INSERT INTO brute_messages (session, seq, body)
        SELECT session, seq, body FROM input WHERE session IN (SELECT session FROM renewed)
        RETURNING session";
    let mut batch: Vec<Append> = Vec::new();
    while let Some(first) = queue.recv().await {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(append) => batch.push(append),
                Err(_) => break,
            }
        }
        // One store, one ttl: the first append's.
        let ttl = batch.first().map_or(60.0, |a| a.ttl);
        let mut sessions = Vec::new();
        let mut owners = Vec::new();
        let mut seqs = Vec::new();
        let mut bodies = Vec::new();
        for append in &batch {
            for (i, body) in append.bodies.iter().enumerate() {
                sessions.push(append.session.as_str());
                owners.push(append.owner.as_str());
                seqs.push(append.next + i as i64);
                bodies.push(body.as_str());
            }
        }
        let result = client
            .query(statement, &[&sessions, &owners, &seqs, &bodies, &ttl])
            .await;
        match result {
            Ok(rows) => {
                let written: std::collections::HashSet<String> = rows
                    .iter()
                    .filter_map(|r| r.try_get::<_, String>(0).ok())
                    .collect();
                for append in batch.drain(..) {
                    let outcome = if written.contains(&append.session) {
                        Ok(())
                    } else {
                        Err(SessionError::LeaseLost {
                            session: append.session.clone(),
                        })
                    };
                    let _ = append.reply.send(outcome);
                }
            }
            Err(e) => {
                let message = e.to_string();
                for append in batch.drain(..) {
                    let _ = append.reply.send(Err(SessionError::Database {
                        store: "postgres",
                        action: format!("append to session {}", append.session),
                        source: message.clone().into(),
                    }));
                }
            }
        }
    }
}

impl SessionStore for PostgresStore {
    type Lease = PgLease;

    async fn open(&self, id: &str) -> Result<(PgLease, Vec<Message>), SessionError> {
        let session = id.to_string();
        let owner = new_owner();
        let client = self.client(id);
        let taken = client
            .execute(
                "WITH s AS (INSERT INTO brute_sessions (id) VALUES ($1) ON CONFLICT DO NOTHING)
                 INSERT INTO brute_leases (session, owner, expires)
                 VALUES ($1, $2, now() + make_interval(secs => $3))
                 ON CONFLICT (session) DO UPDATE
                 SET owner = excluded.owner, expires = excluded.expires
                 WHERE brute_leases.expires < now()",
                &[&session, &owner, &self.ttl_secs()],
            )
            .await
            .map_err(db_error("postgres", || format!("take the lease of {id}")))?;
        if taken == 0 {
            return Err(SessionError::Leased { session });
        }
        let (messages, next) = load_with_next(client, id).await?;
        Ok((
            PgLease {
                session,
                owner,
                next,
            },
            messages,
        ))
    }

    async fn append(&self, lease: &mut PgLease, messages: &[Message]) -> Result<(), SessionError> {
        let bodies = bodies("postgres", messages, &lease.session)?;
        if bodies.is_empty() {
            return Ok(());
        }
        let count = bodies.len() as i64;
        let (reply, result) = oneshot::channel();
        self.inner
            .appends
            .send(Append {
                session: lease.session.clone(),
                owner: lease.owner.clone(),
                next: lease.next,
                bodies,
                ttl: self.ttl_secs(),
                reply,
            })
            .map_err(|_| SessionError::WriterGone { store: "postgres" })?;
        result
            .await
            .map_err(|_| SessionError::WriterGone { store: "postgres" })??;
        lease.next += count;
        Ok(())
    }

    async fn replace(&self, lease: &mut PgLease, messages: &[Message]) -> Result<(), SessionError> {
        let bodies = bodies("postgres", messages, &lease.session)?;
        let session = lease.session.clone();
        let failed = |what: &'static str| {
            let session = session.clone();
            db_error("postgres", move || format!("{what} session {session}"))
        };
        let mut client = self.inner.transactions.lock().await;
        let tx = client.transaction().await.map_err(failed("replace"))?;
        let renewed = tx
            .execute(
                "UPDATE brute_leases SET expires = now() + make_interval(secs => $3)
                 WHERE session = $1 AND owner = $2",
                &[&lease.session, &lease.owner, &self.ttl_secs()],
            )
            .await
            .map_err(failed("renew the lease of"))?;
        if renewed == 0 {
            return Err(SessionError::LeaseLost { session });
        }
        tx.execute(
            "DELETE FROM brute_messages WHERE session = $1",
            &[&lease.session],
        )
        .await
        .map_err(failed("replace"))?;
        tx.execute(
            "INSERT INTO brute_messages (session, seq, body)
             SELECT $1, ord - 1, body FROM unnest($2::text[]) WITH ORDINALITY AS t(body, ord)",
            &[&lease.session, &bodies],
        )
        .await
        .map_err(failed("replace"))?;
        tx.commit().await.map_err(failed("replace"))?;
        lease.next = bodies.len() as i64;
        Ok(())
    }

    /// Spawns the append and the release on the current tokio runtime (the
    /// connections need it); without one the lease expires after its ttl.
    fn abandon(&self, mut lease: PgLease, ending: Abandoned) {
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
                    let _ = store
                        .client(&lease.session)
                        .execute(
                            "DELETE FROM brute_messages WHERE session = $1 AND seq >= $2
                             AND EXISTS (SELECT 1 FROM brute_leases WHERE session = $1 AND owner = $3)",
                            &[&lease.session, &(lease.next - n as i64), &lease.owner],
                        )
                        .await;
                }
                Abandoned::Nothing => {}
            }
            let _ = store.release(lease).await;
        });
    }

    async fn release(&self, lease: PgLease) -> Result<(), SessionError> {
        self.client(&lease.session)
            .execute(
                "DELETE FROM brute_leases WHERE session = $1 AND owner = $2",
                &[&lease.session, &lease.owner],
            )
            .await
            .map_err(db_error("postgres", || {
                format!("release the lease of {}", lease.session)
            }))?;
        Ok(())
    }

    async fn load(&self, id: &str) -> Result<Vec<Message>, SessionError> {
        load(self.client(id), id).await
    }

    async fn list(&self) -> Result<Vec<String>, SessionError> {
        let rows = self
            .client("")
            .query("SELECT id FROM brute_sessions ORDER BY id", &[])
            .await
            .map_err(db_error("postgres", || "list the sessions".to_string()))?;
        rows.iter()
            .map(|r| r.try_get(0))
            .collect::<Result<_, _>>()
            .map_err(db_error("postgres", || "list the sessions".to_string()))
    }

    async fn delete(&self, id: &str) -> Result<(), SessionError> {
        let failed = || db_error("postgres", move || format!("delete session {id}"));
        let mut client = self.inner.transactions.lock().await;
        let tx = client.transaction().await.map_err(failed())?;
        let held = tx
            .query_opt(
                "SELECT 1 FROM brute_leases WHERE session = $1 AND expires >= now() FOR UPDATE",
                &[&id],
            )
            .await
            .map_err(failed())?;
        if held.is_some() {
            return Err(SessionError::Leased {
                session: id.to_string(),
            });
        }
        for statement in [
            "DELETE FROM brute_messages WHERE session = $1",
            "DELETE FROM brute_leases WHERE session = $1",
            "DELETE FROM brute_sessions WHERE id = $1",
        ] {
            tx.execute(statement, &[&id]).await.map_err(failed())?;
        }
        tx.commit().await.map_err(failed())
    }
}

async fn load(client: &Client, id: &str) -> Result<Vec<Message>, SessionError> {
    load_with_next(client, id)
        .await
        .map(|(messages, _)| messages)
}

/// The messages of session `id` and the position after the last.
async fn load_with_next(client: &Client, id: &str) -> Result<(Vec<Message>, i64), SessionError> {
    let rows = client
        .query(
            "SELECT seq, body FROM brute_messages WHERE session = $1 ORDER BY seq",
            &[&id],
        )
        .await
        .map_err(db_error("postgres", || format!("load session {id}")))?;
    let mut messages = Vec::with_capacity(rows.len());
    let mut next = 0;
    for (i, row) in rows.iter().enumerate() {
        let (seq, body): (i64, &str) = row
            .try_get(0)
            .and_then(|seq| Ok((seq, row.try_get(1)?)))
            .map_err(db_error("postgres", || format!("load session {id}")))?;
        messages.push(parse(id, i + 1, body)?);
        next = seq + 1;
    }
    Ok((messages, next))
}
