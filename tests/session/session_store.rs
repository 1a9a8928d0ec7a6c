//! The session stores: every store keeps the same promises (load, append, atomic
//! replace, an exclusive lease, list, delete), `SessionLog` runs on each, histories are
//! validated, and sessions copy between stores. PostgreSQL runs for real (see
//! `session_support`): these tests fail, never skip, without it.

#![allow(clippy::unwrap_used)]

use crate::scripted_tools;
use crate::session_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use brute::session::{
    JsonlStore, PostgresStore, SessionId, SessionStore, SqliteStore, Store, Validation,
    copy_sessions,
};
use brute::{
    Env, Message, Role, ToolCall, brute_agent,
    middleware::{SessionLog, SystemPrompt},
    providers::ScriptedModel,
    session::{INTERRUPTED_TOOL_CALL, SessionError},
};
use scripted_tools::{assert_no_dangling_call, echo_calls};
use session_support::{postgres_database, sqlite_path, temp_dir};

fn is_refused(error: &SessionError) -> bool {
    matches!(
        error,
        SessionError::Locked { .. } | SessionError::Leased { .. }
    )
}

/// The promises every store keeps.
async fn conformance<S: SessionStore>(store: &S) {
    // An unknown session is empty; opening takes the lease.
    let (mut lease, history) = store.open("alice").await.unwrap();
    assert!(history.is_empty());
    // The lease is exclusive.
    let refused = store.open("alice").await.unwrap_err();
    assert!(is_refused(&refused), "{refused:?}");
    assert!(
        refused.to_string().contains("alice"),
        "the error names the session: {refused}"
    );
    // Deleting a leased session is refused.
    assert!(is_refused(&store.delete("alice").await.unwrap_err()));
    // Appends, system messages skipped.
    store
        .append(
            &mut lease,
            &[Message::system("never stored"), Message::user("one")],
        )
        .await
        .unwrap();
    store
        .append(
            &mut lease,
            &[Message::assistant("two"), Message::user("three")],
        )
        .await
        .unwrap();
    store.append(&mut lease, &[]).await.unwrap();
    assert_eq!(
        store.load("alice").await.unwrap(),
        [
            Message::user("one"),
            Message::assistant("two"),
            Message::user("three")
        ]
    );
    // A rewrite from a position keeps what is before it (system messages skipped);
    // from the end it is an append; with nothing it cuts.
    let tail = [
        Message::user("three!"),
        Message::system("never stored"),
        Message::assistant("four"),
    ];
    store.rewrite(&mut lease, 2, &tail).await.unwrap();
    let texts = |messages: Vec<Message>| -> Vec<String> {
        messages.into_iter().map(|m| m.content).collect()
    };
    let stored = texts(store.load("alice").await.unwrap());
    assert_eq!(stored, ["one", "two", "three!", "four"]);
    store
        .rewrite(&mut lease, 4, &[Message::user("five")])
        .await
        .unwrap();
    store
        .append(&mut lease, &[Message::assistant("six")])
        .await
        .unwrap();
    let stored = texts(store.load("alice").await.unwrap());
    assert_eq!(stored, ["one", "two", "three!", "four", "five", "six"]);
    store.rewrite(&mut lease, 1, &[]).await.unwrap();
    store
        .append(&mut lease, &[Message::assistant("two again")])
        .await
        .unwrap();
    let stored = texts(store.load("alice").await.unwrap());
    assert_eq!(stored, ["one", "two again"]);
    // Replace, then append after it.
    store
        .replace(&mut lease, &[Message::user("summary")])
        .await
        .unwrap();
    store
        .append(&mut lease, &[Message::assistant("after")])
        .await
        .unwrap();
    store.release(lease).await.unwrap();
    // Released: another turn opens it and sees everything, and a rewrite from a
    // position of what it loaded (not of what it appended) keeps what is before it.
    let (mut lease, history) = store.open("alice").await.unwrap();
    assert_eq!(
        history,
        [Message::user("summary"), Message::assistant("after")]
    );
    store
        .rewrite(&mut lease, 1, &[Message::assistant("after!")])
        .await
        .unwrap();
    store.release(lease).await.unwrap();
    assert_eq!(
        store.load("alice").await.unwrap(),
        [Message::user("summary"), Message::assistant("after!")]
    );
    // Tool calls, reasoning and idempotency keys round-trip losslessly.
    let answer = Message::assistant("done").with_reasoning("thought");
    let rich = vec![
        Message::user("go").with_idempotency_key("turn-1"),
        echo_calls("c", &["a", "b"]).with_idempotency_key(r#"["d-1","c-0","{}"]"#),
        Message::tool_result("c-0", "a"),
        Message::tool_result("c-1", "b"),
        answer,
    ];
    let (mut lease, _) = store.open("bob").await.unwrap();
    store.append(&mut lease, &rich).await.unwrap();
    store.release(lease).await.unwrap();
    assert_eq!(store.load("bob").await.unwrap(), rich);
    // List and delete.
    assert_eq!(store.list().await.unwrap(), ["alice", "bob"]);
    store.delete("alice").await.unwrap();
    store.delete("nobody").await.unwrap();
    assert_eq!(store.list().await.unwrap(), ["bob"]);
    assert!(store.load("alice").await.unwrap().is_empty());
}

#[tokio::test]
async fn the_jsonl_store_keeps_the_promises() {
    let dir = temp_dir();
    let store = JsonlStore::new(dir.path());
    conformance(&store).await;
    // No lock file is left behind.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["bob.jsonl"]);
    // Ids are file names.
    for bad in ["", "../x", "a/b", ".hidden"] {
        assert!(matches!(
            store.open(bad).await.unwrap_err(),
            SessionError::BadId { .. }
        ));
    }
}

#[tokio::test]
async fn the_sqlite_store_keeps_the_promises() {
    let dir = temp_dir();
    let store = SqliteStore::open(sqlite_path(dir.path())).unwrap();
    conformance(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(feature = "services"),
    ignore = "needs PostgreSQL: cargo xtask test"
)]
async fn the_postgres_store_keeps_the_promises() {
    let store = PostgresStore::connect(&postgres_database("promises"))
        .await
        .unwrap();
    conformance(&store).await;
}

/// Opens session `id` of `store` as soon as the lease another holder let lapse has
/// expired: polls the lease row (each `open` reads it), no sleep.
async fn open_when_expired<S: SessionStore>(store: &S, id: &str) -> (S::Lease, Vec<Message>) {
    for _ in 0..1_000_000 {
        match store.open(id).await {
            Ok(opened) => return opened,
            Err(e) if is_refused(&e) => tokio::task::yield_now().await,
            Err(e) => panic!("{e}"),
        }
    }
    panic!("the lease of {id} never expired");
}

/// A lease whose holder died (here: never released) frees itself after its ttl, and
/// the old holder's writes are refused from then on: two workers never write one
/// session at once. `lease_ttl` belongs to the store value it was set on: the holder
/// renews its lease for a millisecond through a clone, and the next worker's lease,
/// taken through the original, is not shortened by it.
async fn an_expired_lease_is_taken_and_fenced<S: SessionStore + Clone>(
    store: &S,
    short: impl Fn(S) -> S,
) {
    let (mut stale, _) = store.open("s").await.unwrap();
    store
        .append(&mut stale, &[Message::user("from the first worker")])
        .await
        .unwrap();
    assert!(is_refused(&store.open("s").await.unwrap_err()));
    // The last write of the first worker renews its lease for 1 ms only.
    short(store.clone())
        .append(&mut stale, &[Message::assistant("renewed briefly")])
        .await
        .unwrap();
    let (mut fresh, history) = open_when_expired(store, "s").await;
    assert_eq!(
        history,
        [
            Message::user("from the first worker"),
            Message::assistant("renewed briefly")
        ]
    );
    let lost = store
        .append(&mut stale, &[Message::user("late")])
        .await
        .unwrap_err();
    // It says what the old holder had stored: both its messages stay.
    assert!(
        matches!(lost, SessionError::LeaseLost { durable: 2, .. }),
        "{lost:?}"
    );
    assert!(
        lost.to_string()
            .ends_with("the first 2 messages of this turn (its prompt first) are stored and stay; nothing after them was"),
        "{lost}"
    );
    assert!(matches!(
        store
            .replace(&mut stale, &[Message::user("late")])
            .await
            .unwrap_err(),
        SessionError::LeaseLost { .. }
    ));
    // The fresh lease has the original's ttl (a minute), not the clone's.
    assert!(is_refused(&store.open("s").await.unwrap_err()));
    store
        .append(&mut fresh, &[Message::user("second worker")])
        .await
        .unwrap();
    store.release(fresh).await.unwrap();
    assert_eq!(
        store.load("s").await.unwrap(),
        [
            Message::user("from the first worker"),
            Message::assistant("renewed briefly"),
            Message::user("second worker")
        ]
    );
}

#[tokio::test]
async fn sqlite_leases_expire_and_fence_the_old_holder() {
    let dir = temp_dir();
    let store = SqliteStore::open(sqlite_path(dir.path())).unwrap();
    an_expired_lease_is_taken_and_fenced(&store, |s| s.lease_ttl(Duration::from_millis(1))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(feature = "services"),
    ignore = "needs PostgreSQL: cargo xtask test"
)]
async fn postgres_leases_expire_and_fence_the_old_holder() {
    let store = PostgresStore::connect(&postgres_database("fence"))
        .await
        .unwrap();
    an_expired_lease_is_taken_and_fenced(&store, |s| s.lease_ttl(Duration::from_millis(1))).await;
}

/// A turn whose lease is lost while the model thinks: the prompt was stored before
/// the model call and stays (the failed turn's rollback cannot take it back without
/// the lease), and the error says so, so a caller does not send the prompt again.
#[tokio::test]
async fn a_turn_that_lost_its_lease_says_its_prompt_is_stored() {
    let dir = temp_dir();
    let store = SqliteStore::open(sqlite_path(dir.path())).unwrap();
    let other = store.clone();
    let agent = brute_agent! {
        // Every write of the turn renews its lease for 1 ms.
        use SessionLog { store: store.clone().lease_ttl(Duration::from_millis(1)), session: "s" };
        run move |_env: &Env| {
            let other = other.clone();
            async move {
                // Another worker takes the session once the lease has lapsed.
                let (lease, _) = open_when_expired(&other, "s").await;
                drop(lease);
                Ok(Message::assistant("too late"))
            }
        };
    };
    let error = agent.start("hello").await.unwrap_err();
    let Some(SessionError::LeaseLost { session, durable }) = error.downcast_ref::<SessionError>()
    else {
        panic!("LeaseLost expected, got {error:?}");
    };
    assert_eq!((session.as_str(), *durable), ("s", 1));
    assert!(
        error.to_string().ends_with(
            "the first message of this turn (its prompt) is stored and stays; nothing after it was"
        ),
        "{error}"
    );
    assert_eq!(store.load("s").await.unwrap(), [Message::user("hello")]);
}

/// A store whose `release` fails (the database went away after the last write).
#[derive(Clone)]
struct FailingRelease(SqliteStore);

impl SessionStore for FailingRelease {
    type Lease = <SqliteStore as SessionStore>::Lease;

    async fn open(&self, id: &str) -> Result<(Self::Lease, Vec<Message>), SessionError> {
        self.0.open(id).await
    }
    async fn append(
        &self,
        lease: &mut Self::Lease,
        messages: &[Message],
    ) -> Result<(), SessionError> {
        self.0.append(lease, messages).await
    }
    async fn rewrite(
        &self,
        lease: &mut Self::Lease,
        from: usize,
        messages: &[Message],
    ) -> Result<(), SessionError> {
        self.0.rewrite(lease, from, messages).await
    }
    async fn release(&self, _lease: Self::Lease) -> Result<(), SessionError> {
        Err(SessionError::WriterGone { store: "test" })
    }
    async fn load(&self, id: &str) -> Result<Vec<Message>, SessionError> {
        self.0.load(id).await
    }
    async fn list(&self) -> Result<Vec<String>, SessionError> {
        self.0.list().await
    }
    async fn delete(&self, id: &str) -> Result<(), SessionError> {
        self.0.delete(id).await
    }
}

/// Every message stored and only the release failed: the turn succeeds, the outcome
/// says what was stored and that the lease was not given back, and the failure is an
/// event.
#[tokio::test]
async fn a_failed_release_after_everything_was_stored_is_a_warning() {
    let dir = temp_dir();
    let store = SqliteStore::open(sqlite_path(dir.path())).unwrap();
    let mut agent = brute_agent! {
        use SessionLog { store: FailingRelease(store.clone()), session: "s" };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
    let reported = Arc::new(Mutex::new(Vec::new()));
    let log = reported.clone();
    agent.on(brute::EventKind::Error, move |_env, event| {
        if let brute::Event::Error { layer, error } = event {
            assert_eq!(*layer, "SessionLog");
            log.lock().unwrap().push(error.to_string());
        }
    });
    let outcome = agent.start("hello").await.unwrap();
    let saved = outcome
        .env
        .extensions
        .get::<brute::session::TurnSaved>()
        .unwrap();
    assert_eq!(
        (saved.session.as_str(), saved.messages, saved.released),
        ("s", 2, false)
    );
    assert_eq!(
        *reported.lock().unwrap(),
        ["SessionLog: test session store: its writer thread is gone"]
    );
    assert_eq!(
        store.load("s").await.unwrap(),
        [Message::user("hello"), Message::assistant("hi")]
    );
}

/// Answers from history: "Your name is X." once told "My name is X.".
fn memory_model() -> ScriptedModel {
    ScriptedModel::from_fn(|env| {
        let name = env
            .messages
            .iter()
            .filter(|m| m.role == Role::User)
            .find_map(|m| m.content.strip_prefix("My name is "))
            .map(|n| n.trim_end_matches('.').to_string());
        match (env.messages.last().map(|m| m.content.as_str()), name) {
            (Some("What's my name?"), Some(name)) => {
                Message::assistant(format!("Your name is {name}."))
            }
            (Some("What's my name?"), None) => Message::assistant("I don't know."),
            _ => Message::assistant("Nice to meet you."),
        }
    })
}

/// `SessionLog` on `store`: sessions chosen per turn with `SessionId`, one shared
/// agent serving several sessions at once.
async fn session_log_on(store: Store, read: impl Fn(&str) -> Vec<Message>) {
    let agent = Arc::new(brute_agent! {
        use SessionLog { store: store };
        use SystemPrompt { prompt: "sys" };
        run memory_model();
    });
    let names = ["Ada", "Grace", "Alan", "Ken"];
    let mut tasks = Vec::new();
    for name in names {
        let agent = agent.clone();
        tasks.push(tokio::spawn(async move {
            let mut last = None;
            for prompt in [format!("My name is {name}."), "What's my name?".into()] {
                let mut env = agent.env();
                env.extensions.insert(SessionId::from(name));
                env.messages.push(Message::user(prompt));
                last = agent.turn(env).await.unwrap().text().map(str::to_string);
            }
            last
        }));
    }
    for (name, task) in names.into_iter().zip(tasks) {
        assert_eq!(
            task.await.unwrap().unwrap(),
            format!("Your name is {name}.")
        );
        let saved = read(name);
        assert_eq!(saved.len(), 4);
        assert!(saved.iter().all(|m| m.role != Role::System));
    }
    // Without a SessionId, the `session` option's default.
    agent.start("What's my name?").await.unwrap();
    assert_eq!(read("default").len(), 2);
}

fn blocking_load<S: SessionStore>(store: &Arc<S>, id: &str) -> Vec<Message> {
    let store = store.clone();
    let id = id.to_string();
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(store.load(&id))
            .unwrap()
    })
    .join()
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(feature = "services"),
    ignore = "needs PostgreSQL: cargo xtask test"
)]
async fn session_log_runs_on_every_store() {
    let dir = temp_dir();
    let jsonl = Arc::new(JsonlStore::new(dir.path().join("jsonl")));
    session_log_on(jsonl.clone().into(), |id| blocking_load(&jsonl, id)).await;
    // The file store's files are today's format: `SessionFile` reads them.
    assert_eq!(
        brute::session::SessionFile::read(dir.path().join("jsonl/Ada.jsonl"))
            .unwrap()
            .len(),
        4
    );

    let sqlite = Arc::new(SqliteStore::open(sqlite_path(dir.path())).unwrap());
    session_log_on(sqlite.clone().into(), |id| blocking_load(&sqlite, id)).await;

    let postgres = Arc::new(
        PostgresStore::connect(&postgres_database("session_log"))
            .await
            .unwrap(),
    );
    // The store's connections live on this runtime: read through it.
    let handle = tokio::runtime::Handle::current();
    let pg = postgres.clone();
    session_log_on(postgres.into(), move |id| {
        let pg = pg.clone();
        let id = id.to_string();
        let handle = handle.clone();
        std::thread::spawn(move || handle.block_on(pg.load(&id)).unwrap())
            .join()
            .unwrap()
    })
    .await;
}

