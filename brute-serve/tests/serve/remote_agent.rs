//! `RemoteAgent`: one agent delegates to another over HTTP; a remote failure is a
//! failed call whose message names the cause.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;

use brute::session::{JsonlStore, SessionStore};
use brute::{Env, Message, Role, brute_agent, middleware::SessionLog};
use brute_serve::{RemoteAgent, RemoteError, Server};
use support::{Running, TOKEN};

async fn remote() -> (Running, Arc<JsonlStore>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(JsonlStore::new(dir.path()));
    let agent = brute_agent! {
        use SessionLog { store: store.clone() };
        run |env: &Env| {
            let users = env.messages.iter().filter(|m| m.role == Role::User).count();
            let last = env.messages.last().map(|m| m.content.clone()).unwrap_or_default();
            async move {
                if last == "fail" {
                    return Err(brute::Error::layer("test model", "refused"));
                }
                Ok(Message::assistant(format!("{last} ({users})")))
            }
        };
    };
    let server = Server::new(store.clone())
        .agent("helper", agent)
        .bearer_token(TOKEN);
    (Running::start(server).await, store, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_agent_answers_and_a_fixed_session_remembers() {
    let (running, store, _dir) = remote().await;
    let fresh = RemoteAgent::new("ask", &running.base)
        .token(TOKEN)
        .agent("helper");
    assert_eq!(fresh.ask("one").await.unwrap(), "one (1)");
    assert_eq!(
        fresh.ask("two").await.unwrap(),
        "two (1)",
        "a fresh session per call"
    );
    assert_eq!(store.list().await.unwrap().len(), 2);

    let fixed = RemoteAgent::new("ask", &running.base)
        .token(TOKEN)
        .session("kept");
    assert_eq!(fixed.ask("one").await.unwrap(), "one (1)");
    assert_eq!(fixed.ask("two").await.unwrap(), "two (2)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_failures_name_their_cause() {
    let (running, _store, _dir) = remote().await;
    let wrong = RemoteAgent::new("ask", &running.base).token("nope");
    let error = wrong.ask("hi").await.unwrap_err();
    assert!(
        matches!(error, RemoteError::Status { status: 401, .. }),
        "{error}"
    );
    assert!(error.to_string().contains("remote agent `ask`"), "{error}");

    let unknown = RemoteAgent::new("ask", &running.base)
        .token(TOKEN)
        .agent("nobody");
    let error = unknown.ask("hi").await.unwrap_err();
    assert!(error.to_string().contains("`nobody`"), "{error}");

    let failing = RemoteAgent::new("ask", &running.base)
        .token(TOKEN)
        .session("f");
    let error = failing.ask("fail").await.unwrap_err();
    assert!(matches!(error, RemoteError::Turn { .. }), "{error}");
    // The remote server names the kind and the layer, and keeps the layer's own
    // message ("refused") in its log.
    let shown = error.to_string();
    assert!(
        shown.contains("layer: ") && shown.contains("`test model`"),
        "{error}"
    );
    assert!(!shown.contains("refused"), "{error}");

    let nobody = RemoteAgent::new("ask", "http://127.0.0.1:9");
    let error = nobody.ask("hi").await.unwrap_err();
    assert!(matches!(error, RemoteError::Http { .. }), "{error}");
}
