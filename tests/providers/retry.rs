//! `Retry`: transient model errors are retried with backoff, hints are honoured,
//! attempts are bounded, events are emitted and no message is duplicated.
//!
//! The tests run on tokio's paused clock: sleeps complete at once and advance a
//! virtual clock, so the waits can be checked exactly without waiting.

#![allow(clippy::unwrap_used)]

use crate::providers_support;
use crate::scripted_tools;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use brute::{
    Completion, Env, Error, Event, EventKind, Message, Model, ModelError, StopReason, brute_agent,
    middleware::{Loop, MaxIterations, Retry, SessionLog},
    session::SessionFile,
};
use scripted_tools::{RunTools, echo_calls};
use tokio::time::Instant;

/// Fails with `failures[i]` on call `i`, then answers from `then`.
struct Flaky<F> {
    failures: Vec<ModelError>,
    calls: Arc<AtomicU32>,
    then: F,
}

impl<F: Fn(&Env) -> Message + Send + Sync> Model for Flaky<F> {
    async fn complete(&self, env: &Env) -> Result<Completion, Error> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) as usize;
        match self.failures.get(n) {
            Some(error) => Err(Error::Model(error.clone())),
            None => Ok((self.then)(env).into()),
        }
    }
}

fn flaky(
    failures: Vec<ModelError>,
) -> (
    Flaky<impl Fn(&Env) -> Message + Send + Sync>,
    Arc<AtomicU32>,
) {
    let calls = Arc::new(AtomicU32::new(0));
    let model = Flaky {
        failures,
        calls: calls.clone(),
        then: |_env: &Env| Message::assistant("answer"),
    };
    (model, calls)
}

fn server_error() -> ModelError {
    ModelError::Server {
        status: 503,
        message: "overloaded".into(),
    }
}

/// Records the `(attempt, delay)` of every retry event.
fn record_retries(agent: &mut brute::Agent<impl Send + Sync>) -> Arc<Mutex<Vec<(u32, Duration)>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    agent.on(EventKind::Retry, move |_env, event| {
        if let Event::Retry {
            attempt,
            delay,
            error,
        } = event
        {
            assert!(error.is_transient());
            log.lock().unwrap().push((*attempt, *delay));
        }
    });
    seen
}

#[tokio::test(start_paused = true)]
async fn transient_errors_are_retried_with_exponential_backoff() {
    let (model, calls) = flaky(vec![
        server_error(),
        ModelError::Timeout(Duration::from_secs(30)),
        ModelError::Connection("reset by peer".into()),
    ]);
    let mut agent = brute_agent! {
        use Retry { attempts: 5, base_delay: Duration::from_millis(200), jitter: false };
        run model;
    };
    let retries = record_retries(&mut agent);
    let start = Instant::now();
    let outcome = agent.start("hello").await.unwrap();
    assert_eq!(outcome.text(), Some("answer"));
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    let expected = [
        (1, Duration::from_millis(200)),
        (2, Duration::from_millis(400)),
        (3, Duration::from_millis(800)),
    ];
    assert_eq!(*retries.lock().unwrap(), expected);
    // The virtual clock moved by exactly the waits.
    assert_eq!(start.elapsed(), Duration::from_millis(1400));
    // One prompt, one answer: nothing duplicated.
    assert_eq!(
        outcome.env.messages,
        [Message::user("hello"), Message::assistant("answer")]
    );
}

#[tokio::test(start_paused = true)]
async fn the_retry_after_hint_is_honoured() {
    let (model, calls) = flaky(vec![ModelError::RateLimited {
        retry_after: Some(Duration::from_secs(7)),
    }]);
    let mut agent = brute_agent! {
        use Retry { base_delay: Duration::from_millis(10) };
        run model;
    };
    let retries = record_retries(&mut agent);
    let start = Instant::now();
    agent.start("hello").await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(*retries.lock().unwrap(), [(1, Duration::from_secs(7))]);
    assert!(start.elapsed() >= Duration::from_secs(7));
}