/// With the default file store, a `SessionId` names `<id>.jsonl` beside `path`.
#[tokio::test]
async fn a_session_id_with_the_default_store_names_a_file_beside_the_path() {
    let dir = temp_dir();
    let agent = brute_agent! {
        use SessionLog { path: dir.path().join("default.jsonl") };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
    let mut env = agent.env();
    env.extensions.insert(SessionId::from("carol"));
    env.messages.push(Message::user("hello"));
    agent.turn(env).await.unwrap();
    assert_eq!(
        brute::session::SessionFile::read(dir.path().join("carol.jsonl")).unwrap(),
        [Message::user("hello"), Message::assistant("hi")]
    );
    assert!(!dir.path().join("default.jsonl").exists());
}

/// A history that breaks the tool-call rules, as another tool (or an old version)
/// may have written it.
fn broken_history() -> Vec<Message> {
    let mut no_id = Message::tool_result("x", "no id");
    no_id.tool_call_id = None;
    vec![
        Message::user("go"),
        Message::tool_calls(
            "",
            vec![
                ToolCall::new("dup", "echo", serde_json::json!({"text": "1"})),
                ToolCall::new("dup", "echo", serde_json::json!({"text": "2"})),
                ToolCall::new("once", "echo", serde_json::json!({"text": "3"})),
            ],
        ),
        Message::tool_result("dup", "1"),
        Message::tool_result("dup", "2"),
        Message::tool_result("once", "3"),
        Message::tool_result("once", "3 again"),
        Message::tool_result("ghost", "orphan"),
        no_id,
        Message::assistant("done"),
    ]
}

/// Collects `warn` events of the session log.
#[derive(Clone, Default)]
struct Warnings(Arc<Mutex<Vec<String>>>);

impl tracing::Subscriber for Warnings {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Text(String);
        impl tracing::field::Visit for Text {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
        }
        if *event.metadata().level() == tracing::Level::WARN {
            let mut text = Text(String::new());
            event.record(&mut text);
            self.0.lock().unwrap().push(text.0);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[tokio::test]
async fn a_broken_history_is_repaired_with_a_warning_naming_each_repair() {
    let dir = temp_dir();
    let store = Arc::new(SqliteStore::open(sqlite_path(dir.path())).unwrap());
    let (mut lease, _) = store.open("broken").await.unwrap();
    store.append(&mut lease, &broken_history()).await.unwrap();
    store.release(lease).await.unwrap();

    let shown = Arc::new(Mutex::new(Vec::new()));
    let log = shown.clone();
    let agent = brute_agent! {
        use SessionLog { store: store.clone(), session: "broken" };
        run move |env: &Env| {
            *log.lock().unwrap() = env.messages.to_vec();
            async { Ok(Message::assistant("ok")) }
        };
    };
    let warnings = Warnings::default();
    let guard = tracing::subscriber::set_default(warnings.clone());
    agent.start("again").await.unwrap();
    drop(guard);
    let warnings = warnings.0.lock().unwrap().clone();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let warning = &warnings[0];
    for part in [
        "session broken was repaired",
        "message 2: call id \"dup\" is used twice in one message",
        "message 6: a second result for call \"once\"",
        "message 7: tool result for call \"ghost\" answers no call before it",
        "message 8: tool result without a call id",
    ] {
        assert!(warning.contains(part), "{part} missing from {warning}");
    }
    let shown = shown.lock().unwrap().clone();
    assert_no_dangling_call(&shown);
    assert_eq!(shown[1].tool_calls[1].id, "dup~2");
    assert_eq!(shown[3], Message::tool_result("dup~2", "2"));
    assert_eq!(shown.len(), 7);
    // The repair was written back, with the turn after it.
    let stored = store.load("broken").await.unwrap();
    assert_eq!(stored[..6], shown[..6]);
    assert_eq!(stored.len(), 8);
}

#[tokio::test]
async fn a_broken_history_is_refused_when_told_naming_session_and_message() {
    let dir = temp_dir();
    let store = Arc::new(JsonlStore::new(dir.path()));
    let (mut lease, _) = store.open("broken").await.unwrap();
    store.append(&mut lease, &broken_history()).await.unwrap();
    store.release(lease).await.unwrap();
    let before = std::fs::read(dir.path().join("broken.jsonl")).unwrap();
    let agent = brute_agent! {
        use SessionLog { store: store.clone(), session: "broken", validation: Validation::Refuse };
        run |_env| async { Ok(Message::assistant("never")) };
    };
    let error = agent.start("again").await.unwrap_err();
    let Some(SessionError::Invalid {
        session, message, ..
    }) = error.downcast_ref::<SessionError>()
    else {
        panic!("expected an invalid-history error, got {error:?}");
    };
    assert_eq!((session.as_str(), *message), ("broken", 2));
    assert_eq!(
        error.to_string(),
        "SessionLog: session broken: message 2: call id \"dup\" is used twice in one message; the session was left untouched"
    );
    assert_eq!(
        std::fs::read(dir.path().join("broken.jsonl")).unwrap(),
        before
    );
    // The lease was given back: the session is not left locked.
    assert!(!dir.path().join("broken.jsonl.lock").exists());
    // A crash's dangling call is repaired even so.
    std::fs::write(
        dir.path().join("crashed.jsonl"),
        [Message::user("go"), echo_calls("c", &["a"])]
            .iter()
            .map(|m| serde_json::to_string(m).unwrap() + "\n")
            .collect::<String>(),
    )
    .unwrap();
    let agent = brute_agent! {
        use SessionLog { store: store.clone(), session: "crashed", validation: Validation::Refuse };
        run |_env| async { Ok(Message::assistant("resumed")) };
    };
    agent.start("continue").await.unwrap();
    let saved = store.load("crashed").await.unwrap();
    assert_eq!(saved[2], Message::tool_result("c-0", INTERRUPTED_TOOL_CALL));
    assert_eq!(saved.len(), 5);
}

#[cfg(unix)]
#[tokio::test]
async fn a_symlinked_session_keeps_its_link_through_a_rewrite() {
    let dir = temp_dir();
    let target = dir.path().join("real/target.jsonl");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::write(&target, "").unwrap();
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink("real/target.jsonl", &link).unwrap();
    let (mut file, _) = brute::session::SessionFile::open(&link).unwrap();
    file.append(&[Message::user("one")]).unwrap();
    file.rewrite(&[Message::user("rewritten")]).unwrap();
    file.append(&[Message::assistant("two")]).unwrap();
    drop(file);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the rewrite replaced the link"
    );
    assert_eq!(
        brute::session::SessionFile::read(&target).unwrap(),
        [Message::user("rewritten"), Message::assistant("two")]
    );
    // Nothing else is left in either folder.
    let names = |d: &std::path::Path| {
        let mut n: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    };
    assert_eq!(names(dir.path()), ["link.jsonl", "real"]);
    assert_eq!(names(target.parent().unwrap()), ["target.jsonl"]);
}

#[tokio::test]
async fn a_leftover_temp_file_of_an_interrupted_rewrite_is_removed_on_open() {
    let dir = temp_dir();
    let path = dir.path().join("s.jsonl");
    std::fs::write(
        &path,
        serde_json::to_string(&Message::user("kept")).unwrap() + "\n",
    )
    .unwrap();
    // What a crash between writing the temp file and renaming it leaves.
    let leftover = dir.path().join(".s.jsonl.tmp");
    std::fs::write(&leftover, "{\"role\":\"user\",\"content\":\"half").unwrap();
    let (file, history) = brute::session::SessionFile::open(&path).unwrap();
    drop(file);
    assert_eq!(history, [Message::user("kept")]);
    assert!(!leftover.exists());
}

#[cfg(unix)]
#[tokio::test]
async fn a_fifo_at_the_session_path_is_refused_without_hanging() {
    let dir = temp_dir();
    let path = dir.path().join("fifo.jsonl");
    let status = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap();
    assert!(status.success());
    let agent = brute_agent! {
        use SessionLog { path: path.clone() };
        run |_env| async { Ok(Message::assistant("never")) };
    };
    let error = tokio::time::timeout(Duration::from_secs(10), agent.start("hi"))
        .await
        .expect("loading a FIFO hung")
        .unwrap_err();
    assert!(
        matches!(
            error.downcast_ref::<SessionError>(),
            Some(SessionError::NotAFile { kind: "FIFO", .. })
        ),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("not a regular file (a FIFO)"),
        "{error}"
    );
    assert!(matches!(
        brute::session::SessionFile::read(&path).unwrap_err(),
        SessionError::NotAFile { .. }
    ));
}

/// Sessions move JSONL → SQLite → PostgreSQL → JSONL unchanged, byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(feature = "services"),
    ignore = "needs PostgreSQL: cargo xtask test"
)]
async fn sessions_copy_between_every_store() {
    let dir = temp_dir();
    let jsonl = JsonlStore::new(dir.path().join("from"));
    let mut sessions = Vec::new();
    for n in 0..5 {
        let id = format!("s{n}");
        let messages = vec![
            Message::user(format!("hello {n} \u{1F600} \"quoted\"")),
            echo_calls(&id, &["x", "y"]),
            Message::tool_result(format!("{id}-0"), "x"),
            Message::tool_result(format!("{id}-1"), "y"),
            Message::assistant("done"),
        ];
        let (mut lease, _) = jsonl.open(&id).await.unwrap();
        jsonl.append(&mut lease, &messages).await.unwrap();
        jsonl.release(lease).await.unwrap();
        sessions.push((id, messages));
    }
    let sqlite = SqliteStore::open(sqlite_path(dir.path())).unwrap();
    let postgres = PostgresStore::connect(&postgres_database("copy"))
        .await
        .unwrap();
    let back = JsonlStore::new(dir.path().join("back"));
    assert_eq!(copy_sessions(&jsonl, &sqlite).await.unwrap(), 5);
    assert_eq!(copy_sessions(&sqlite, &postgres).await.unwrap(), 5);
    assert_eq!(copy_sessions(&postgres, &back).await.unwrap(), 5);
    for (id, messages) in &sessions {
        assert_eq!(&sqlite.load(id).await.unwrap(), messages);
        assert_eq!(&postgres.load(id).await.unwrap(), messages);
        assert_eq!(
            std::fs::read(dir.path().join(format!("from/{id}.jsonl"))).unwrap(),
            std::fs::read(dir.path().join(format!("back/{id}.jsonl"))).unwrap()
        );
    }
    // Copying again replaces rather than doubles.
    assert_eq!(copy_sessions(&jsonl, &sqlite).await.unwrap(), 5);
    assert_eq!(sqlite.load("s0").await.unwrap().len(), 5);
}

