//! Many workers, one database: four worker processes (this test binary, re-executed)
//! run turns of the same 50 sessions on one PostgreSQL; one is killed with SIGKILL in
//! the middle of a turn. Afterwards every session's turns ran one at a time (no two
//! turns' messages interleave), nothing acknowledged was lost, nothing was duplicated,
//! and no tool call is left without a result.

#![cfg(unix)]
#![allow(clippy::unwrap_used)]

mod session_support;

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use brute::session::{SessionId, check_history};
use brute::{
    Env, Error, EventKind, Loop, MaxIterations, Message, Model, Role, SessionError, SessionLog,
    ToolCall, brute_agent,
};
use session_support::{AnyStore, KillOnDrop, postgres_database};

const WORKER: &str = "BRUTE_TEST_SESSION_WORKER";
const SESSIONS: usize = 50;
const WORKERS: usize = 4;
const TURNS: usize = 30;
const LEASE: Duration = Duration::from_secs(1);

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

/// The worker: `TURNS` turns over the 50 sessions, skipping a session another worker
/// holds; prints `ack <session> <message>` for every message of its turns once durable.
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
        while done < TURNS {
            attempt += 1;
            let session = format!("s{}", (attempt * 7 + n * 13) % SESSIONS);
            let tag = format!("w{n}-t{done}");
            *state.lock().unwrap() = (session.clone(), tag.clone(), 0);
            let mut env = agent.env();
            env.extensions.insert(SessionId(session));
            env.messages.push(Message::user(tag));
            match agent.turn(env).await {
                Ok(_) => done += 1,
                Err(e) if matches!(e.downcast_ref(), Some(SessionError::Leased { .. })) => {}
                Err(e) => panic!("worker {n}: {e}"),
            }
        }
        println!("finished");
    });
}

/// Lines of a worker's output, collected by a thread.
fn collect(child: &mut KillOnDrop) -> Arc<Mutex<Vec<String>>> {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let out = BufReader::new(child.0.stdout.take().unwrap());
    let sink = lines.clone();
    std::thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            sink.lock().unwrap().push(line);
        }
    });
    lines
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
                    "four_workers_on_one_postgres_survive_a_sigkill_mid_turn",
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
    let outputs: Vec<_> = children.iter_mut().map(collect).collect();

    // Worker 0 dies right after a tool call of its fifth turn or later is durable:
    // in the middle of a turn, with calls waiting for their results.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mid_turn = outputs[0].lock().unwrap().iter().rev().take(1).any(|l| {
            l.contains("\"tool_calls\"")
                && !l.contains("-t0/")
                && !l.contains("-t1/")
                && !l.contains("-t2/")
                && !l.contains("-t3/")
        });
        if mid_turn {
            break;
        }
        assert!(Instant::now() < deadline, "worker 0 made no progress");
        std::thread::sleep(Duration::from_millis(1));
    }
    children[0].kill();
    for (n, child) in children.iter_mut().enumerate().skip(1) {
        let status = child.0.wait().unwrap();
        assert!(status.success(), "worker {n} failed");
    }
    std::thread::sleep(Duration::from_millis(200));
    for (n, output) in outputs.iter().enumerate().skip(1) {
        assert!(
            output.lock().unwrap().iter().any(|l| l == "finished"),
            "worker {n} did not finish its turns"
        );
    }

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = AnyStore::open("postgres", &url, LEASE).await;
        // A turn on every session once the killed worker's leases expired repairs
        // what it left.
        let agent = brute_agent! {
            use SessionLog { store: store.store() };
            run |_env| async { Ok(Message::assistant("checked")) };
        };
        tokio::time::sleep(LEASE).await;
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
            for line in output.lock().unwrap().iter() {
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