#[tokio::test(start_paused = true)]
async fn a_hint_longer_than_max_retry_after_fails_at_once() {
    let (model, calls) = flaky(vec![ModelError::RateLimited {
        retry_after: Some(Duration::from_secs(3600)),
    }]);
    let agent = brute_agent! {
        use Retry { max_retry_after: Duration::from_secs(60) };
        run model;
    };
    let error = agent.start("hello").await.unwrap_err();
    assert!(matches!(
        error,
        Error::Model(ModelError::RateLimited { .. })
    ));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn attempts_are_bounded_and_the_last_error_is_returned() {
    let (model, calls) = flaky(vec![server_error(); 10]);
    let mut agent = brute_agent! {
        use Retry { attempts: 3, base_delay: Duration::from_millis(1) };
        run model;
    };
    let retries = record_retries(&mut agent);
    let error = agent.start("hello").await.unwrap_err();
    assert!(
        matches!(error, Error::Model(ModelError::Server { status: 503, .. })),
        "{error}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(retries.lock().unwrap().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn permanent_errors_are_not_retried() {
    for error in [
        ModelError::Authentication("bad key".into()),
        ModelError::ContextTooLong("too long".into()),
        ModelError::Rejected("no".into()),
        ModelError::Malformed("?".into()),
    ] {
        let (model, calls) = flaky(vec![error.clone()]);
        let agent = brute_agent! {
            use Retry;
            run model;
        };
        let returned = agent.start("hello").await.unwrap_err();
        assert!(
            matches!(&returned, Error::Model(e) if *e == error),
            "{returned}"
        );
        assert_eq!(calls.load(Ordering::SeqCst), 1, "{error} was retried");
    }
}

#[tokio::test(start_paused = true)]
async fn jitter_keeps_each_wait_between_half_and_all_of_the_backoff() {
    let (model, _calls) = flaky(vec![server_error(); 6]);
    let mut agent = brute_agent! {
        use Retry { attempts: 7, base_delay: Duration::from_secs(1), max_delay: Duration::from_secs(8) };
        run model;
    };
    let retries = record_retries(&mut agent);
    agent.start("hello").await.unwrap();
    let retries = retries.lock().unwrap();
    assert_eq!(retries.len(), 6);
    for (attempt, delay) in retries.iter() {
        let full = Duration::from_secs(1 << (attempt - 1)).min(Duration::from_secs(8));
        assert!(
            *delay >= full / 2 && *delay <= full,
            "attempt {attempt}: {delay:?} outside [{:?}, {full:?}]",
            full / 2
        );
    }
}

/// Retry sits inside the loop, just above `run`: a failed model call inside a tool
/// loop is retried without re-running tools, and the session file gets every message
/// exactly once.
#[tokio::test(start_paused = true)]
async fn retries_inside_a_tool_loop_never_duplicate_a_message_in_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let calls = Arc::new(AtomicU32::new(0));
    let counter = calls.clone();
    // Calls 1, 3 and 4 fail; the model calls a tool twice, then answers.
    let model = move |env: &Env| {
        let n = counter.fetch_add(1, Ordering::SeqCst);
        let passes = env.messages.iter().filter(|m| m.has_tool_calls()).count();
        async move {
            if [1, 3, 4].contains(&n) {
                return Err(Error::Model(server_error()));
            }
            Ok(if passes < 2 {
                echo_calls(&format!("c{passes}"), &["x"])
            } else {
                Message::assistant("done")
            })
        }
    };
    let agent = brute_agent! {
        use SessionLog { path: path.clone() };
        use Loop::ToolResult;
        use MaxIterations { max: 10 };
        use RunTools;
        use Retry { attempts: 3, base_delay: Duration::from_millis(50) };
        run model;
    };
    let outcome = agent.start("go").await.unwrap();
    assert_eq!(outcome.stop, StopReason::Completed);
    assert_eq!(calls.load(Ordering::SeqCst), 6);
    let saved = SessionFile::read(&path).unwrap();
    assert_eq!(saved, outcome.env.messages);
    // user, (call, result) x 2, answer.
    assert_eq!(saved.len(), 6);
    let mut ids: Vec<_> = saved
        .iter()
        .filter_map(|m| m.tool_call_id.clone())
        .collect();
    ids.dedup();
    assert_eq!(ids, ["c0-0", "c1-0"]);
}

/// A layer below `Retry` that appended a message before the model failed does not
/// leave a duplicate after the retry.
#[derive(brute::Middleware)]
struct Note<A> {
    app: A,
}

impl<A: brute::Handler<Env>> brute::Handler<Env> for Note<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        env.messages.push(Message::user("[note] be brief"));
        self.app.call(env).await
    }
}

#[tokio::test(start_paused = true)]
async fn messages_appended_below_retry_in_a_failed_attempt_are_not_duplicated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let (model, calls) = flaky(vec![server_error(), server_error()]);
    let agent = brute_agent! {
        use SessionLog { path: path.clone() };
        use Retry { base_delay: Duration::from_millis(5) };
        use Note;
        run model;
    };
    let outcome = agent.start("hi").await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    let expected = [
        Message::user("hi"),
        Message::user("[note] be brief"),
        Message::assistant("answer"),
    ];
    assert_eq!(outcome.env.messages, expected);
    assert_eq!(SessionFile::read(&path).unwrap(), expected);
}