/// Stores three messages in session `bad` of `store`, then lets `corrupt` replace the
/// body of the second stored row (`seq` 1) with text that is not JSON.
async fn a_bad_row_is_refused_naming_its_position<S: SessionStore>(
    store: &S,
    corrupt: impl FnOnce(),
) {
    let (mut lease, _) = store.open("bad").await.unwrap();
    let messages = [
        Message::user("one"),
        Message::assistant("two"),
        Message::user("three"),
    ];
    store.append(&mut lease, &messages).await.unwrap();
    store.release(lease).await.unwrap();
    corrupt();
    for error in [
        store.load("bad").await.unwrap_err(),
        store.open("bad").await.unwrap_err(),
    ] {
        let SessionError::BadRow {
            ref session,
            message,
            ..
        } = error
        else {
            panic!("BadRow expected: {error:?}");
        };
        assert_eq!((session.as_str(), message), ("bad", 2), "{error}");
        assert!(
            error
                .to_string()
                .starts_with("session bad: stored message 2 is not a message: "),
            "{error}"
        );
    }
}

/// A row of the SQLite store whose body is not a message is refused on load and
/// open, and the error says which stored message it is (counted from 1).
#[tokio::test]
async fn a_bad_sqlite_row_is_refused_naming_its_position() {
    let dir = temp_dir();
    let path = sqlite_path(dir.path());
    let store = SqliteStore::open(&path).unwrap();
    a_bad_row_is_refused_naming_its_position(&store, || {
        let db = rusqlite::Connection::open(&path).unwrap();
        db.busy_timeout(Duration::from_secs(10)).unwrap();
        let rows = db
            .execute(
                "UPDATE brute_messages SET body = 'not json' WHERE session = 'bad' AND seq = 1",
                [],
            )
            .unwrap();
        assert_eq!(rows, 1);
    })
    .await;
}

