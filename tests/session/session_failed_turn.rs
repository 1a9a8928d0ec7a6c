//! A turn whose store fails under it, on each store: the turn's error says what of it
//! stays stored and whether its prompt may be sent again; a resend in the same process
//! never stores the prompt twice; and the session is not refused as leased once the
//! store is back (the failed turn's lease, which could not be given back, is taken
//! back by the same store at once). JSONL: a reply too large for the file size limit
//! (`ulimit -f`, in a child process); SQLite: triggers that make every message write
//! and the lease's release fail; PostgreSQL: the server stopped during the model call
//! and started again. PostgreSQL runs for real: its test fails, never skips, without it.

#![cfg(unix)]
#![allow(clippy::unwrap_used)]

use crate::postgres_support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use brute::session::{JsonlStore, PostgresStore, SessionError, SessionStore, SqliteStore};
use brute::{Env, Error, Message, Role, brute_agent, middleware::SessionLog};
use postgres_support::RestartableServer;

/// A model that runs `first` during its first call (which breaks the store), and
/// answers `reply(call)`.
fn model(
    first: impl Fn() + Send + Sync + 'static,
    reply: fn(usize) -> String,
) -> impl Fn(&Env) -> std::future::Ready<Result<Message, Error>> + Send + Sync + 'static {
    let calls = AtomicUsize::new(0);
    move |_env: &Env| {
        let call = calls.fetch_add(1, Ordering::SeqCst);
        if call == 0 {
            first();
        }
        std::future::ready(Ok(Message::assistant(reply(call))))
    }
}

/// Fails unless `error` says that the turn's prompt, and nothing else, stays stored
/// and that sending it again is safe.
fn assert_prompt_left(error: &Error) {
    assert!(
        matches!(
            error,
            Error::Stored {
                stored: 1,
                last: Role::User,
                resend: true,
                ..
            }
        ),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(
        text.contains("1 message of this turn is stored")
            && text.contains("sending the same prompt again is safe"),
        "{text}"
    );
    // The store's own failure is still what `downcast_ref` finds.
    assert!(
        matches!(
            error.downcast_ref::<SessionError>(),
            Some(SessionError::Database { .. })
        ),
        "{error:?}"
    );
}

/// The session is exactly one prompt and its answer.
fn assert_once(stored: &[Message], prompt: &str) {
    assert_eq!(
        stored,
        [Message::user(prompt), Message::assistant("answer")],
        "the prompt stored once, then its answer"
    );
}

/// Makes every message write and every lease release of the SQLite database at
/// `path` fail (`on`), or work again.
fn break_sqlite(path: &Path, on: bool) {
    let db = rusqlite::Connection::open(path).unwrap();
    db.busy_timeout(std::time::Duration::from_secs(30)).unwrap();
    let sql = if on {
        "CREATE TRIGGER fail_insert BEFORE INSERT ON brute_messages BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END;
         CREATE TRIGGER fail_delete BEFORE DELETE ON brute_messages BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END;
         CREATE TRIGGER fail_release BEFORE DELETE ON brute_leases BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END;"
    } else {
        "DROP TRIGGER fail_insert; DROP TRIGGER fail_delete; DROP TRIGGER fail_release;"
    };
    db.execute_batch(sql).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_failing_mid_turn_reports_the_stored_prompt_and_a_resend_stores_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = SqliteStore::open(&path).unwrap();
    let failing = path.clone();
    let model = model(move || break_sqlite(&failing, true), |_| "answer".into());
    let agent = brute_agent! {
        use SessionLog { store: store.clone(), session: "s" };
        run model;
    };
    let error = agent.start("hello").await.unwrap_err();
    assert_prompt_left(&error);
    // The store failed: the prompt stays, and the lease could not be given back.
    assert_eq!(store.load("s").await.unwrap(), [Message::user("hello")]);

    break_sqlite(&path, false);
    // Same process, same store: not refused as leased, and the prompt stored once.
    agent.start("hello").await.unwrap();
    assert_once(&store.load("s").await.unwrap(), "hello");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_different_prompt_after_the_failure_finds_the_failed_one_taken_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = SqliteStore::open(&path).unwrap();
    let failing = path.clone();
    let model = model(move || break_sqlite(&failing, true), |_| "answer".into());
    let agent = brute_agent! {
        use SessionLog { store: store.clone(), session: "s" };
        run model;
    };
    assert_prompt_left(&agent.start("hello").await.unwrap_err());
    break_sqlite(&path, false);
    agent.start("something else").await.unwrap();
    assert_once(&store.load("s").await.unwrap(), "something else");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(feature = "services"),
    ignore = "needs PostgreSQL: cargo xtask test"
)]
async fn postgres_stopped_mid_turn_reports_the_stored_prompt_and_its_session_is_free_when_back() {
    let server = Arc::new(RestartableServer::start());
    let store = PostgresStore::connect(&server.database("failed_turn"))
        .await
        .unwrap();
    let stopping = server.clone();
    // The server stops during the model call: the reply, the removal of the prompt and
    // the release of the lease all fail.
    let model = model(
        move || tokio::task::block_in_place(|| stopping.stop()),
        |_| "answer".into(),
    );
    let agent = brute_agent! {
        use SessionLog { store: store.clone(), session: "s" };
        run model;
    };
    let error = agent.start("hello").await.unwrap_err();
    assert_prompt_left(&error);

    server.start_again();
    // Same process, same store: the session is not leased to the failed turn for the
    // rest of its lease (60 s), and the prompt is stored once.
    agent.start("hello").await.unwrap();
    assert_once(&store.load("s").await.unwrap(), "hello");
}

