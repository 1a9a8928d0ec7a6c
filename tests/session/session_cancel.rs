//! A turn cancelled before anything answered its prompt leaves the session as it was
//! before the prompt: the next prompt does not follow it as a second user message.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use brute::middleware::SessionLog;
use brute::session::{JsonlStore, SessionId, SessionStore, SqliteStore};
use brute::{Env, Error, Message, Role, brute_agent};
use tokio::sync::Notify;

/// A model that says it was called, then never answers.
fn hanging(
    called: Arc<Notify>,
) -> impl Fn(&Env) -> std::future::Pending<Result<Message, Error>> + Send + Sync {
    move |_env: &Env| {
        called.notify_one();
        std::future::pending()
    }
}

async fn cancel_then_answer<S: SessionStore + Clone + 'static>(store: S) {
    let called = Arc::new(Notify::new());
    let agent = brute_agent! {
        use SessionLog { store: store.clone() };
        run hanging(called.clone());
    };
    let mut env = agent.env();
    env.extensions.insert(SessionId::from("s"));
    env.messages.push(Message::user("first, never answered"));
    tokio::select! {
        _ = agent.turn(env) => panic!("the model never answers"),
        () = called.notified() => {}
    }
    // The turn's future is dropped here: the model was called, nothing answered.
    let history = store.load("s").await.unwrap();
    assert!(
        history.iter().all(|m| m.role != Role::User),
        "the unanswered prompt was taken back: {history:?}"
    );
    let answering = brute_agent! {
        use SessionLog { store: store.clone() };
        run |_env| async { Ok(Message::assistant("hello")) };
    };
    let mut env = answering.env();
    env.extensions.insert(SessionId::from("s"));
    env.messages.push(Message::user("second"));
    answering.turn(env).await.unwrap();
    let history = store.load("s").await.unwrap();
    assert_eq!(
        history,
        [Message::user("second"), Message::assistant("hello")]
    );
}

#[tokio::test]
async fn a_cancelled_prompt_is_taken_back_from_a_jsonl_session() {
    let dir = tempfile::tempdir().unwrap();
    cancel_then_answer(JsonlStore::new(dir.path())).await;
}

#[tokio::test]
async fn a_cancelled_prompt_is_taken_back_from_a_sqlite_session() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("sessions.db")).unwrap();
    cancel_then_answer(store).await;
}
