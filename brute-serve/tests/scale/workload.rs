//! The clients: sessions of several turns each through nginx, streamed (SSE) or not
//! (`Accept: application/json`), approvals decided when a turn pauses, every request
//! retried with the same `Idempotency-Key` on a dropped connection, a 409 or a 5xx.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::sync::Notify;

use super::server::TOKEN;
use super::topology::gated_turn;

/// How a request ended, once its retries are over.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// `end` `completed`, with the final text.
    Completed(String),
    /// `end` `paused`, with the pending call ids.
    Paused(Vec<String>),
    /// The turn ended `failed` or `unfinished` every time it was asked.
    Failed(String),
    /// An answer no retry can change (4xx other than 409), or retries ran out.
    Refused(String),
}

/// One request of the workload, as the client saw it.
#[derive(Clone, Debug)]
pub struct Record {
    pub session: String,
    pub prompt: String,
    /// `turn` or `approval`.
    pub kind: &'static str,
    pub outcome: Outcome,
    /// The upstream (server address) that gave the final answer.
    pub upstream: String,
    /// Attempts beyond the first.
    pub retries: u32,
    /// When the request was first sent, and when its answer's head arrived.
    pub sent: Instant,
    pub answered: Instant,
    /// When the final, complete answer arrived.
    pub done: Instant,
}

/// What the clients share with the fault injector: each answered request by its
/// idempotency key, and a signal on each.
#[derive(Default)]
pub struct Progress {
    pub answered: Mutex<HashMap<String, Instant>>,
    /// The upstream of each answer's first part, in order.
    pub first_items: Mutex<Vec<String>>,
    pub notify: Notify,
    /// Set once the run's last fault is injected: until then the workload starts new
    /// sessions past its `sessions`, so that every fault finds the progress it waits for.
    faults_over: AtomicBool,
}

impl Progress {
    /// Waits until an answer from `upstream` (an address) has its first part,
    /// after the `seen`-th first part of the run.
    pub async fn first_item_from(&self, upstream: &str, seen: usize) {
        loop {
            let notified = self.notify.notified();
            let found = self.first_items.lock().unwrap()[seen..]
                .iter()
                .any(|u| u.ends_with(upstream));
            if found {
                return;
            }
            notified.await;
        }
    }

    /// Says that the run injects no more faults: the workload starts no session past
    /// its `sessions` from now on.
    pub fn faults_over(&self) {
        self.faults_over.store(true, Ordering::SeqCst);
    }

    /// How many first parts have come so far.
    pub fn first_items_seen(&self) -> usize {
        self.first_items.lock().unwrap().len()
    }

    /// Waits until the request with idempotency key `key` got its answer; when.
    pub async fn wait_for(&self, key: &str) -> Instant {
        loop {
            let notified = self.notify.notified();
            if let Some(at) = self.answered.lock().unwrap().get(key) {
                return *at;
            }
            notified.await;
        }
    }
}

/// The shape of a run's workload.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// The sessions the workload runs at least; more while faults remain to be
    /// injected ([`Progress::faults_over`]).
    pub sessions: usize,
    pub turns: usize,
    /// Sessions in flight at once.
    pub concurrency: usize,
    /// After this, from the start, no request is sent again: the run ends, its
    /// unanswered requests reported (a run never hangs on a dead topology).
    pub deadline: Duration,
}

/// The session id of session `n`.
pub fn session_id(n: usize) -> String {
    format!("scale-{n:04}")
}

/// The prompt of turn `t` of session `n` (every third turn asks for approval).
pub fn prompt(n: usize, t: usize) -> String {
    let gated = if (n + t).is_multiple_of(3) {
        " gated"
    } else {
        ""
    };
    format!("s{n:04} t{t}{gated}")
}

/// The most sessions of one run, faults or not (a bound, never reached by a run
/// whose faults end).
const MAX_SESSIONS: usize = 100_000;

/// Runs the workload; every request's record.
pub async fn run(base: String, shape: Shape, progress: Arc<Progress>) -> Vec<Record> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .pool_max_idle_per_host(shape.concurrency)
        .build()
        .unwrap();
    let base: Arc<str> = Arc::from(base.as_str());
    let deadline = Instant::now() + shape.deadline;
    // A workload that ended before a fault would leave that fault waiting for
    // progress that never comes: sessions go on starting until the faults are over.
    let over = progress.clone();
    let ids = (0..MAX_SESSIONS)
        .take_while(move |n| *n < shape.sessions || !over.faults_over.load(Ordering::SeqCst));
    let sessions = futures_util::stream::iter(ids).map(|n| {
        let client = client.clone();
        let base = base.clone();
        let progress = progress.clone();
        async move { session(&client, &base, n, shape.turns, &progress, deadline).await }
    });
    sessions
        .buffer_unordered(shape.concurrency)
        .collect::<Vec<Vec<Record>>>()
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// The turns of session `n`, one after the other.
async fn session(
    client: &reqwest::Client,
    base: &str,
    n: usize,
    turns: usize,
    progress: &Progress,
    deadline: Instant,
) -> Vec<Record> {
    let id = session_id(n);
    let streamed = n.is_multiple_of(2);
    let mut records = Vec::new();
    for t in 1..=turns {
        let prompt = prompt(n, t);
        let url = format!("{base}/v1/sessions/{id}/turns");
        let key = format!("{id}-t{t}");
        let body = json!({ "input": prompt });
        let mut record = request(client, &url, &key, body, streamed, progress, deadline).await;
        record.session.clone_from(&id);
        record.prompt.clone_from(&prompt);
        record.kind = "turn";
        let pending = match &record.outcome {
            Outcome::Paused(pending) if gated_turn(&prompt) => pending.clone(),
            _ => Vec::new(),
        };
        records.push(record);
        for call in pending {
            let url = format!("{base}/v1/sessions/{id}/approvals/{call}");
            let key = format!("{id}-t{t}-approve");
            let body = json!({ "decision": "approve" });
            let mut decided =
                request(client, &url, &key, body, !streamed, progress, deadline).await;
            decided.session.clone_from(&id);
            decided.prompt.clone_from(&prompt);
            decided.kind = "approval";
            records.push(decided);
        }
    }
    records
}

