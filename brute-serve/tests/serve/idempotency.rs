//! Idempotent turns and decisions (`Idempotency-Key`): a retry of a finished turn is
//! answered again without running anything; a retry of a turn whose server died is
//! resumed on the stored messages (no second prompt, no second tool run); a retry
//! while the turn still runs is a 409 with `Retry-After`; a key used for another input
//! is a 422. Decisions likewise. Most run on SQLite; the cross-server case runs two
//! servers on one PostgreSQL, the first killed mid-turn.

#![allow(clippy::unwrap_used)]

use crate::postgres_support;
use crate::support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use brute::session::{BoxStore, SessionStore, SqliteStore};
use brute::tools::{Approval, Decision, DefaultToolPipeline};
use brute::{
    Env, Message, Role, ToolCall, brute_agent,
    middleware::{Loop, MaxIterations, SessionLog},
};
use brute_serve::Server;
use serde_json::{Value, json};
use support::{Launch, Running, TOKEN, events, launches};
use tokio::sync::{Notify, Semaphore};

/// What the model did, and the gate a `block` prompt waits at.
struct Model {
    /// Model calls so far.
    calls: AtomicUsize,
    /// A turn of `block` waits for a permit here (after its tool ran).
    gate: Semaphore,
    /// Told each time a turn starts waiting at the gate.
    waiting: Notify,
    /// Whether a turn of `block` waits at the gate (the model of the server that takes
    /// over does not).
    blocks: bool,
}

impl Model {
    /// A model whose turns of `block` wait at the gate when `blocks`.
    fn new(blocks: bool) -> Arc<Model> {
        Arc::new(Model {
            calls: AtomicUsize::new(0),
            gate: Semaphore::new(0),
            waiting: Notify::new(),
            blocks,
        })
    }

    /// A model whose turns of `block` wait at the gate.
    fn blocking() -> Arc<Model> {
        Model::new(true)
    }
}

/// The model: `tool`, `mars` and `block` call `launch` (to the moon; to mars for
/// `mars`, which needs approval); after a tool result it reports it (`block` first waits at the gate);
/// any other prompt is echoed.
async fn answer(model: Arc<Model>, history: Vec<Message>) -> Message {
    model.calls.fetch_add(1, Ordering::SeqCst);
    let prompt = history
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| m.content.clone())
        .unwrap_or_default();
    match history.last() {
        Some(m)
            if m.role == Role::User && ["tool", "mars", "block"].contains(&m.content.as_str()) =>
        {
            let target = if m.content == "mars" { "mars" } else { "moon" };
            Message::tool_calls(
                "launching",
                vec![ToolCall::new("c1", "launch", json!({ "target": target }))],
            )
        }
        Some(m) if m.role == Role::Tool => {
            if prompt == "block" && model.blocks {
                model.waiting.notify_one();
                model.gate.acquire().await.unwrap().forget();
            }
            Message::assistant(format!("done: {}", m.content))
        }
        Some(m) => Message::assistant(format!("echo: {}", m.content)),
        None => Message::assistant("nothing"),
    }
}

fn server(store: BoxStore, root: &Path, model: Arc<Model>) -> Server {
    let agent = brute_agent! {
        use SessionLog { store: store.clone() };
        use Loop::ToolResult;
        use MaxIterations { max: 6 };
        use DefaultToolPipeline { tools: (Launch,), root: root, approval: Approval::new(|c: &ToolCall| if c.arguments["target"] == "mars" { Decision::Ask } else { Decision::Allow }) };
        run move |env: &Env| {
            let (model, history) = (model.clone(), env.messages.to_vec());
            async move { Ok(answer(model, history).await) }
        };
    };
    Server::new(Arc::new(store))
        .agent("a", agent)
        .bearer_token(TOKEN)
}

struct Setup {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    store: BoxStore,
    model: Arc<Model>,
    running: Running,
    client: reqwest::Client,
}

