//! The connections of `PostgresStore`, each replaced when it is lost (the server
//! restarted, failed over, or the network dropped it), and the driver's errors with
//! the server's SQLSTATE and message kept.

use std::collections::HashMap;
use std::error::Error as StdError;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls, Row, Statement, Transaction};

/// The attempts of one reconnection; the waits between them double from
/// [`FIRST_WAIT`] (100, 200, 400, 800 ms: the last attempt about 1.5 s after the
/// first). A statement that finds its connection lost waits at most this long, then
/// fails; the next statement tries again.
pub(in crate::session) const ATTEMPTS: u32 = 5;

/// The wait after the first failed attempt.
const FIRST_WAIT: Duration = Duration::from_millis(100);

/// A driver error, its text with what the server said (severity, SQLSTATE, message,
/// detail, hint) or the cause below the driver (an I/O error), and the driver's error
/// as its source.
#[derive(Debug, Clone)]
pub(in crate::session) struct PgError {
    /// What was tried when the error came from a reconnection.
    reconnect: Option<u32>,
    error: Arc<tokio_postgres::Error>,
}

impl PgError {
    /// The driver's error as it is.
    pub(in crate::session) fn new(error: tokio_postgres::Error) -> PgError {
        PgError {
            reconnect: None,
            error: Arc::new(error),
        }
    }
}

impl From<tokio_postgres::Error> for PgError {
    fn from(error: tokio_postgres::Error) -> PgError {
        PgError::new(error)
    }
}

impl fmt::Display for PgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(attempts) = self.reconnect {
            write!(f, "{attempts} attempts to connect failed, the last: ")?;
        }
        write!(f, "{}", self.error)?;
        if let Some(db) = self.error.as_db_error() {
            write!(
                f,
                ": {} {}: {}",
                db.severity(),
                db.code().code(),
                db.message()
            )?;
            if let Some(detail) = db.detail() {
                write!(f, " (detail: {detail})")?;
            }
            if let Some(hint) = db.hint() {
                write!(f, " (hint: {hint})")?;
            }
        } else if let Some(cause) = self.error.source() {
            write!(f, ": {cause}")?;
        }
        Ok(())
    }
}

impl StdError for PgError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&*self.error)
    }
}

/// Whether `error` means the connection is gone (rather than one statement failing).
fn is_lost(error: &tokio_postgres::Error) -> bool {
    error.is_closed()
        || error
            .source()
            .is_some_and(|cause| cause.downcast_ref::<std::io::Error>().is_some())
}

/// Whether a failed connect may succeed when tried again: the server cannot be
/// reached, or it is starting or shutting down (SQLSTATE class 08, 57P).
fn worth_retrying(error: &tokio_postgres::Error) -> bool {
    is_lost(error)
        || error
            .code()
            .is_some_and(|c| c.code().starts_with("08") || c.code().starts_with("57P"))
}

/// Opens one connection to `url` and runs `setup` on it; its connection task runs on
/// the current runtime.
async fn connect_once(url: &str, setup: Option<&str>) -> Result<Client, tokio_postgres::Error> {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!(
                error = %PgError::new(e),
                "postgres session store: a connection ended; the next statement on it reconnects"
            );
        }
    });
    if let Some(setup) = setup {
        client.batch_execute(setup).await?;
    }
    Ok(client)
}

/// Opens a connection, trying up to [`ATTEMPTS`] times with doubling waits between
/// while the server cannot be reached (an error that trying again cannot cure, a
/// refused password or a bad connection string, fails at once).
pub(in crate::session) async fn connect(url: &str, setup: Option<&str>) -> Result<Client, PgError> {
    let mut wait = FIRST_WAIT;
    let mut attempt = 1;
    loop {
        match connect_once(url, setup).await {
            Ok(client) => return Ok(client),
            Err(error) if !worth_retrying(&error) => return Err(PgError::new(error)),
            Err(error) if attempt >= ATTEMPTS => {
                return Err(PgError {
                    reconnect: Some(attempt),
                    error: Arc::new(error),
                });
            }
            Err(error) => {
                tracing::debug!(attempt, error = %PgError::new(error), "postgres session store: cannot connect; trying again");
                tokio::time::sleep(wait).await;
                wait *= 2;
                attempt += 1;
            }
        }
    }
}

