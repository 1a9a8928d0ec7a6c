//! Many workers, one database: four worker processes (this test binary, re-executed)
//! run turns of the same three sessions on one PostgreSQL, so that they contend for
//! the sessions' leases all the time; one is killed with SIGKILL in the middle of a
//! turn (its tools never return), and the others go on until one of them has taken
//! the killed worker's session over once its lease expired. Afterwards some worker
//! was refused a session another held (`Leased`), the killed worker's session was
//! taken over and repaired by a live worker, every session's turns ran one at a time
//! (no two turns' messages interleave), nothing acknowledged was lost, nothing was
//! duplicated, and no tool call is left without a result.

#![cfg(unix)]
#![allow(clippy::unwrap_used)]

use crate::session_support;

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use brute::session::{INTERRUPTED_TOOL_CALL, SessionId, check_history};
use brute::{
    Env, Error, EventKind, Message, Model, Role, ToolCall, brute_agent,
    middleware::{Loop, MaxIterations, SessionLog},
    session::SessionError,
};
use session_support::{AnyStore, KillOnDrop, postgres_database};

const WORKER: &str = "BRUTE_TEST_SESSION_WORKER";
const SESSIONS: usize = 3;
const WORKERS: usize = 4;
const TURNS: usize = 30;
const LEASE: Duration = Duration::from_secs(1);
/// The call ids of the turn of worker 0 whose tools never return: the worker says
/// `stuck` and is killed there, holding the session's lease with the calls stored and
/// no result.
const STUCK: &str = "w0-t5/";

/// The prompt of the turn `env` runs (its last user message).
fn prompt(env: &Env) -> String {
    env.messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| m.content.clone())
        .unwrap_or_default()
}

/// Calls two tools on its first pass, then answers; everything it says carries the
/// turn's prompt, so a message of another turn stands out.
struct TaggingModel;

impl Model for TaggingModel {
    async fn complete(&self, env: &Env) -> Result<brute::Completion, Error> {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let tag = prompt(env);
        Ok(if env.iteration == 1 {
            Message::tool_calls(
                "",
                (0..2)
                    .map(|i| ToolCall::new(format!("{tag}/call{i}"), "echo", serde_json::json!({})))
                    .collect(),
            )
        } else {
            Message::assistant(format!("{tag}: done"))
        }
        .into())
    }
}

/// Runs the model's calls: each result after 5 ms, durable before the next.
#[derive(brute::Middleware)]
#[middleware(provides = brute::kind::ToolPipeline)]
struct Tools<A> {
    app: A,
}

impl<A: brute::Handler<Env>> brute::Handler<Env> for Tools<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        self.app.call(env).await?;
        let calls = match env.messages.last() {
            Some(m) if m.has_tool_calls() => m.tool_calls.clone(),
            _ => return Ok(()),
        };
        if calls.iter().any(|c| c.id.starts_with(STUCK)) {
            println!("stuck");
            std::future::pending::<()>().await;
        }
        for call in &calls {
            tokio::time::sleep(Duration::from_millis(5)).await;
            env.messages.push(Message::tool_result(
                call.id.clone(),
                format!("{} ok", call.id),
            ));
            env.persist().await?;
            if let Some(result) = env.messages.last() {
                env.emit(brute::Event::ToolResult {
                    call,
                    result,
                    is_error: false,
                });
            }
        }
        Ok(())
    }
}

/// Whether a live worker took the session of worker 0's stuck turn over: only the
/// repair on loading gives its calls results.
async fn taken_over(store: &AnyStore) -> bool {
    for s in 0..SESSIONS {
        let messages = store.load(&format!("s{s}")).await;
        if messages.iter().any(|m| {
            m.tool_call_id
                .as_deref()
                .is_some_and(|id| id.starts_with(STUCK))
        }) {
            return true;
        }
    }
    false
}

