//! Turn atomicity (issue 14, trap 7): a failed turn that nothing answered is rolled
//! back from the session, so the next turn never starts with two user messages in a
//! row; a failed turn that got further keeps what it stored; `TurnEnd` fires with the
//! outcome either way, a turn refused by the session's lock included.

#![allow(clippy::unwrap_used)]

use crate::session_support;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use brute::session::check_history;
use brute::stream::{TurnItem, TurnResult};
use brute::tools::{DefaultToolPipeline, ToolError};
use brute::{
    Error, Event, EventKind, Message, ModelError, Role, ToolCall, brute_agent,
    middleware::{Loop, SessionLog},
    session::SessionId,
    tool,
};
use serde_json::json;
use session_support::{AnyStore, sqlite_path, temp_dir};

/// Returns its text.
#[tool]
async fn echo(
    /// The text.
    text: String,
) -> Result<String, ToolError> {
    Ok(text)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn refused() -> Error {
    Error::Model(ModelError::Server {
        status: 400,
        message: "refused".into(),
    })
}

/// The first turn's model call fails; the second turn's model sees one user message.
async fn unanswered_turn_is_rolled_back(store: &AnyStore) {
    let fail = AtomicU32::new(1);
    let requests = Mutex::new(Vec::<Vec<Role>>::new());
    let ends = Arc::new(Mutex::new(Vec::new()));
    let mut agent = brute_agent! {
        use SessionLog { store: store.store(), session: "s" };
        run |env| {
            requests.lock().unwrap().push(env.messages.iter().map(|m| m.role).collect());
            let failing = fail.load(Ordering::Relaxed) > 0;
            async move {
                if failing {
                    return Err(refused());
                }
                Ok(Message::assistant("answered"))
            }
        };
    };
    let log = ends.clone();
    agent.on(EventKind::TurnEnd, move |_env, event| {
        if let Event::TurnEnd { result } = event {
            log.lock().unwrap().push(result.is_ok());
        }
    });
    let error = agent.start("first").await.unwrap_err();
    assert!(error.to_string().contains("refused"), "{error}");
    assert_eq!(
        *ends.lock().unwrap(),
        [false],
        "TurnEnd fires for a failed turn"
    );
    assert_eq!(
        store.load("s").await,
        [],
        "the unanswered prompt is rolled back"
    );

    fail.store(0, Ordering::Relaxed);
    let outcome = agent.start("second").await.unwrap();
    assert_eq!(outcome.text(), Some("answered"));
    assert_eq!(requests.lock().unwrap().last().unwrap(), &[Role::User]);
    assert_eq!(
        store.load("s").await,
        [Message::user("second"), Message::assistant("answered")]
    );
    assert_eq!(*ends.lock().unwrap(), [false, true]);
}

#[test]
fn an_unanswered_failed_turn_is_rolled_back_on_the_jsonl_store() {
    let dir = temp_dir();
    runtime().block_on(async {
        let store = AnyStore::open(
            "jsonl",
            dir.path().to_str().unwrap(),
            Duration::from_secs(60),
        )
        .await;
        unanswered_turn_is_rolled_back(&store).await;
    });
}

#[test]
fn an_unanswered_failed_turn_is_rolled_back_on_the_sqlite_store() {
    let dir = temp_dir();
    let path = sqlite_path(dir.path());
    runtime().block_on(async {
        let store = AnyStore::open("sqlite", path.to_str().unwrap(), Duration::from_secs(60)).await;
        unanswered_turn_is_rolled_back(&store).await;
    });
}

#[test]
fn a_turn_that_failed_after_a_tool_result_keeps_what_it_stored() {
    let dir = temp_dir();
    let root = temp_dir();
    runtime().block_on(async {
        let store = AnyStore::open("jsonl", dir.path().to_str().unwrap(), Duration::from_secs(60)).await;
        let fail_after_tool = AtomicU32::new(1);
        let agent = brute_agent! {
            use SessionLog { store: store.store(), session: "s" };
            use Loop::ToolResult;
            use DefaultToolPipeline { tools: (Echo,), root: root.path().to_path_buf() };
            run |env| {
                let after_tool = env.messages.last().is_some_and(|m| m.role == Role::Tool);
                let failing = after_tool && fail_after_tool.load(Ordering::Relaxed) > 0;
                async move {
                    if failing {
                        return Err(refused());
                    }
                    Ok(if after_tool {
                        Message::assistant("done")
                    } else {
                        Message::tool_calls("", vec![ToolCall::new("c1", "echo", json!({"text": "x"}))])
                    })
                }
            };
        };
        let mut stream = agent.stream({
            let mut env = agent.env();
            env.extensions.insert(SessionId::from("s"));
            env.messages.push(Message::user("first"));
            env
        });
        let mut last = None;
        while let Some(item) = stream.next_item().await {
            last = Some(item);
        }
        assert!(
            matches!(&last, Some(TurnItem::End { result: TurnResult::Failed { error } }) if error.contains("refused")),
            "{last:?}"
        );
        // The tool ran: its call and result stay, and the session does not end with
        // the prompt.
        let stored = store.load("s").await;
        let roles: Vec<Role> = stored.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool]);

        fail_after_tool.store(0, Ordering::Relaxed);
        let mut env = agent.env();
        env.extensions.insert(SessionId::from("s"));
        env.messages.push(Message::user("second"));
        agent.turn(env).await.unwrap();
        let stored = store.load("s").await;
        assert_eq!(check_history(&stored), []);
        assert!(
            stored.windows(2).all(|w| !(w[0].role == Role::User && w[1].role == Role::User)),
            "two user messages in a row: {stored:?}"
        );
    });
}

#[test]
fn a_turn_refused_by_the_session_lock_ends_with_its_error_and_removes_nothing() {
    let dir = temp_dir();
    runtime().block_on(async {
        let store = AnyStore::open("sqlite", sqlite_path(dir.path()).to_str().unwrap(), Duration::from_secs(60)).await;
        let AnyStore::Sqlite(sqlite) = &store else { unreachable!() };
        let agent = brute_agent! {
            use SessionLog { store: store.store(), session: "s" };
            run |_env| async { Ok(Message::assistant("hi")) };
        };
        agent.start("kept").await.unwrap();
        // Another worker holds the session.
        let (lease, _) = brute::session::SessionStore::open(&**sqlite, "s").await.unwrap();
        let items = {
            let mut env = agent.env();
            env.messages.push(Message::user("refused"));
            let mut stream = agent.stream(env);
            let mut items = Vec::new();
            while let Some(item) = stream.next_item().await {
                items.push(item);
            }
            items
        };
        assert!(
            matches!(items.as_slice(), [TurnItem::End { result: TurnResult::Failed { error } }] if error.contains("s")),
            "{items:?}"
        );
        brute::session::SessionStore::release(&**sqlite, lease).await.unwrap();
        assert_eq!(
            store.load("s").await,
            [Message::user("kept"), Message::assistant("hi")]
        );
    });
}