/// The last reconnection that failed, so that the statements that waited for it fail
/// with its error instead of each trying again (which would make the last of many
/// waiting statements wait many times the bound).
#[derive(Default)]
struct LastFailure(Mutex<Option<(Instant, PgError)>>);

impl LastFailure {
    /// The failure of a reconnection that ended after `since`.
    fn since(&self, since: Instant) -> Option<PgError> {
        let last = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        last.as_ref()
            .filter(|(at, _)| *at >= since)
            .map(|(_, error)| error.clone())
    }

    /// Connects to `url`, remembering a failure.
    async fn connect(&self, url: &str, setup: Option<&str>) -> Result<Client, PgError> {
        let connected = connect(url, setup).await;
        match &connected {
            Ok(_) => tracing::info!("postgres session store: reconnected"),
            Err(error) => {
                *self.0.lock().unwrap_or_else(PoisonError::into_inner) =
                    Some((Instant::now(), error.clone()));
            }
        }
        connected
    }
}

/// One connection for single statements, shared (its statements are pipelined),
/// replaced when it is lost.
pub(in crate::session) struct Conn {
    url: Arc<str>,
    setup: Option<&'static str>,
    client: Mutex<Option<Arc<Client>>>,
    /// Held while reconnecting, so that one statement reconnects and the others wait
    /// for it.
    reconnecting: tokio::sync::Mutex<()>,
    failed: LastFailure,
    prepared: Mutex<Prepared>,
}

/// The statements prepared on one client, by their text: the server parses and plans
/// each once per connection, and a call is one round trip, not two (a statement given
/// to the driver as text is prepared again on every call).
#[derive(Default)]
struct Prepared {
    /// The client they were prepared on; held weakly, so that a new client is never
    /// taken for it (its allocation outlives it while this is held).
    client: Weak<Client>,
    statements: HashMap<Box<str>, Statement>,
}

impl fmt::Debug for Conn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Conn(..)")
    }
}

impl Conn {
    /// The connection of `client` to `url`, which runs `setup` on each new one.
    pub(in crate::session) fn new(
        url: Arc<str>,
        setup: Option<&'static str>,
        client: Client,
    ) -> Conn {
        Conn {
            url,
            setup,
            client: Mutex::new(Some(Arc::new(client))),
            reconnecting: tokio::sync::Mutex::new(()),
            failed: LastFailure::default(),
            prepared: Mutex::default(),
        }
    }