/// The worker: `TURNS` turns over the sessions, skipping a session another worker
/// holds (it prints `leased <session>` then), and then more until worker 0's stuck
/// session was taken over; prints `ack <session> <message>` for every message of its
/// turns once durable.
fn worker(n: usize, url: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = AnyStore::open("postgres", url, LEASE).await;
        // (session, prompt, printed of this turn)
        let state = Arc::new(Mutex::new((String::new(), String::new(), 0usize)));
        let mut agent = brute_agent! {
            use SessionLog { store: store.store() };
            use Loop::ToolResult;
            use MaxIterations { max: 5 };
            use Tools;
            run TaggingModel;
        };
        for kind in [
            EventKind::ModelRequest,
            EventKind::ModelResponse,
            EventKind::ToolResult,
        ] {
            let state = state.clone();
            agent.on(kind, move |env, _event| {
                let mut state = state.lock().unwrap();
                let (session, tag, printed) = &mut *state;
                let Some(start) = env
                    .messages
                    .iter()
                    .rposition(|m| m.role == Role::User && m.content == *tag)
                else {
                    return;
                };
                let turn = &env.messages[start..];
                for message in &turn[*printed..] {
                    println!("ack {session} {}", serde_json::to_string(message).unwrap());
                }
                *printed = turn.len();
            });
        }
        let (mut done, mut attempt) = (0, 0);
        // Only so that a broken lease cannot hang the test: the parent's assertions
        // say what went wrong.
        let deadline = Instant::now() + Duration::from_secs(120);
        while done < TURNS || (n != 0 && !taken_over(&store).await) {
            if Instant::now() > deadline {
                break;
            }
            attempt += 1;
            let session = format!("s{}", (attempt * 7 + n * 13) % SESSIONS);
            let tag = format!("w{n}-t{done}");
            *state.lock().unwrap() = (session.clone(), tag.clone(), 0);
            let mut env = agent.env();
            env.extensions.insert(SessionId(session));
            env.messages.push(Message::user(tag));
            match agent.turn(env).await {
                Ok(_) => done += 1,
                Err(e) if matches!(e.downcast_ref(), Some(SessionError::Leased { .. })) => {
                    println!("leased {}", state.lock().unwrap().0);
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                Err(e) => panic!("worker {n}: {e}"),
            }
        }
        println!("finished");
    });
}

/// The lines of a worker's output, collected by a thread that ends when the worker's
/// output does; `stuck` is also told to `stuck`.
fn collect(
    child: &mut KillOnDrop,
    stuck: mpsc::Sender<()>,
) -> std::thread::JoinHandle<Vec<String>> {
    let out = BufReader::new(child.0.stdout.take().unwrap());
    std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in out.lines().map_while(Result::ok) {
            if line == "stuck" {
                let _ = stuck.send(());
            }
            lines.push(line);
        }
        lines
    })
}