async fn sqlite() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let store = BoxStore::new(SqliteStore::open(dir.path().join("s.db")).unwrap());
    let model = Model::blocking();
    let running = Running::start(server(store.clone(), &root, model.clone())).await;
    Setup {
        _dir: dir,
        root,
        store,
        model,
        running,
        client: support::client(),
    }
}

/// A request of `path` with `body`, the key and the headers given.
async fn send(
    client: &reqwest::Client,
    url: String,
    body: Value,
    key: Option<&str>,
    json_answer: bool,
) -> reqwest::Response {
    let mut request = support::post(client, url, body);
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    if json_answer {
        request = request.header("accept", "application/json");
    }
    request.send().await.unwrap()
}

impl Setup {
    async fn turn(&self, input: &str, key: Option<&str>) -> reqwest::Response {
        let url = format!("{}/v1/sessions/s/turns", self.running.base);
        send(&self.client, url, json!({ "input": input }), key, false).await
    }

    async fn users(&self) -> Vec<String> {
        let history = self.store.load("s").await.unwrap();
        history
            .iter()
            .filter(|m| m.role == Role::User)
            .map(|m| m.content.clone())
            .collect()
    }

    fn calls(&self) -> usize {
        self.model.calls.load(Ordering::SeqCst)
    }
}