/// A 503 with `Retry-After` from a real provider (both wire formats, against a local
/// server): the wait is the server's, not the backoff; one longer than
/// `max_retry_after` is not waited for. Real time, so the hint is 50 ms; what is
/// checked is the wait `Retry` chose (its event), not how long it took.
#[tokio::test]
async fn a_503_retry_after_from_a_provider_is_honoured_and_capped() {
    use brute::providers::{Anthropic, OpenAi, anthropic};
    use providers_support::{Reply, Server};

    let ok_openai = serde_json::json!({
        "id": "c", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "answer"}, "finish_reason": "stop"}]
    });
    let ok_anthropic = serde_json::json!({
        "id": "m", "type": "message", "role": "assistant", "model": "m",
        "content": [{"type": "text", "text": "answer"}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1}
    });
    for (api, ok) in [("openai", ok_openai), ("anthropic", ok_anthropic)] {
        let busy = |hint: &str| Reply::status(503, &[("retry-after", hint)], "down for a bit");
        let server = Server::start(vec![
            busy("0.05"),
            Reply::json(&ok.to_string()),
            busy("3600"),
        ])
        .await;
        let outcome = |max: Duration| {
            let url = server.url();
            async move {
                let events;
                let result = if api == "openai" {
                    let model = OpenAi::compatible(format!("{url}/v1"), "m");
                    let mut agent = brute_agent! {
                        use Retry { base_delay: Duration::from_secs(30), max_retry_after: max };
                        run model;
                    };
                    events = record_retries(&mut agent);
                    agent.start("hello").await
                } else {
                    let model = Anthropic::from_wire(anthropic::Codec::new("m"), url);
                    let mut agent = brute_agent! {
                        use Retry { base_delay: Duration::from_secs(30), max_retry_after: max };
                        run model;
                    };
                    events = record_retries(&mut agent);
                    agent.start("hello").await
                };
                let events = events.lock().unwrap().clone();
                (result, events)
            }
        };
        let (result, retries) = outcome(Duration::from_secs(60)).await;
        assert_eq!(result.unwrap().text(), Some("answer"), "{api}");
        assert_eq!(retries, [(1, Duration::from_millis(50))], "{api}");
        let (result, retries) = outcome(Duration::from_secs(60)).await;
        assert!(
            matches!(
                result,
                Err(Error::Model(ModelError::Unavailable { status: 503, retry_after, .. }))
                    if retry_after == Duration::from_secs(3600)
            ),
            "{api}: {result:?}"
        );
        assert!(retries.is_empty(), "{api}: a capped hint is not waited for");
        assert_eq!(server.requests().len(), 3, "{api}");
    }
}

/// Fails every even call (the first of each pass) and answers every odd one.
struct EveryOther(Arc<AtomicU32>);

impl Model for EveryOther {
    async fn complete(&self, _env: &Env) -> Result<Completion, Error> {
        let n = self.0.fetch_add(1, Ordering::SeqCst);
        if n.is_multiple_of(2) {
            return Err(Error::Model(server_error()));
        }
        Ok(Message::assistant(format!("answer {n}")).into())
    }
}

#[tokio::test(start_paused = true)]
async fn the_turn_retry_budget_bounds_retries_across_model_calls() {
    let calls = Arc::new(AtomicU32::new(0));
    let agent = brute_agent! {
        use Loop::While { condition: |env| env.iteration < 5 };
        use Retry { attempts: 3, base_delay: Duration::from_secs(1), turn_retries: 2, seed: Some(1) };
        run EveryOther(calls.clone());
    };
    // Passes one and two each fail once and are retried (the budget of two is spent);
    // pass three's failure is returned at once.
    let error = agent.start("go").await.unwrap_err();
    assert!(
        matches!(error, Error::Model(ModelError::Server { status: 503, .. })),
        "{error:?}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 5);

    // A new turn has the whole budget again.
    calls.store(0, Ordering::SeqCst);
    let agent = brute_agent! {
        use Loop::While { condition: |env| env.iteration < 2 };
        use Retry { attempts: 3, base_delay: Duration::from_secs(1), turn_retries: 2 };
        run EveryOther(calls.clone());
    };
    let outcome = agent.start("go").await.unwrap();
    assert_eq!(outcome.text(), Some("answer 3"));
    let outcome = agent.start("again").await.unwrap();
    assert_eq!(outcome.text(), Some("answer 7"));
}
