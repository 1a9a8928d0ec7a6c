//! `PostgresStore` under a database that goes away: a restart of the server under a
//! live store (every connection cut) fails the turns that run while it is down,
//! cleanly, and the turns after it is back succeed in the same process, on every kind
//! of connection the store has (the shared ones, the writer's, the transactions').
//! And the driver's errors keep what the server said. PostgreSQL runs for real: these
//! tests fail, never skip, without it.

#![allow(clippy::unwrap_used)]

use crate::postgres_support;

use std::error::Error as _;

use brute::session::{PostgresStore, SessionError, SessionId, SessionStore};
use brute::{Message, brute_agent, middleware::SessionLog};
use postgres_support::RestartableServer;

/// The sessions of the test: enough that every shared connection serves some.
const SESSIONS: [&str; 8] = ["a", "b", "c", "d", "e", "f", "g", "h"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_reconnects_after_the_database_restarts() {
    let server = RestartableServer::start();
    let store = PostgresStore::connect(&server.database("restart"))
        .await
        .unwrap();
    let agent = brute_agent! {
        use SessionLog { store: store.clone() };
        run |env: &brute::Env| {
            let n = env.messages.len();
            async move { Ok(Message::assistant(format!("reply to {n} messages"))) }
        };
    };
    let turn = async |id: &str, prompt: &str| {
        let mut env = agent.env();
        env.extensions.insert(SessionId::from(id));
        env.messages.push(Message::user(prompt));
        agent.turn(env).await
    };
    for id in SESSIONS {
        turn(id, "before").await.unwrap();
    }

    server.stop();
    // While it is down: the turn fails, and says which step and why.
    let error = turn("a", "during").await.unwrap_err();
    let Some(SessionError::Database {
        store: "postgres",
        action,
        ..
    }) = error.downcast_ref::<SessionError>()
    else {
        panic!("a database error of the postgres store expected, got {error:?}");
    };
    assert_eq!(action, "take the lease of a");
    assert!(
        error
            .to_string()
            .contains("5 attempts to connect failed, the last: error connecting to server"),
        "{error}"
    );

    server.start_again();
    // Back: every session's next turn succeeds, in this process, through the shared
    // connections (leases, loads) and the writer (appends).
    for id in SESSIONS {
        turn(id, "after").await.unwrap();
    }
    for id in SESSIONS {
        let stored = store.load(id).await.unwrap();
        let prompts: Vec<&str> = stored
            .iter()
            .filter(|m| m.role == brute::Role::User)
            .map(|m| m.content.as_str())
            .collect();
        assert_eq!(prompts, ["before", "after"], "session {id}");
        assert_eq!(stored.len(), 4, "session {id}");
    }
    // And the transactions' connection: a replace and a delete.
    let (mut lease, _) = store.open("a").await.unwrap();
    store
        .replace(&mut lease, &[Message::user("summary")])
        .await
        .unwrap();
    store.release(lease).await.unwrap();
    assert_eq!(store.load("a").await.unwrap(), [Message::user("summary")]);
    store.delete("b").await.unwrap();
    assert!(store.load("b").await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_error_keeps_its_sqlstate_and_message_in_text_and_source() {
    let server = RestartableServer::start();
    let store = PostgresStore::connect(&server.database("driver"))
        .await
        .unwrap();
    let (mut lease, _) = store.open("s").await.unwrap();
    server.psql("driver", "DROP TABLE brute_messages");
    // The group-commit writer's statement fails on the server.
    let error = store
        .append(&mut lease, &[Message::user("hi")])
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(
        text.starts_with("postgres session store: cannot append to session s: db error: ERROR 42P01: relation \"brute_messages\" does not exist"),
        "{text}"
    );
    // The driver's error is the source, not a copy of its text: below it, the
    // server's own error.
    let chain: Vec<String> = std::iter::successors(error.source(), |e| (*e).source())
        .map(ToString::to_string)
        .collect();
    assert!(chain.iter().any(|e| e == "db error"), "{chain:?}");
    assert!(
        chain
            .last()
            .is_some_and(|e| e.contains("relation \"brute_messages\" does not exist")),
        "{chain:?}"
    );
    // A statement of a shared connection too.
    let error = store.load("s").await.unwrap_err();
    assert!(error.to_string().contains("42P01"), "{error}");
}