#[test]
fn four_workers_on_one_postgres_survive_a_sigkill_mid_turn() {
    if let Ok(spec) = std::env::var(WORKER) {
        let (n, url) = spec.split_once(':').unwrap();
        return worker(n.parse().unwrap(), url);
    }
    let url = postgres_database("workers");
    let mut children: Vec<KillOnDrop> = (0..WORKERS)
        .map(|n| {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    crate::kill_support::test_name(
                        module_path!(),
                        "four_workers_on_one_postgres_survive_a_sigkill_mid_turn",
                    )
                    .as_str(),
                    "--nocapture",
                ])
                .env(WORKER, format!("{n}:{url}"))
                .env("BRUTE_TEST_POSTGRES", "unused")
                .stdout(Stdio::piped())
                .spawn()
                .map(KillOnDrop)
                .unwrap()
        })
        .collect();
    let (stuck, stuck_told) = mpsc::channel();
    let readers: Vec<_> = children
        .iter_mut()
        .map(|child| collect(child, stuck.clone()))
        .collect();

    // Worker 0 dies in its stuck turn: in the middle of a turn, holding the session,
    // with calls waiting for their results.
    stuck_told
        .recv_timeout(Duration::from_secs(120))
        .expect("worker 0 never reached its stuck turn");
    children[0].kill();
    for (n, child) in children.iter_mut().enumerate().skip(1) {
        let status = child.0.wait().unwrap();
        assert!(status.success(), "worker {n} failed");
    }
    // Every worker has exited: its reader ends with its output.
    let outputs: Vec<Vec<String>> = readers.into_iter().map(|r| r.join().unwrap()).collect();
    for (n, output) in outputs.iter().enumerate().skip(1) {
        assert!(
            output.iter().any(|l| l == "finished"),
            "worker {n} did not finish its turns"
        );
    }
    // The workers contended: a session was refused because another worker held it.
    let refused = outputs
        .iter()
        .flatten()
        .filter(|l| l.starts_with("leased "))
        .count();
    assert!(refused > 0, "no worker was ever refused a session");

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = AnyStore::open("postgres", &url, LEASE).await;
        // A live worker took the killed worker's session over once its lease expired:
        // the stuck calls have the repair's results, and a live worker's turn follows.
        let mut took_over = Vec::new();
        for s in 0..SESSIONS {
            let messages = store.load(&format!("s{s}")).await;
            let Some(last) = messages.iter().rposition(|m| {
                m.tool_call_id
                    .as_deref()
                    .is_some_and(|id| id.starts_with(STUCK))
            }) else {
                continue;
            };
            let repaired: Vec<&Message> = messages
                .iter()
                .filter(|m| {
                    m.tool_call_id
                        .as_deref()
                        .is_some_and(|id| id.starts_with(STUCK))
                })
                .collect();
            assert_eq!(repaired.len(), 2, "s{s}: {repaired:?}");
            assert!(
                repaired.iter().all(|m| m.content == INTERRUPTED_TOOL_CALL),
                "s{s}: {repaired:?}"
            );
            let next = messages[last + 1..].iter().find(|m| m.role == Role::User);
            assert!(
                next.is_some_and(|m| m.content.starts_with('w') && !m.content.starts_with("w0-")),
                "s{s}: no live worker's turn after the repair: {next:?}"
            );
            took_over.push(s);
        }
        assert_eq!(
            took_over.len(),
            1,
            "the killed worker's session was taken over once"
        );

        // A turn on every session (each is free: the workers ended their turns, and
        // the killed worker's lease was taken over) finds nothing more to repair.
        let agent = brute_agent! {
            use SessionLog { store: store.store() };
            run |_env| async { Ok(Message::assistant("checked")) };
        };
        for s in 0..SESSIONS {
            let mut env = agent.env();
            env.extensions.insert(SessionId(format!("s{s}")));
            env.messages.push(Message::user("check"));
            agent.turn(env).await.unwrap();
        }

        let mut stored: HashMap<String, Vec<Message>> = HashMap::new();
        let mut turns = 0;
        for s in 0..SESSIONS {
            let id = format!("s{s}");
            let messages = store.load(&id).await;
            // No tool call without a result, no orphan, no duplicate.
            assert_eq!(check_history(&messages), [], "session {id}");
            // One turn at a time: every message belongs to the turn of the user
            // message before it.
            let mut tag = String::new();
            for message in &messages {
                match message.role {
                    Role::User => {
                        tag = message.content.clone();
                        turns += usize::from(tag != "check");
                    }
                    Role::Assistant if message.has_tool_calls() => {
                        for call in &message.tool_calls {
                            assert!(
                                call.id.starts_with(&format!("{tag}/")),
                                "{id}: {call:?} in turn {tag}"
                            );
                        }
                    }
                    Role::Assistant => assert!(
                        message.content.starts_with(&format!("{tag}:"))
                            || (tag == "check" && message.content == "checked"),
                        "{id}: {message:?} in turn {tag}"
                    ),
                    Role::Tool => assert!(
                        message
                            .tool_call_id
                            .as_deref()
                            .is_some_and(|c| c.starts_with(&format!("{tag}/"))),
                        "{id}: {message:?} in turn {tag}"
                    ),
                    Role::System => panic!("{id}: a system message was stored"),
                }
            }
            // Nothing duplicated.
            let lines: Vec<String> = messages
                .iter()
                .filter(|m| m.content != "check" && m.content != "checked")
                .map(|m| serde_json::to_string(m).unwrap())
                .collect();
            let unique: HashSet<&String> = lines.iter().collect();
            assert_eq!(unique.len(), lines.len(), "session {id} has a duplicate");
            stored.insert(id, messages);
        }
        // Every worker turn that finished is stored, and worker 0's last one at least
        // in part.
        assert!(turns > (WORKERS - 1) * TURNS, "{turns} turns stored");

        // Nothing acknowledged was lost: each worker's acknowledged messages of a
        // session are stored, in the order acknowledged.
        let mut acked = 0;
        for (n, output) in outputs.iter().enumerate() {
            let mut per_session: HashMap<String, Vec<Message>> = HashMap::new();
            for line in output {
                if let Some(rest) = line.strip_prefix("ack ") {
                    let (session, json) = rest.split_once(' ').unwrap();
                    per_session
                        .entry(session.to_string())
                        .or_default()
                        .push(serde_json::from_str(json).unwrap());
                }
            }
            for (session, messages) in per_session {
                let history = &stored[&session];
                let mut at = 0;
                for message in &messages {
                    let found = history[at..].iter().position(|m| m == message);
                    let Some(offset) = found else {
                        panic!("worker {n}: acknowledged {message:?} of {session} is not stored");
                    };
                    at += offset + 1;
                    acked += 1;
                }
            }
        }
        assert!(acked > WORKERS * TURNS * 3, "{acked} acknowledged messages");
    });
}
