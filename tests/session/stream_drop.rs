//! Dropping a streamed turn cancels it and leaves the session whole and free at once,
//! on every store: no call without a result, no half message, no unanswered prompt,
//! no lease left behind.

#![allow(clippy::unwrap_used)]

use crate::session_support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use brute::session::{CANCELLED_TOOL_CALL, SessionId, check_history};
use brute::stream::TurnItem;
use brute::tools::{DefaultToolPipeline, ToolError};
use brute::{
    Event, Message, Role, ToolCall, brute_agent,
    middleware::{Loop, SessionLog},
    tool,
};
use serde_json::json;
use session_support::{AnyStore, postgres_database, sqlite_path, temp_dir};

/// Set when `hang` was dropped before it finished.
static HANG_FINISHED: AtomicBool = AtomicBool::new(false);

/// Never returns in a test's time.
#[tool]
async fn hang(
    /// Seconds to wait.
    seconds: u64,
) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    HANG_FINISHED.store(true, Ordering::Relaxed);
    Ok("finished".into())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn env_of(agent: &brute::BoxAgent, prompt: &str) -> brute::Env {
    let mut env = agent.env();
    env.extensions.insert(SessionId::from("s"));
    env.messages.push(Message::user(prompt));
    env
}

/// An agent whose model streams a delta, then (on the first turn) calls `hang`; a
/// prompt "stall" makes the model itself never answer; later turns answer "fine".
fn agent(store: &AnyStore, root: &std::path::Path) -> brute::BoxAgent {
    brute_agent! {
        use SessionLog { store: store.store(), session: "s" };
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: (Hang,), root: root.to_path_buf() };
        run |env| {
            let prompt = env
                .messages
                .iter()
                .rev()
                .find(|m| m.role == Role::User)
                .map(|m| m.content.clone())
                .unwrap_or_default();
            let after_tool = env.messages.last().is_some_and(|m| m.role == Role::Tool);
            env.emit(Event::ContentDelta("partial text"));
            async move {
                match prompt.as_str() {
                    "stall" => std::future::pending().await,
                    "call" if !after_tool => Ok(Message::tool_calls(
                        "calling",
                        vec![ToolCall::new("h1", "hang", json!({"seconds": 3600}))],
                    )),
                    _ => Ok(Message::assistant("fine")),
                }
            }
        };
    }
    .boxed()
}

/// Waits for the end of a dropped turn where the store does it on the runtime
/// (PostgreSQL spawns it): until the session's lease is free (bounded: the lease would
/// last an hour otherwise). JSONL and SQLite are done when the drop returns: nothing
/// is waited for.
async fn settle(store: &AnyStore) {
    use brute::session::SessionStore;
    let AnyStore::Postgres(pg) = store else {
        return;
    };
    // Generous: only a lease never given back reaches it.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while tokio::time::Instant::now() < deadline {
        match pg.open("s").await {
            Ok((lease, _)) => return pg.release(lease).await.unwrap(),
            Err(brute::session::SessionError::Leased { .. }) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(e) => panic!("{e}"),
        }
    }
    panic!("the dropped turn's lease was never given back");
}

/// Drops a stream during a tool call, then during a model call, and checks the store
/// right after each drop and a turn started at once.
async fn drop_mid_turn(store: &AnyStore) {
    let root = temp_dir();
    let agent = agent(store, root.path());
    agent.turn(env_of(&agent, "hello")).await.unwrap();

    // Dropped while the tool runs.
    let mut stream = agent.stream(env_of(&agent, "call"));
    loop {
        match stream.next_item().await.unwrap() {
            TurnItem::ToolCallStart { call } => {
                assert_eq!(call.id, "h1");
                break;
            }
            TurnItem::End { result } => panic!("ended: {result:?}"),
            _ => {}
        }
    }
    drop(stream);
    settle(store).await;
    assert!(!HANG_FINISHED.load(Ordering::Relaxed));
    let stored = store.load("s").await;
    assert_eq!(check_history(&stored), [], "{stored:#?}");
    let last = stored.last().unwrap();
    assert_eq!(last.tool_call_id.as_deref(), Some("h1"));
    assert_eq!(last.content, CANCELLED_TOOL_CALL);
    let before = stored.len();

    // Dropped while the model streams: its partial text is not stored, and neither is
    // the prompt nothing answered.
    let mut stream = agent.stream(env_of(&agent, "stall"));
    assert_eq!(
        stream.next_item().await,
        Some(TurnItem::ContentDelta {
            text: "partial text".into()
        })
    );
    drop(stream);
    settle(store).await;
    let stored = store.load("s").await;
    assert_eq!(stored.len(), before, "{stored:#?}");
    assert!(!stored.iter().any(|m| m.content.contains("partial")));

    // The session is free at once (JSONL, SQLite): no lease waits to expire.
    let outcome = agent.turn(env_of(&agent, "next")).await.unwrap();
    assert_eq!(outcome.text(), Some("fine"));
    let stored = store.load("s").await;
    assert_eq!(check_history(&stored), []);
    assert!(
        stored
            .windows(2)
            .all(|w| !(w[0].role == Role::User && w[1].role == Role::User)),
        "{stored:#?}"
    );
}

#[test]
fn dropping_a_streamed_turn_leaves_a_jsonl_session_whole_and_free() {
    let dir = temp_dir();
    runtime().block_on(async {
        let store = AnyStore::open(
            "jsonl",
            dir.path().to_str().unwrap(),
            Duration::from_secs(3600),
        )
        .await;
        drop_mid_turn(&store).await;
    });
}

#[test]
fn dropping_a_streamed_turn_leaves_a_sqlite_session_whole_and_free() {
    let dir = temp_dir();
    runtime().block_on(async {
        let path = sqlite_path(dir.path());
        // A lease that would outlive the test if the drop left it behind.
        let store =
            AnyStore::open("sqlite", path.to_str().unwrap(), Duration::from_secs(3600)).await;
        drop_mid_turn(&store).await;
    });
}

#[test]
#[cfg_attr(
    not(feature = "services"),
    ignore = "needs PostgreSQL: cargo xtask test"
)]
fn dropping_a_streamed_turn_leaves_a_postgres_session_whole_and_free() {
    let url = postgres_database("stream_drop");
    runtime().block_on(async {
        let store = AnyStore::open("postgres", &url, Duration::from_secs(3600)).await;
        drop_mid_turn(&store).await;
    });
}