    /// Runs query `text`, prepared once per connection: its rows. A statement that
    /// finds the connection lost fails, and the next one reconnects.
    pub(in crate::session) async fn query(
        &self,
        text: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, PgError> {
        let client = self.get().await?;
        let rows = match self.statement(&client, text).await {
            Ok(statement) => client.query(&statement, params).await,
            Err(error) => Err(error),
        };
        rows.map_err(|e| self.failed(&client, e))
    }

    /// Runs statement `text`, prepared once per connection: the rows it changed.
    pub(in crate::session) async fn execute(
        &self,
        text: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, PgError> {
        let client = self.get().await?;
        let changed = match self.statement(&client, text).await {
            Ok(statement) => client.execute(&statement, params).await,
            Err(error) => Err(error),
        };
        changed.map_err(|e| self.failed(&client, e))
    }

    /// Statement `text` prepared on `client`, once per connection.
    async fn statement(
        &self,
        client: &Arc<Client>,
        text: &str,
    ) -> Result<Statement, tokio_postgres::Error> {
        let same =
            |prepared: &Prepared| std::ptr::eq(prepared.client.as_ptr(), Arc::as_ptr(client));
        {
            let prepared = self.prepared.lock().unwrap_or_else(PoisonError::into_inner);
            if same(&prepared)
                && let Some(statement) = prepared.statements.get(text)
            {
                return Ok(statement.clone());
            }
        }
        let statement = client.prepare(text).await?;
        let mut prepared = self.prepared.lock().unwrap_or_else(PoisonError::into_inner);
        if !same(&prepared) {
            *prepared = Prepared {
                client: Arc::downgrade(client),
                statements: HashMap::new(),
            };
        }
        prepared.statements.insert(text.into(), statement.clone());
        Ok(statement)
    }

    fn current(&self) -> Option<Arc<Client>> {
        let mut slot = self.client.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.as_ref().is_some_and(|c| c.is_closed()) {
            *slot = None;
        }
        slot.clone()
    }

    /// The client, a new one if the last was lost.
    async fn get(&self) -> Result<Arc<Client>, PgError> {
        if let Some(client) = self.current() {
            return Ok(client);
        }
        let waiting = Instant::now();
        let _alone = self.reconnecting.lock().await;
        if let Some(client) = self.current() {
            return Ok(client);
        }
        if let Some(error) = self.failed.since(waiting) {
            return Err(error);
        }
        let client = Arc::new(self.failed.connect(&self.url, self.setup).await?);
        *self.client.lock().unwrap_or_else(PoisonError::into_inner) = Some(client.clone());
        Ok(client)
    }

    /// Notes that a statement on `client` failed with `error`: if that lost the
    /// connection, the next statement makes a new one.
    fn failed(&self, client: &Arc<Client>, error: tokio_postgres::Error) -> PgError {
        if is_lost(&error) {
            let mut slot = self.client.lock().unwrap_or_else(PoisonError::into_inner);
            if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, client)) {
                *slot = None;
            }
        }
        PgError::new(error)
    }
}

/// The connection for transactions (one at a time), replaced when it is lost.
pub(in crate::session) struct TxConn {
    url: Arc<str>,
    client: tokio::sync::Mutex<Option<Client>>,
    failed: LastFailure,
}

impl fmt::Debug for TxConn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TxConn(..)")
    }
}

/// The setup of a transaction connection: a transaction left open by a client that
/// stalled (a process stopped or swapping, a partition) is aborted by the server
/// after 5 s idle, so that its row locks do not hold up the other processes' takes
/// and writes of the same sessions until it wakes (its own next write then finds
/// the connection gone, and is fenced like any other).
pub(in crate::session) const TX_SETUP: &str = "SET idle_in_transaction_session_timeout = '5s'";

impl TxConn {
    /// The transaction connection `client` to `url`.
    pub(in crate::session) fn new(url: Arc<str>, client: Client) -> TxConn {
        TxConn {
            url,
            client: tokio::sync::Mutex::new(Some(client)),
            failed: LastFailure::default(),
        }
    }

    /// Runs `body` in a transaction (one at a time), committed when `body` gives
    /// `Ok(Ok(..))`, on a new connection if the last was lost.
    pub(in crate::session) async fn run<T, E>(
        &self,
        body: impl AsyncFnOnce(&Transaction<'_>) -> Result<Result<T, E>, tokio_postgres::Error>,
    ) -> Result<Result<T, E>, PgError> {
        let waiting = Instant::now();
        let mut slot = self.client.lock().await;
        let mut client = match slot.take() {
            Some(client) if !client.is_closed() => client,
            _ => match self.failed.since(waiting) {
                Some(error) => return Err(error),
                None => self.failed.connect(&self.url, Some(TX_SETUP)).await?,
            },
        };
        let outcome = async {
            let tx = client.transaction().await?;
            let result = body(&tx).await?;
            if result.is_ok() {
                tx.commit().await?;
            }
            Ok(result)
        }
        .await;
        match outcome {
            Ok(result) => {
                *slot = Some(client);
                Ok(result)
            }
            Err(error) => {
                if !is_lost(&error) {
                    *slot = Some(client);
                }
                Err(PgError::new(error))
            }
        }
    }
}

#[cfg(test)]
#[path = "pg_conn_tests.rs"]
mod tests;