/// The same for a row of the PostgreSQL store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(feature = "services"),
    ignore = "needs PostgreSQL: cargo xtask test"
)]
async fn a_bad_postgres_row_is_refused_naming_its_position() {
    let url = postgres_database("bad_row");
    let store = PostgresStore::connect(&url).await.unwrap();
    a_bad_row_is_refused_naming_its_position(&store, || {
        let out = std::process::Command::new("psql")
            .args(["-q", "-t", &url, "-c"])
            .arg("UPDATE brute_messages SET body = 'not json' WHERE session = 'bad' AND seq = 1")
            .output()
            .unwrap();
        assert!(
            out.status.success() && String::from_utf8_lossy(&out.stderr).is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    })
    .await;
}

#[tokio::test]
async fn a_jsonl_session_with_a_byte_order_mark_is_rewritten_from_a_position() {
    let dir = temp_dir();
    let store = JsonlStore::new(dir.path());
    let line = |m: &Message| serde_json::to_string(m).unwrap();
    let (one, two) = (Message::user("one"), Message::assistant("two"));
    std::fs::write(
        dir.path().join("bom.jsonl"),
        format!("\u{feff}{}\n{}\n", line(&one), line(&two)),
    )
    .unwrap();
    let (mut lease, history) = store.open("bom").await.unwrap();
    assert_eq!(history, [one.clone(), two]);
    store
        .rewrite(&mut lease, 1, &[Message::assistant("two!")])
        .await
        .unwrap();
    store.release(lease).await.unwrap();
    assert_eq!(
        store.load("bom").await.unwrap(),
        [one, Message::assistant("two!")]
    );
}

#[test]
fn a_session_file_opened_directly_is_repaired_once_with_one_warning() {
    use brute::session::SessionFile;
    let dir = temp_dir();
    let lines = |messages: &[Message]| -> String {
        messages
            .iter()
            .map(|m| serde_json::to_string(m).unwrap() + "\n")
            .collect()
    };
    let broken = dir.path().join("broken.jsonl");
    std::fs::write(&broken, lines(&broken_history())).unwrap();
    let clean = dir.path().join("clean.jsonl");
    std::fs::write(&clean, lines(&[Message::user("hi")])).unwrap();
    let warnings = Warnings::default();
    let guard = tracing::subscriber::set_default(warnings.clone());
    let (file, repaired) = SessionFile::open(&broken).unwrap();
    drop(file);
    let (file, loaded) = SessionFile::open(&clean).unwrap();
    drop(file);
    drop(guard);
    let warnings = warnings.0.lock().unwrap().clone();
    assert_eq!(
        warnings.len(),
        1,
        "only the broken file warns: {warnings:?}"
    );
    assert!(
        warnings[0].contains("broken.jsonl") && warnings[0].contains("was repaired"),
        "{warnings:?}"
    );
    assert_no_dangling_call(&repaired);
    // The repair was written back; the clean file is as it was.
    assert_eq!(SessionFile::read(&broken).unwrap(), repaired);
    assert_eq!(loaded, [Message::user("hi")]);
    assert_eq!(std::fs::read_to_string(&clean).unwrap(), lines(&loaded));
}

#[test]
fn a_leftover_temp_path_that_cannot_be_removed_is_an_error_naming_it() {
    let dir = temp_dir();
    let path = dir.path().join("s.jsonl");
    std::fs::write(
        &path,
        serde_json::to_string(&Message::user("kept")).unwrap() + "\n",
    )
    .unwrap();
    // Not a file a rewrite left: a directory, which `remove_file` refuses.
    std::fs::create_dir(dir.path().join(".s.jsonl.tmp")).unwrap();
    let refused = brute::session::SessionFile::open(&path).err();
    assert!(
        refused
            .as_ref()
            .is_some_and(|e| e.to_string().contains("remove a leftover temp file")),
        "{refused:?}"
    );
    // The session is as it was.
    assert_eq!(
        brute::session::SessionFile::read(&path).unwrap(),
        [Message::user("kept")]
    );
}

#[tokio::test]
async fn the_jsonl_store_lists_its_session_files_only() {
    let dir = temp_dir();
    // A folder that does not exist yet holds no session; a file is not a folder.
    assert!(
        JsonlStore::new(dir.path().join("none"))
            .list()
            .await
            .unwrap()
            .is_empty()
    );
    std::fs::write(dir.path().join("plain"), "").unwrap();
    assert!(
        JsonlStore::new(dir.path().join("plain"))
            .list()
            .await
            .is_err()
    );
    // Session files, and what is not one: a temp file, a bare suffix, other files.
    for name in [
        "b.jsonl",
        "a.jsonl",
        ".a.jsonl.tmp",
        ".hidden.jsonl",
        ".jsonl",
        "c.txt",
    ] {
        std::fs::write(dir.path().join(name), "").unwrap();
    }
    let store = JsonlStore::new(dir.path());
    assert_eq!(store.list().await.unwrap(), ["a", "b"]);
}