/// The most attempts of one request.
const ATTEMPTS: u32 = 200;

/// Sends one request until it has an answer a retry would not change.
async fn request(
    client: &reqwest::Client,
    url: &str,
    key: &str,
    body: Value,
    streamed: bool,
    progress: &Progress,
    deadline: Instant,
) -> Record {
    let sent = Instant::now();
    let mut backoff = Duration::from_millis(20);
    let mut failures = 0;
    let record = |outcome, upstream: String, retries, answered| Record {
        session: String::new(),
        prompt: String::new(),
        kind: "",
        outcome,
        upstream,
        retries,
        sent,
        answered,
        done: Instant::now(),
    };
    for attempt in 0..ATTEMPTS {
        if Instant::now() > deadline {
            return record(
                Outcome::Refused("the run's deadline passed".to_owned()),
                String::new(),
                attempt,
                Instant::now(),
            );
        }
        let accept = if streamed {
            "text/event-stream"
        } else {
            "application/json"
        };
        let response = client
            .post(url)
            .header("authorization", format!("Bearer {TOKEN}"))
            .header("content-type", "application/json")
            .header("accept", accept)
            .header("idempotency-key", key)
            .body(body.to_string())
            .send()
            .await;
        let Ok(response) = response.inspect_err(|e| {
            if std::env::var_os("BRUTE_SCALE_TRACE").is_some() {
                eprintln!("trace {key} attempt {attempt}: {e}");
            }
        }) else {
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_millis(500));
            continue;
        };
        let status = response.status().as_u16();
        let upstream = response
            .headers()
            .get("x-upstream")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let json = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let head = Instant::now();
        if std::env::var_os("BRUTE_SCALE_TRACE").is_some() {
            eprintln!("trace {key} attempt {attempt}: {status} via {upstream}");
        }
        match status {
            200 => {
                let Some(text) = read(response, &upstream, progress).await else {
                    // Dropped mid-answer: the same key resumes or replays it.
                    continue;
                };
                let parsed = parse(&text, json);
                if std::env::var_os("BRUTE_SCALE_TRACE").is_some() {
                    eprintln!("trace {key} attempt {attempt}: {parsed:?}");
                }
                match parsed {
                    Some(Outcome::Failed(why)) => {
                        failures += 1;
                        if failures >= 5 {
                            // Over: whoever waits for this request's answer goes on.
                            progress
                                .answered
                                .lock()
                                .unwrap()
                                .insert(key.to_owned(), head);
                            progress.notify.notify_waiters();
                            return record(Outcome::Failed(why), upstream, attempt, head);
                        }
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(Duration::from_millis(500));
                    }
                    Some(outcome) => {
                        progress
                            .answered
                            .lock()
                            .unwrap()
                            .insert(key.to_owned(), head);
                        progress.notify.notify_waiters();
                        return record(outcome, upstream, attempt, head);
                    }
                    // A stream cut before its `end`.
                    None => continue,
                }
            }
            409 => {
                let wait = retry_after.map_or(backoff, |s| Duration::from_secs(s).min(backoff * 4));
                tokio::time::sleep(wait).await;
                backoff = (backoff * 2).min(Duration::from_millis(500));
            }
            500..=599 => {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_millis(500));
            }
            _ => {
                let text = response.text().await.unwrap_or_default();
                return record(
                    Outcome::Refused(format!("{status}: {text}")),
                    upstream,
                    attempt,
                    head,
                );
            }
        }
    }
    let now = Instant::now();
    record(
        Outcome::Refused(format!("no answer after {ATTEMPTS} attempts")),
        String::new(),
        ATTEMPTS,
        now,
    )
}

/// The whole body of `response`, telling `progress` when its first part came from
/// `upstream`; None when the connection dropped first.
async fn read(
    mut response: reqwest::Response,
    upstream: &str,
    progress: &Progress,
) -> Option<String> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.ok()? {
        if body.is_empty() {
            progress
                .first_items
                .lock()
                .unwrap()
                .push(upstream.to_owned());
            progress.notify.notify_waiters();
        }
        body.extend_from_slice(&chunk);
    }
    String::from_utf8(body).ok()
}

/// The outcome in an answer: one JSON object, or an SSE stream's `end` (None: the
/// stream has no `end`, it was cut).
fn parse(text: &str, json: bool) -> Option<Outcome> {
    let end: Value = if json {
        let value: Value = serde_json::from_str(text).ok()?;
        value
            .get("result")
            .cloned()
            .map_or(value, |r| json!({ "result": r }))
    } else {
        let mut end = None;
        for block in text.split("\n\n") {
            let mut name = "";
            let mut data = String::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    name = v.trim();
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.trim_start());
                }
            }
            if name == "end" {
                end = serde_json::from_str(&data).ok();
            }
        }
        end?
    };
    let result = &end["result"];
    Some(match result["status"].as_str() {
        Some("completed") => Outcome::Completed(result["text"].as_str().unwrap_or("").to_owned()),
        Some("paused") => Outcome::Paused(
            result["pending"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
        ),
        other => Outcome::Failed(format!("{other:?}: {}", result["error"])),
    })
}