/// The end item's result and whether the answer was a replay.
async fn end(response: reqwest::Response) -> (u16, bool, Value, String) {
    let status = response.status().as_u16();
    let replayed = response
        .headers()
        .get("idempotent-replayed")
        .is_some_and(|v| v == "true");
    let body = response.text().await.unwrap();
    let result = events(&body)
        .pop()
        .filter(|(name, _)| name == "end")
        .map_or(Value::Null, |(_, v)| v["result"].clone());
    (status, replayed, result, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_of_a_finished_turn_is_answered_again_without_running_anything() {
    let s = sqlite().await;
    let (status, replayed, first, body) = end(s.turn("tool", Some("k1")).await).await;
    assert_eq!((status, replayed), (200, false), "{body}");
    assert_eq!(first["text"], "done: launched to moon", "{body}");
    let calls = s.calls();
    let (status, replayed, again, body) = end(s.turn("tool", Some("k1")).await).await;
    assert_eq!((status, replayed), (200, true), "{body}");
    assert_eq!(again, first, "{body}");
    let kinds: Vec<String> = events(&body).into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        kinds,
        ["message", "tool_result", "message", "end"],
        "{body}"
    );
    assert_eq!(s.calls(), calls, "the replay called the model");
    assert_eq!(launches(&s.root).len(), 1, "the replay ran the tool");
    assert_eq!(s.users().await, ["tool"]);
}

/// The names of a replay's events and its end's result.
async fn replayed_events(response: reqwest::Response) -> (Vec<String>, Value) {
    let (status, replayed, result, body) = end(response).await;
    assert_eq!((status, replayed), (200, true), "{body}");
    let kinds = events(&body).into_iter().map(|(n, _)| n).collect();
    (kinds, result)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_later_turns_replays_only_its_own_turn() {
    let s = sqlite().await;
    // A keyed turn, a paused one decided with a key, then a turn that follows them.
    let (status, _, first, body) = end(s.turn("tool", Some("k1")).await).await;
    assert_eq!(status, 200, "{body}");
    let call = paused(&s, "kt").await;
    let url = format!("{}/v1/sessions/s/approvals/{call}", s.running.base);
    let approve = json!({"decision": "approve"});
    let (status, _, decided, body) =
        end(send(&s.client, url.clone(), approve.clone(), Some("kd"), false).await).await;
    assert_eq!(status, 200, "{body}");
    let (status, _, later, body) = end(s.turn("later", None).await).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(later["text"], "echo: later", "{body}");
    let calls = s.calls();
    // Each retry answers with its own turn's items and end, none of what followed.
    let (kinds, result) = replayed_events(s.turn("tool", Some("k1")).await).await;
    assert_eq!(kinds, ["message", "tool_result", "message", "end"]);
    assert_eq!(result, first);
    assert_eq!(result["text"], "done: launched to moon");
    let (kinds, result) =
        replayed_events(send(&s.client, url, approve, Some("kd"), false).await).await;
    assert_eq!(kinds, ["tool_result", "message", "end"]);
    assert_eq!(result, decided);
    assert_eq!(result["text"], "done: launched to mars");
    let (kinds, result) = replayed_events(s.turn("mars", Some("kt")).await).await;
    assert_eq!(kinds, ["message", "tool_result", "message", "end"]);
    assert_eq!(result["text"], "done: launched to mars");
    assert_eq!(s.calls(), calls, "a replay called the model");
    assert_eq!(launches(&s.root), ["moon", "mars"]);
    assert_eq!(s.users().await, ["tool", "mars", "later"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_used_for_another_input_is_a_422_and_a_bad_key_a_400() {
    let s = sqlite().await;
    assert_eq!(end(s.turn("hello", Some("k")).await).await.0, 200);
    let response = s.turn("other", Some("k")).await;
    assert_eq!(response.status().as_u16(), 422);
    let body = response.text().await.unwrap();
    assert!(
        body.contains("this idempotency key was used for another input"),
        "{body}"
    );
    for bad in ["a b", &"k".repeat(256)] {
        assert_eq!(
            s.turn("hello", Some(bad)).await.status().as_u16(),
            400,
            "{bad:?}"
        );
    }
    assert_eq!(s.users().await, ["hello"]);
}

/// Stores what a turn of `prompt` with key `key` left when its server died after its
/// reply asked for `launch`, with (`ran`) or without the tool's result.
async fn died_mid_turn(store: &BoxStore, key: &str, ran: bool) {
    let (mut lease, _) = store.open("s").await.unwrap();
    let mut messages = vec![
        Message::user("tool").with_idempotency_key(key),
        Message::tool_calls(
            "launching",
            vec![ToolCall::new("c1", "launch", json!({ "target": "moon" }))],
        ),
    ];
    if ran {
        messages.push(Message::tool_result("c1", "launched to moon"));
    }
    store.append(&mut lease, &messages).await.unwrap();
    store.release(lease).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_of_a_turn_whose_server_died_resumes_it_without_a_second_prompt_or_tool_run() {
    let s = sqlite().await;
    // Died after the tool ran: the model gets its result, nothing runs again.
    died_mid_turn(&s.store, "k", true).await;
    let (status, replayed, result, body) = end(s.turn("tool", Some("k")).await).await;
    assert_eq!((status, replayed), (200, false), "{body}");
    assert_eq!(result["text"], "done: launched to moon", "{body}");
    assert_eq!(s.users().await, ["tool"]);
    assert!(launches(&s.root).is_empty(), "the tool ran again");
    // Died between the reply and the tool's result: the call is repaired, not run.
    s.store.delete("s").await.unwrap();
    died_mid_turn(&s.store, "k2", false).await;
    let (status, _, result, body) = end(s.turn("tool", Some("k2")).await).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        result["text"].as_str().unwrap().starts_with("done: "),
        "{body}"
    );
    assert!(
        launches(&s.root).is_empty(),
        "a call without its result ran"
    );
    assert_eq!(s.users().await, ["tool"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_while_the_turn_runs_is_a_409_with_retry_after() {
    let s = Arc::new(sqlite().await);
    let waiting = s.model.waiting.notified();
    let first = tokio::spawn({
        let s = s.clone();
        async move { end(s.turn("block", Some("kb")).await).await }
    });
    waiting.await;
    let response = s.turn("block", Some("kb")).await;
    assert_eq!(response.status().as_u16(), 409);
    assert_eq!(response.headers()["retry-after"], "1");
    let body = response.text().await.unwrap();
    assert!(body.contains("is still running"), "{body}");
    s.model.gate.add_permits(1);
    let (status, _, result, body) = first.await.unwrap();
    assert_eq!(status, 200, "{body}");
    let (status, replayed, again, _) = end(s.turn("block", Some("kb")).await).await;
    assert_eq!((status, replayed), (200, true));
    assert_eq!(again, result);
    assert_eq!(launches(&s.root).len(), 1);
    assert_eq!(s.users().await, ["block"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_answers_for_turns_and_their_replays() {
    let s = sqlite().await;
    let url = format!("{}/v1/sessions/s/turns", s.running.base);
    for replay in [false, true] {
        let response = send(
            &s.client,
            url.clone(),
            json!({"input": "tool"}),
            Some("kj"),
            true,
        )
        .await;
        assert_eq!(response.status().as_u16(), 200);
        assert_eq!(
            response.headers().contains_key("idempotent-replayed"),
            replay
        );
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/json")
        );
        let outcome: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
        assert_eq!(outcome["text"], "done: launched to moon", "{outcome}");
        assert_eq!(outcome["paused"], Value::Null, "{outcome}");
        assert_eq!(outcome["result"]["status"], "completed", "{outcome}");
        assert_eq!(
            outcome["items"].as_array().unwrap().last().unwrap()["type"],
            "end"
        );
    }
    assert_eq!(launches(&s.root).len(), 1);
}

/// Pauses a turn on a launch to mars (which needs approval): the call's id.
async fn paused(s: &Setup, key: &str) -> String {
    let (status, _, result, body) = end(s.turn("mars", Some(key)).await).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(result["status"], "paused", "{body}");
    result["pending"][0].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_retried_with_its_key_is_answered_again_and_another_decision_is_a_422() {
    let s = sqlite().await;
    let call = paused(&s, "kt").await;
    // The turn's own retry replays the pause.
    let (status, replayed, result, body) = end(s.turn("mars", Some("kt")).await).await;
    assert_eq!((status, replayed), (200, true), "{body}");
    assert_eq!(result["status"], "paused", "{body}");
    let url = format!("{}/v1/sessions/s/approvals/{call}", s.running.base);
    let approve = json!({"decision": "approve"});
    let (status, replayed, first, body) =
        end(send(&s.client, url.clone(), approve.clone(), Some("kd"), false).await).await;
    assert_eq!((status, replayed), (200, false), "{body}");
    assert_eq!(first["text"], "done: launched to mars", "{body}");
    let calls = s.calls();
    let (status, replayed, again, body) =
        end(send(&s.client, url.clone(), approve.clone(), Some("kd"), false).await).await;
    assert_eq!((status, replayed), (200, true), "{body}");
    assert_eq!(again, first);
    assert_eq!(s.calls(), calls);
    let deny = json!({"decision": "deny"});
    let response = send(&s.client, url.clone(), deny, Some("kd"), false).await;
    assert_eq!(response.status().as_u16(), 422);
    // Without a key a second decision is refused as before: the call does not wait.
    let response = send(&s.client, url, approve, None, false).await;
    assert_eq!(response.status().as_u16(), 404);
    assert!(response.text().await.unwrap().contains("not_pending"));
    assert_eq!(launches(&s.root), ["mars"]);
    // The turn's key now answers with the decided turn's end.
    let (_, replayed, result, body) = end(s.turn("mars", Some("kt")).await).await;
    assert!(replayed);
    assert_eq!(result["text"], "done: launched to mars", "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_whose_turn_died_after_the_decision_is_resumed_and_its_tool_never_runs_twice() {
    let s = sqlite().await;
    let call = paused(&s, "kt").await;
    let url = format!("{}/v1/sessions/s/approvals/{call}", s.running.base);
    let approve = json!({"decision": "approve"});
    assert_eq!(
        end(send(&s.client, url.clone(), approve.clone(), Some("kd"), false).await)
            .await
            .0,
        200
    );
    // What a crash after the decision and before the answer leaves: cut the session
    // back to the tool's result (the model's answer never stored).
    let history = s.store.load("s").await.unwrap();
    let (mut lease, _) = s.store.open("s").await.unwrap();
    s.store
        .rewrite(&mut lease, history.len() - 1, &[])
        .await
        .unwrap();
    s.store.release(lease).await.unwrap();
    let (status, replayed, result, body) =
        end(send(&s.client, url, approve, Some("kd"), true).await).await;
    let _ = (replayed, result);
    assert_eq!(status, 200, "{body}");
    let outcome: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(outcome["text"], "done: launched to mars", "{body}");
    assert_eq!(launches(&s.root), ["mars"], "the approved tool ran twice");
    assert_eq!(s.users().await, ["mars"]);
}

/// A server on its own runtime, so that it can die with every task it runs.
struct Doomed {
    runtime: Option<tokio::runtime::Runtime>,
    base: String,
}

impl Doomed {
    fn start(url: String, root: std::path::PathBuf, model: Arc<Model>) -> Doomed {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let base = runtime.block_on(async move {
            let store = pg(&url).await;
            let running = Running::start(server(store, &root, model)).await;
            let base = running.base.clone();
            std::mem::forget(running);
            base
        });
        Doomed {
            runtime: Some(runtime),
            base,
        }
    }

    /// Dies: every task of the server is dropped, nothing runs to its end.
    fn kill(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

async fn pg(url: &str) -> BoxStore {
    BoxStore::new(
        brute::session::PostgresStore::connect(url)
            .await
            .unwrap()
            .lease_ttl(Duration::from_secs(2)),
    )
}

#[test]
#[cfg_attr(
    not(feature = "services"),
    ignore = "needs PostgreSQL: cargo xtask test"
)]
fn two_servers_on_postgres_the_first_killed_mid_turn_the_retry_through_the_second_resumes_it() {
    let url = postgres_support::postgres_database("idempotency");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let doomed_model = Model::blocking();
    let mut first = Doomed::start(url.clone(), root.clone(), doomed_model.clone());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = pg(&url).await;
        let second = Running::start(server(store.clone(), &root, Model::new(false))).await;
        let client = support::client();
        // The first server runs the turn until its tool ran and the model blocks.
        let waiting = doomed_model.waiting.notified();
        let turn = format!("{}/v1/sessions/s/turns", first.base);
        let stream = tokio::spawn({
            let client = client.clone();
            async move {
                let response =
                    send(&client, turn, json!({"input": "block"}), Some("kx"), false).await;
                response.text().await
            }
        });
        waiting.await;
        first.kill();
        // The client's connection drops; it retries through the second server, on
        // 409 until the dead server's lease expires.
        let _ = stream.await;
        let turn = format!("{}/v1/sessions/s/turns", second.base);
        // Generous: the dead server's lease lasts 2 s; only a hang reaches it.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        let (status, body) = loop {
            let response = send(
                &client,
                turn.clone(),
                json!({"input": "block"}),
                Some("kx"),
                false,
            )
            .await;
            let status = response.status().as_u16();
            let body = response.text().await.unwrap();
            if status != 409 {
                break (status, body);
            }
            assert!(body.contains("still running"), "{body}");
            assert!(
                tokio::time::Instant::now() < deadline,
                "the dead server's lease never expired"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        assert_eq!(status, 200, "{body}");
        let result = &events(&body).pop().unwrap().1["result"];
        assert_eq!(result["text"], "done: launched to moon", "{body}");
        let history = store.load("s").await.unwrap();
        let prompts = history.iter().filter(|m| m.role == Role::User).count();
        assert_eq!(prompts, 1, "{history:?}");
        assert_eq!(launches(&root), ["moon"], "the tool ran twice");
        // And the second server replays it from now on.
        let response = send(&client, turn, json!({"input": "block"}), Some("kx"), false).await;
        assert_eq!(response.headers()["idempotent-replayed"], "true");
    });
}
