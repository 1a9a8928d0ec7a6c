//! The unit tests of `pg_conn.rs`, against a PostgreSQL server of a few lines that speaks
//! just enough of the protocol (a start-up that succeeds or is refused with a SQLSTATE,
//! simple queries that succeed, fail, or close the connection) and counts the
//! connections it was asked for: which errors are tried again, how long the waits
//! between tries are, and when a connection is kept or replaced.
#![allow(clippy::unwrap_used)] // a test fails at the first step that does

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Mutex as StdMutex;

use super::*;

/// How the test server answers the start-up of its `n`th connection (from 0).
#[derive(Clone, Copy)]
enum Greeting {
    /// Authentication succeeds; the connection then serves simple queries.
    Ready,
    /// The start-up fails with this SQLSTATE (FATAL), and the connection is closed.
    Refuse(&'static str),
}

/// A query the test server answers with an error (42601), the connection kept.
const FAILS: &str = "fail";
/// A query the test server answers by closing the connection.
const CLOSES: &str = "close";

struct FakePg {
    url: Arc<str>,
    /// When each connection was accepted, in order.
    accepted: Arc<StdMutex<Vec<Instant>>>,
    /// Each connection accepted, to hang up on.
    streams: Arc<StdMutex<Vec<TcpStream>>>,
}

impl FakePg {
    /// A server on 127.0.0.1 that greets its connections by `greet`.
    fn start(greet: impl Fn(usize) -> Greeting + Send + 'static) -> FakePg {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(StdMutex::new(Vec::new()));
        let streams = Arc::new(StdMutex::new(Vec::new()));
        let (log, held) = (accepted.clone(), streams.clone());
        std::thread::spawn(move || {
            for (n, stream) in listener.incoming().enumerate() {
                let Ok(mut stream) = stream else { return };
                log.lock().unwrap().push(Instant::now());
                held.lock().unwrap().push(stream.try_clone().unwrap());
                let greeting = greet(n);
                std::thread::spawn(move || {
                    serve(&mut stream, greeting);
                    // Closed for the clone `hang_up` holds too.
                    let _ = stream.shutdown(std::net::Shutdown::Both);
                });
            }
        });
        FakePg {
            url: format!("postgres://brute@127.0.0.1:{port}/brute").into(),
            accepted,
            streams,
        }
    }

