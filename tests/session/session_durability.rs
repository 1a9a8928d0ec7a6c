//! Two durability promises of `SessionLog` that only a stack can break:
//!
//! - **Durable before every model call**: a middleware inside `SessionLog` that adds a
//!   message between passes (and takes no durability step itself) still has that
//!   message stored before the model sees it, because the terminal persists before
//!   every call. The model here checks the store before each call.
//! - **A dropped turn's clean-up is fenced by its lease** (PostgreSQL): a turn dropped
//!   after another worker took its expired lease over must not remove anything, least
//!   of all the new holder's messages.

#![cfg(unix)]
#![allow(clippy::unwrap_used)]

use crate::session_support;

use std::sync::Arc;
use std::time::Duration;

use brute::session::{SessionError, SessionId};
use brute::tools::{DefaultToolPipeline, ToolError};
use brute::{
    Env, Error, Handler, Message, Model, Role, ToolCall, brute_agent,
    middleware::{Loop, MaxIterations, SessionLog, SystemPrompt},
};
use session_support::{AnyStore, postgres_database, sqlite_path, temp_dir};
use tokio::sync::Notify;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Returns its text.
#[brute::tool]
async fn echo(
    /// The text.
    text: String,
) -> Result<String, ToolError> {
    Ok(text)
}

/// Adds a user note before every pass of the loop, and takes no durability step: the
/// note reaches the store only through the terminal's.
#[derive(brute::Middleware)]
struct Steer<A> {
    app: A,
}

impl<A: Handler<Env>> Handler<Env> for Steer<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        env.messages
            .push(Message::user(format!("note before pass {}", env.iteration)));
        self.app.call(env).await
    }
}

/// Before each call, checks that the store holds every message it was sent (all but
/// the system prompt, which is never stored); calls `echo` on the first two passes,
/// then answers.
struct Checking {
    store: AnyStore,
}

impl Model for Checking {
    async fn complete(&self, env: &Env) -> Result<brute::Completion, Error> {
        let sent: Vec<&Message> = env
            .messages
            .iter()
            .filter(|m| m.role != Role::System)
            .collect();
        let stored = self.store.load("steered").await;
        let stored: Vec<&Message> = stored.iter().collect();
        assert_eq!(
            stored, sent,
            "pass {}: the model was sent messages the store does not hold",
            env.iteration
        );
        let pass = env.iteration;
        Ok(if pass <= 2 {
            Message::tool_calls(
                "",
                vec![ToolCall::new(
                    format!("p{pass}"),
                    "echo",
                    serde_json::json!({ "text": format!("pass {pass}") }),
                )],
            )
        } else {
            Message::assistant("done")
        }
        .into())
    }
}

/// Two turns on `store` with `Steer` inside `SessionLog`: the model's check passes on
/// every call, and the notes are stored in place.
async fn notes_are_durable_before_each_call(store: AnyStore) {
    let root = temp_dir();
    let agent = brute_agent! {
        use SessionLog { store: store.store(), session: "steered" };
        use SystemPrompt { prompt: "sys" };
        use Loop::ToolResult;
        use MaxIterations { max: 5 };
        use Steer;
        use DefaultToolPipeline { tools: (Echo,), root: root.path() };
        run Checking { store: store.clone() };
    };
    for prompt in ["first", "second"] {
        let outcome = agent.start(prompt).await.unwrap();
        assert_eq!(outcome.text(), Some("done"));
    }
    let stored = store.load("steered").await;
    let notes = stored
        .iter()
        .filter(|m| m.content.starts_with("note before pass"))
        .count();
    assert_eq!(notes, 6, "{stored:#?}");
    assert_eq!(brute::session::check_history(&stored), []);
}

#[test]
fn a_message_added_between_passes_is_stored_before_the_model_call_jsonl() {
    let dir = temp_dir();
    runtime().block_on(async {
        let store = AnyStore::open(
            "jsonl",
            dir.path().to_str().unwrap(),
            Duration::from_secs(60),
        )
        .await;
        notes_are_durable_before_each_call(store).await;
    });
}