/// Set in the child process of the JSONL test: the folder of its store.
const CHILD: &str = "BRUTE_TEST_FAILED_TURN_CHILD";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsonl_a_reply_the_file_cannot_take_leaves_no_prompt_behind() {
    if let Some(dir) = std::env::var_os(CHILD) {
        // The child cannot write a file past 512 KiB or less (`ulimit -f 1024`, in
        // blocks of 512 or 1024 bytes by shell): the prompt is stored, the first reply
        // (2 MiB) is not.
        let store = JsonlStore::new(&dir);
        let model = model(
            || (),
            |call| match call {
                0 => "x".repeat(2 << 20),
                _ => "answer".into(),
            },
        );
        let agent = brute_agent! {
            use SessionLog { store: store.clone(), session: "s" };
            run model;
        };
        let error = agent.start("hello").await.unwrap_err();
        assert!(
            error.to_string().contains("File too large"),
            "the reply was stored: is the file size limit set? {error}"
        );
        // Its removal was written: nothing of the turn stays, and the error says
        // nothing is stored.
        assert!(!matches!(error, Error::Stored { .. }), "{error:?}");
        assert_eq!(store.load("s").await.unwrap(), []);
        // Same process, same store: the resend is not refused, and stored once.
        agent.start("hello").await.unwrap();
        assert_once(&store.load("s").await.unwrap(), "hello");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let child = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -f 1024 && trap '' XFSZ && exec \"$0\" \"$@\"")
        .arg(std::env::current_exe().unwrap())
        .args([
            crate::kill_support::test_name(
                module_path!(),
                "jsonl_a_reply_the_file_cannot_take_leaves_no_prompt_behind",
            )
            .as_str(),
            "--exact",
            "--test-threads=1",
        ])
        .env(CHILD, dir.path())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&child.stdout);
    let err = String::from_utf8_lossy(&child.stderr);
    assert!(child.status.success(), "{out}{err}");
    assert!(out.contains("1 passed"), "the child ran no test: {out}");
    // And as another process finds it.
    let stored = JsonlStore::new(dir.path()).load("s").await.unwrap();
    assert_once(&stored, "hello");
}

/// Echoes its text (a tool whose result answers the prompt).
#[brute::tool]
async fn echo(
    /// The text.
    text: String,
) -> Result<String, brute::tools::ToolError> {
    Ok(text)
}

#[tokio::test]
async fn a_turn_answered_before_it_failed_says_not_to_send_the_prompt_again() {
    use brute::middleware::Loop;
    use brute::tools::DefaultToolPipeline;
    let dir = tempfile::tempdir().unwrap();
    let store = JsonlStore::new(dir.path().join("sessions"));
    let calls = AtomicUsize::new(0);
    let model = move |_env: &Env| {
        let reply = match calls.fetch_add(1, Ordering::SeqCst) {
            0 => Ok(Message::tool_calls(
                "",
                vec![brute::ToolCall::new(
                    "c1",
                    "echo",
                    serde_json::json!({"text": "hi"}),
                )],
            )),
            _ => Err(Error::Model(brute::ModelError::Server {
                status: 500,
                message: "POST http://10.0.0.7/v1/chat/completions".into(),
            })),
        };
        std::future::ready(reply)
    };
    let root = dir.path().to_path_buf();
    let agent = brute_agent! {
        use SessionLog { store: store.clone(), session: "s" };
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: (Echo,), root: root };
        run model;
    };
    let error = agent.start("go").await.unwrap_err();
    assert!(
        matches!(
            error,
            Error::Stored {
                stored: 3,
                last: Role::Tool,
                resend: false,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .contains("do not send the prompt again: load the session"),
        "{error}"
    );
    // The failure is still the model's, to `downcast_ref` and to a client.
    assert!(error.downcast_ref::<brute::ModelError>().is_some());
    assert_eq!(error.client_kind(), "model_server_error");
    assert!(!error.client_message().contains("10.0.0.7"));
    assert_eq!(store.load("s").await.unwrap().len(), 3);
}