    /// Closes every connection from the server's side (a restart).
    fn hang_up(&self) {
        for stream in self.streams.lock().unwrap().drain(..) {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }

    /// How many connections were asked for so far.
    fn connections(&self) -> usize {
        self.accepted.lock().unwrap().len()
    }

    /// A new client on this server (its connection task on the current runtime).
    async fn client(&self) -> Client {
        connect_once(&self.url, None).await.unwrap()
    }
}

/// One message: its type byte and body.
fn message(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    out.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    out.extend_from_slice(body);
    out
}

fn error_response(code: &str) -> Vec<u8> {
    let mut body = Vec::new();
    for (field, value) in [
        (b'S', "FATAL"),
        (b'V', "FATAL"),
        (b'C', code),
        (b'M', "said the test server"),
    ] {
        body.push(field);
        body.extend_from_slice(value.as_bytes());
        body.push(0);
    }
    body.push(0);
    message(b'E', &body)
}

fn ready() -> Vec<u8> {
    message(b'Z', b"I")
}

/// Reads one length-prefixed body (the length counts itself).
fn body(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut len = [0; 4];
    stream.read_exact(&mut len).ok()?;
    let mut body = vec![0; (u32::from_be_bytes(len) as usize).checked_sub(4)?];
    stream.read_exact(&mut body).ok()?;
    Some(body)
}

fn serve(stream: &mut TcpStream, greeting: Greeting) -> Option<()> {
    let mut startup = body(stream)?;
    if startup.starts_with(&80_877_103u32.to_be_bytes()) {
        // An SSL request: refused, then the start-up itself.
        stream.write_all(b"N").ok()?;
        startup = body(stream)?;
    }
    drop(startup);
    match greeting {
        Greeting::Refuse(code) => {
            stream.write_all(&error_response(code)).ok()?;
            return Some(());
        }
        Greeting::Ready => {
            let mut hello = message(b'R', &0u32.to_be_bytes());
            hello.extend(ready());
            stream.write_all(&hello).ok()?;
        }
    }
    loop {
        let mut tag = [0; 1];
        stream.read_exact(&mut tag).ok()?;
        let body = body(stream)?;
        if tag[0] != b'Q' {
            // Terminate, or a message this server does not speak: the connection ends.
            return Some(());
        }
        let query = String::from_utf8_lossy(body.strip_suffix(&[0]).unwrap_or(&body)).into_owned();
        let answer = match query.as_str() {
            CLOSES => return Some(()),
            FAILS => [error_response("42601"), ready()].concat(),
            _ => [message(b'C', format!("{query}\0").as_bytes()), ready()].concat(),
        };
        stream.write_all(&answer).ok()?;
    }
}

#[tokio::test]
async fn a_refused_password_fails_at_once_without_trying_again() {
    let pg = FakePg::start(|_| Greeting::Refuse("28P01"));
    let error = connect(&pg.url, None).await.unwrap_err();
    assert_eq!(pg.connections(), 1, "tried again: {error}");
    let text = error.to_string();
    assert!(text.contains("FATAL 28P01: said the test server"), "{text}");
    assert!(!text.contains("attempts"), "{text}");
    let source = StdError::source(&error).and_then(|e| e.downcast_ref::<tokio_postgres::Error>());
    assert!(source.is_some_and(|e| e.code().is_some()), "{error:?}");
}

#[tokio::test]
async fn a_server_starting_up_is_tried_again_with_doubling_waits() {
    let pg = FakePg::start(|_| Greeting::Refuse("57P03"));
    let error = connect(&pg.url, None).await.unwrap_err();
    let text = error.to_string();
    assert!(
        text.starts_with("5 attempts to connect failed, the last: "),
        "{text}"
    );
    assert!(text.contains("57P03"), "{text}");
    let accepted = pg.accepted.lock().unwrap().clone();
    assert_eq!(accepted.len(), ATTEMPTS as usize);
    // Lower bounds only: a wait is never shorter than asked, however loaded the machine.
    let mut wait = FIRST_WAIT;
    for pair in accepted.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(gap >= wait, "waited {gap:?} between attempts, not {wait:?}");
        wait *= 2;
    }
}

#[tokio::test]
async fn a_server_that_rejects_the_connection_is_tried_again() {
    // Class 08 (connection exception) as well as 57P (operator intervention).
    let pg = FakePg::start(|_| Greeting::Refuse("08004"));
    let error = connect(&pg.url, None).await.unwrap_err();
    assert_eq!(pg.connections(), ATTEMPTS as usize, "{error}");
}

#[tokio::test]
async fn a_server_that_cannot_be_reached_is_lost_and_tried_again() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let error = connect_once(&format!("postgres://brute@127.0.0.1:{port}/brute"), None)
        .await
        .unwrap_err();
    assert!(is_lost(&error) && worth_retrying(&error), "{error}");
}

#[tokio::test]
async fn a_failed_statement_keeps_its_connection_and_a_closed_one_is_lost() {
    let pg = FakePg::start(|_| Greeting::Ready);
    let client = pg.client().await;
    let failed = client.batch_execute(FAILS).await.unwrap_err();
    assert!(
        !is_lost(&failed),
        "a syntax error counted as a lost connection: {failed}"
    );
    assert!(!worth_retrying(&failed), "{failed}");
    client.batch_execute("SELECT").await.unwrap();
    let closed = client.batch_execute(CLOSES).await.unwrap_err();
    assert!(is_lost(&closed), "{closed}");
}