#[test]
fn a_message_added_between_passes_is_stored_before_the_model_call_sqlite() {
    let dir = temp_dir();
    let path = sqlite_path(dir.path());
    runtime().block_on(async {
        let store = AnyStore::open("sqlite", path.to_str().unwrap(), Duration::from_secs(60)).await;
        notes_are_durable_before_each_call(store).await;
    });
}

/// Says it was called, then never answers.
struct Hang {
    called: Arc<Notify>,
}

impl Model for Hang {
    async fn complete(&self, _env: &Env) -> Result<brute::Completion, Error> {
        self.called.notify_one();
        std::future::pending().await
    }
}

/// Says it was called, waits for `go`, then answers.
struct Gate {
    called: Arc<Notify>,
    go: Arc<Notify>,
}

impl Model for Gate {
    async fn complete(&self, _env: &Env) -> Result<brute::Completion, Error> {
        self.called.notify_one();
        self.go.notified().await;
        Ok(Message::assistant("b answered").into())
    }
}

/// Worker A's turn stores its prompt and hangs in the model; its lease expires and
/// worker B takes the session over and stores its own prompt; then A's turn is
/// dropped. A's clean-up (take back the prompt nothing answered) must check that A
/// still holds the lease: it does not, so nothing is removed, and B's messages are all
/// there when B's turn ends.
#[test]
#[cfg_attr(
    not(feature = "services"),
    ignore = "needs PostgreSQL: cargo xtask test"
)]
fn a_dropped_turn_whose_lease_was_taken_over_leaves_the_new_holders_messages() {
    let url = postgres_database("abandon_fence");
    runtime().block_on(async {
        // A's lease lasts 1 ms past each write: B can take it at once.
        let store_a = AnyStore::open("postgres", &url, Duration::from_millis(1)).await;
        let store_b = AnyStore::open("postgres", &url, Duration::from_secs(60)).await;
        let (a_called, b_called, go) = (
            Arc::new(Notify::new()),
            Arc::new(Notify::new()),
            Arc::new(Notify::new()),
        );
        let agent_a = brute_agent! {
            use SessionLog { store: store_a.store() };
            run Hang { called: a_called.clone() };
        };
        let agent_b = brute_agent! {
            use SessionLog { store: store_b.store() };
            run Gate { called: b_called.clone(), go: go.clone() };
        };
        // Every task alive now belongs to the stores (their connections).
        let metrics = tokio::runtime::Handle::current().metrics();
        let base = metrics.num_alive_tasks();

        let turn_a = tokio::spawn(async move {
            let mut env = agent_a.env();
            env.extensions.insert(SessionId::from("s"));
            env.messages.push(Message::user("from a"));
            agent_a.turn(env).await
        });
        a_called.notified().await;
        assert_eq!(store_b.load("s").await, [Message::user("from a")]);

        // Generous: only a hang reaches it.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        let turn_b = tokio::spawn(async move {
            loop {
                let mut env = agent_b.env();
                env.extensions.insert(SessionId::from("s"));
                env.messages.push(Message::user("from b"));
                match agent_b.turn(env).await {
                    Err(e) if matches!(e.downcast_ref(), Some(SessionError::Leased { .. })) => {
                        assert!(
                            tokio::time::Instant::now() < deadline,
                            "A's lease never expired"
                        );
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                    other => break other,
                }
            }
        });
        // B holds the session and its prompt is stored.
        b_called.notified().await;
        assert_eq!(
            store_b.load("s").await,
            [Message::user("from a"), Message::user("from b")]
        );

        // A's turn is dropped: its clean-up runs in a task of its own; wait until only
        // B's turn is left.
        turn_a.abort();
        assert!(turn_a.await.unwrap_err().is_cancelled());
        while metrics.num_alive_tasks() > base + 1 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "A's clean-up never ended: {} tasks alive, {} expected",
                metrics.num_alive_tasks(),
                base + 1
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(
            store_b.load("s").await,
            [Message::user("from a"), Message::user("from b")],
            "A's clean-up touched the session B holds"
        );

        go.notify_one();
        let outcome = turn_b.await.unwrap().unwrap();
        assert_eq!(outcome.text(), Some("b answered"));
        assert_eq!(
            store_b.load("s").await,
            [
                Message::user("from a"),
                Message::user("from b"),
                Message::assistant("b answered")
            ]
        );
    });
}