#[tokio::test]
async fn a_healthy_connection_is_used_again_even_after_a_statement_failed() {
    let pg = FakePg::start(|_| Greeting::Ready);
    let conn = Conn::new(pg.url.clone(), None, pg.client().await);
    let first = conn.get().await.unwrap();
    let again = conn.get().await.unwrap();
    assert!(Arc::ptr_eq(&first, &again));
    let error = first.batch_execute(FAILS).await.unwrap_err();
    let error = conn.failed(&first, error);
    assert!(error.to_string().contains("42601"), "{error}");
    assert!(Arc::ptr_eq(&first, &conn.get().await.unwrap()));
    assert_eq!(pg.connections(), 1);
    assert_eq!(format!("{conn:?}"), "Conn(..)");
}

#[tokio::test]
async fn a_lost_connection_is_replaced_by_the_next_statement() {
    let pg = FakePg::start(|_| Greeting::Ready);
    let conn = Conn::new(pg.url.clone(), Some("SET x"), pg.client().await);
    let first = conn.get().await.unwrap();
    let error = first.batch_execute(CLOSES).await.unwrap_err();
    conn.failed(&first, error);
    let second = conn.get().await.unwrap();
    assert!(!Arc::ptr_eq(&first, &second));
    second.batch_execute("SELECT").await.unwrap();
    assert_eq!(pg.connections(), 2);
}

#[tokio::test]
async fn statements_waiting_for_a_failed_reconnection_fail_with_its_error() {
    // The first connection serves; every later one is refused as the server starts up.
    let pg = FakePg::start(|n| {
        if n == 0 {
            Greeting::Ready
        } else {
            Greeting::Refuse("57P03")
        }
    });
    let conn = Conn::new(pg.url.clone(), None, pg.client().await);
    let client = conn.get().await.unwrap();
    let error = client.batch_execute(CLOSES).await.unwrap_err();
    conn.failed(&client, error);
    let (a, b) = tokio::join!(conn.get(), conn.get());
    for outcome in [a, b] {
        let error = outcome.map(|_| ()).unwrap_err();
        assert!(error.to_string().starts_with("5 attempts"), "{error}");
    }
    // One reconnection of five attempts, not one for each waiting statement.
    assert_eq!(pg.connections(), 1 + ATTEMPTS as usize);
}

#[tokio::test]
async fn a_transaction_connection_is_kept_until_it_is_lost() {
    let pg = FakePg::start(|_| Greeting::Ready);
    let tx = TxConn::new(pg.url.clone(), pg.client().await);
    let ok = async |_: &Transaction<'_>| Ok(Ok::<_, ()>(()));
    tx.run(ok).await.unwrap().unwrap();
    tx.run(ok).await.unwrap().unwrap();
    let failing = tx
        .run(async |t: &Transaction<'_>| t.batch_execute(FAILS).await.map(|()| Ok::<_, ()>(())))
        .await
        .unwrap_err();
    assert!(failing.to_string().contains("42601"), "{failing}");
    tx.run(ok).await.unwrap().unwrap();
    assert_eq!(
        pg.connections(),
        1,
        "a healthy transaction connection was replaced"
    );

    let lost = tx
        .run(async |t: &Transaction<'_>| t.batch_execute(CLOSES).await.map(|()| Ok::<_, ()>(())))
        .await
        .unwrap_err();
    assert!(!lost.to_string().contains("attempts"), "{lost}");
    tx.run(ok).await.unwrap().unwrap();
    assert_eq!(pg.connections(), 2);

    // Closed while idle (the server restarted between two transactions): the next
    // transaction finds it closed and makes a new one.
    pg.hang_up();
    let idle = tx
        .client
        .lock()
        .await
        .as_ref()
        .unwrap()
        .batch_execute("SELECT")
        .await;
    assert!(idle.is_err_and(|e| is_lost(&e)));
    tx.run(ok).await.unwrap().unwrap();
    assert_eq!(pg.connections(), 3);
    assert_eq!(format!("{tx:?}"), "TxConn(..)");
}
