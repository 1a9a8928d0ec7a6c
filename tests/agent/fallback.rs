//! `Fallback`: models tried in order on the failures named, each fallback an event and
//! a span, the answering model recorded and priced; against scripted models and
//! against local HTTP servers answering 500 and 429.

#![allow(clippy::unwrap_used)]

use crate::providers_support;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use brute::model::{AnsweredBy, Fallback, FallbackOn};
use brute::{
    Completion, Env, Error, Event, EventKind, Message, Model, ModelError, Usage, brute_agent,
    cost::Cost, providers::OpenAi,
};
use providers_support::{Reply, Server};

/// A model named `name` that fails with `error`, or answers with its name, counting
/// its calls.
struct Named {
    name: &'static str,
    error: Option<ModelError>,
    calls: Arc<AtomicU32>,
    key: Option<&'static str>,
}

impl Named {
    fn answers(name: &'static str) -> (Self, Arc<AtomicU32>) {
        Self::new(name, None)
    }

    fn fails(name: &'static str, error: ModelError) -> (Self, Arc<AtomicU32>) {
        Self::new(name, Some(error))
    }

    fn new(name: &'static str, error: Option<ModelError>) -> (Self, Arc<AtomicU32>) {
        let calls = Arc::new(AtomicU32::new(0));
        let model = Named {
            name,
            error,
            calls: calls.clone(),
            key: None,
        };
        (model, calls)
    }
}

impl Model for Named {
    async fn complete(&self, _env: &Env) -> Result<Completion, Error> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        match &self.error {
            Some(error) => Err(Error::Model(error.clone())),
            None => Ok(Completion {
                message: Message::assistant(format!("from {}", self.name)),
                usage: Some(Usage::new(1_000_000, 0)),
            }),
        }
    }

    fn name(&self) -> &str {
        self.name
    }

    fn secrets(&self) -> Vec<&str> {
        self.key.into_iter().collect()
    }
}

fn rate_limited() -> ModelError {
    ModelError::RateLimited { retry_after: None }
}

fn server_error() -> ModelError {
    ModelError::Server {
        status: 500,
        message: "boom".into(),
    }
}

/// Records `(attempt, delay, error)` of every retry event.
fn record_retries(
    agent: &mut brute::Agent<impl Send + Sync>,
) -> Arc<Mutex<Vec<(u32, Duration, String)>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    agent.on(EventKind::Retry, move |_env, event| {
        if let Event::Retry {
            attempt,
            delay,
            error,
        } = event
        {
            log.lock()
                .unwrap()
                .push((*attempt, *delay, error.to_string()));
        }
    });
    seen
}

fn answered(env: &Env) -> (&str, u32) {
    let by = env
        .extensions
        .get::<AnsweredBy>()
        .expect("a fallback records who answered");
    (by.model.as_str(), by.attempt)
}

#[tokio::test]
async fn a_rate_limited_primary_falls_back_and_the_answer_is_priced_by_the_secondary() {
    // The primary has no published price, the secondary has: a call priced by the
    // primary's name would have no cost.
    let (primary, primary_calls) = Named::fails("unpriced-primary", rate_limited());
    let (secondary, secondary_calls) = Named::answers("gpt-4o-mini");
    let mut agent = brute_agent! {
        run Fallback::new(primary).or(secondary);
    };
    let retries = record_retries(&mut agent);
    let outcome = agent.start("hi").await.unwrap();

    assert_eq!(outcome.text(), Some("from gpt-4o-mini"));
    assert_eq!(primary_calls.load(Ordering::SeqCst), 1);
    assert_eq!(secondary_calls.load(Ordering::SeqCst), 1);
    assert_eq!(answered(&outcome.env), ("gpt-4o-mini", 2));
    // 1M input tokens of gpt-4o-mini at $0.15 per million.
    assert_eq!(outcome.env.cost(), Some(Cost::from_cents(15)));
    assert_eq!(outcome.env.messages.len(), 2, "one answer, no duplicate");
    let retries = retries.lock().unwrap();
    assert_eq!(retries.len(), 1);
    assert_eq!(retries[0].0, 1);
    assert_eq!(retries[0].1, Duration::ZERO);
    assert!(retries[0].2.contains("rate limited"), "{:?}", retries[0]);
}

/// A model that answers its first call and is rate limited on every later one.
struct AnswersOnce(AtomicU32);

impl Model for AnswersOnce {
    async fn complete(&self, _env: &Env) -> Result<Completion, Error> {
        if self.0.fetch_add(1, Ordering::SeqCst) == 0 {
            Ok(Completion {
                message: Message::assistant("from the primary"),
                usage: None,
            })
        } else {
            Err(Error::Model(rate_limited()))
        }
    }

    fn name(&self) -> &str {
        "primary"
    }
}

#[tokio::test]
async fn a_later_turn_on_the_same_env_names_the_model_that_answered_it() {
    let (secondary, _) = Named::answers("secondary");
    let agent = brute_agent! {
        run Fallback::new(AnswersOnce(AtomicU32::new(0))).or(secondary);
    };
    let first = agent.start("hi").await.unwrap();
    assert_eq!(answered(&first.env), ("primary", 1));
    let mut env = first.env;
    env.messages.push(Message::user("again"));
    let second = agent.turn(env).await.unwrap();
    assert_eq!(second.text(), Some("from secondary"));
    assert_eq!(answered(&second.env), ("secondary", 2));
}

#[tokio::test]
async fn a_primary_that_answers_is_the_only_model_called() {
    let (primary, primary_calls) = Named::answers("first");
    let (secondary, secondary_calls) = Named::answers("second");
    let mut agent = brute_agent! {
        run Fallback::new(primary).or(secondary);
    };
    let retries = record_retries(&mut agent);
    let outcome = agent.start("hi").await.unwrap();
    assert_eq!(outcome.text(), Some("from first"));
    assert_eq!(primary_calls.load(Ordering::SeqCst), 1);
    assert_eq!(secondary_calls.load(Ordering::SeqCst), 0);
    assert_eq!(answered(&outcome.env), ("first", 1));
    assert!(retries.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_failure_outside_the_set_is_returned_without_trying_the_next_model() {
    // Authentication is never in the default set.
    let (primary, _) = Named::fails("first", ModelError::Authentication("bad key".into()));
    let (secondary, secondary_calls) = Named::answers("second");
    let agent = brute_agent! {
        run Fallback::new(primary).or(secondary);
    };
    let error = agent.start("hi").await.unwrap_err();
    assert!(
        matches!(error, Error::Model(ModelError::Authentication(_))),
        "{error:?}"
    );
    assert_eq!(secondary_calls.load(Ordering::SeqCst), 0);

    // A server error, with a set of rate limits only.
    let (primary, _) = Named::fails("first", server_error());
    let (secondary, secondary_calls) = Named::answers("second");
    let agent = brute_agent! {
        run Fallback::new(primary).or(secondary).on(FallbackOn::RATE_LIMITED);
    };
    let error = agent.start("hi").await.unwrap_err();
    assert!(
        matches!(error, Error::Model(ModelError::Server { status: 500, .. })),
        "{error:?}"
    );
    assert_eq!(secondary_calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn context_too_long_falls_back_by_default() {
    let (primary, _) = Named::fails("small", ModelError::ContextTooLong("8k".into()));
    let (secondary, _) = Named::answers("large");
    let agent = brute_agent! {
        run Fallback::new(primary).or(secondary);
    };
    let outcome = agent.start("hi").await.unwrap();
    assert_eq!(answered(&outcome.env), ("large", 2));
}

#[tokio::test]
async fn when_every_model_fails_the_last_failure_is_returned_after_one_event_per_fallback() {
    let (a, a_calls) = Named::fails("a", rate_limited());
    let (b, b_calls) = Named::fails("b", server_error());
    let (c, c_calls) = Named::fails("c", ModelError::Timeout(Duration::from_secs(30)));
    let model = Fallback::new(a).or(b).or(c);
    assert_eq!(model.len(), 3);
    assert_eq!(model.name(), "a");
    let mut agent = brute_agent! {
        run model;
    };
    let retries = record_retries(&mut agent);
    let error = agent.start("hi").await.unwrap_err();
    assert!(
        matches!(error, Error::Model(ModelError::Timeout(_))),
        "{error:?}"
    );
    for calls in [a_calls, b_calls, c_calls] {
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
    let attempts: Vec<u32> = retries.lock().unwrap().iter().map(|r| r.0).collect();
    assert_eq!(attempts, [1, 2]);
}

#[test]
fn the_secrets_of_every_model_are_forwarded() {
    let (mut a, _) = Named::answers("a");
    a.key = Some("key-of-a");
    let (b, _) = Named::answers("b");
    let (mut c, _) = Named::answers("c");
    c.key = Some("key-of-c");
    let model = Fallback::new(a).or(b).or(c);
    assert_eq!(model.secrets(), ["key-of-a", "key-of-c"]);
}

fn openai(server: &Server, name: &str, key: &str) -> OpenAi {
    OpenAi::compatible(format!("{}/v1", server.url()), name)
        .api_key(key)
        .stream(false)
        .timeout(Duration::from_secs(60))
}

const ANSWER: &str = r#"{
  "id": "chatcmpl-1", "object": "chat.completion", "created": 1741569952, "model": "backup-model",
  "choices": [{"index": 0, "message": {"role": "assistant", "content": "from the backup"}, "finish_reason": "stop"}],
  "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}
}"#;

#[tokio::test]
async fn http_providers_answering_500_then_429_fall_back_to_the_third() {
    let failing = Server::start(vec![Reply::status(
        500,
        &[],
        r#"{"error":{"message":"internal"}}"#,
    )])
    .await;
    let limited = Server::start(vec![Reply::status(
        429,
        &[],
        r#"{"error":{"message":"slow down"}}"#,
    )])
    .await;
    let backup = Server::start(vec![Reply::json(ANSWER)]).await;
    let model = Fallback::new(openai(&failing, "main-model", "sk-main-1"))
        .or(openai(&limited, "second-model", "sk-second-2"))
        .or(openai(&backup, "backup-model", "sk-backup-3"));
    assert_eq!(model.secrets(), ["sk-main-1", "sk-second-2", "sk-backup-3"]);
    let mut agent = brute_agent! {
        run model;
    };
    let retries = record_retries(&mut agent);
    let outcome = agent.start("hi").await.unwrap();

    assert_eq!(outcome.text(), Some("from the backup"));
    assert_eq!(answered(&outcome.env), ("backup-model", 3));
    assert_eq!(outcome.env.usage(), Usage::new(10, 3));
    for server in [&failing, &limited, &backup] {
        assert_eq!(server.requests().len(), 1);
    }
    // Every model was sent the same conversation.
    for server in [&failing, &limited, &backup] {
        let body = server.requests()[0].json();
        assert_eq!(body["messages"][0]["content"], "hi");
    }
    let retries = retries.lock().unwrap();
    let seen: Vec<(u32, bool)> = retries
        .iter()
        .map(|(attempt, _, error)| (*attempt, error.contains("500")))
        .collect();
    assert_eq!(seen, [(1, true), (2, false)]);
    assert!(retries[1].2.contains("rate limited"), "{retries:?}");
}

/// The process's subscriber: keeps every span's thread, name and fields. Global, not
/// scoped to the test's thread: tracing caches each callsite's interest across
/// dispatchers, and a callsite first reached by another test's thread while only a
/// scoped subscriber existed could stay disabled for this one (it did, under load).
/// The test reads the spans of its own thread.
#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<(std::thread::ThreadId, String, FieldMap)>>>);

/// The global [`Spans`], installed on first use.
fn spans() -> &'static Spans {
    static SPANS: std::sync::OnceLock<Spans> = std::sync::OnceLock::new();
    SPANS.get_or_init(|| {
        let spans = Spans::default();
        tracing::subscriber::set_global_default(spans.clone())
            .expect("no other global subscriber in this binary");
        spans
    })
}

type FieldMap = std::collections::HashMap<String, String>;

struct Fields<'a>(&'a mut FieldMap);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().to_string(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

impl tracing::Subscriber for Spans {
    fn register_callsite(
        &self,
        _: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::always()
    }
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let mut fields = FieldMap::new();
        attrs.record(&mut Fields(&mut fields));
        let mut spans = self.0.lock().unwrap();
        spans.push((
            std::thread::current().id(),
            attrs.metadata().name().to_string(),
            fields,
        ));
        tracing::span::Id::from_u64(spans.len() as u64)
    }
    fn record(&self, span: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        let index = usize::try_from(span.into_u64()).unwrap() - 1;
        if let Some((_, _, fields)) = self.0.lock().unwrap().get_mut(index) {
            values.record(&mut Fields(fields));
        }
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn each_attempt_has_a_span_and_the_call_span_names_the_model_that_answered() {
    let recorder = spans();
    let (a, _) = Named::fails("a", rate_limited());
    let (b, _) = Named::fails("b", server_error());
    let (c, _) = Named::answers("c");
    let agent = brute_agent! {
        run Fallback::new(a).or(b).or(c);
    };
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(agent.start("hi"))
        .unwrap();
    let this = std::thread::current().id();
    let spans: Vec<(String, FieldMap)> = recorder
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|(thread, _, _)| *thread == this)
        .map(|(_, name, fields)| (name.clone(), fields.clone()))
        .collect();
    let attempts: Vec<(&str, &str, Option<&str>)> = spans
        .iter()
        .filter(|(name, _)| name == "brute.fallback")
        .map(|(_, fields)| {
            (
                fields["gen_ai.request.model"].as_str(),
                fields["brute.fallback.attempt"].as_str(),
                fields.get("otel.status_code").map(String::as_str),
            )
        })
        .collect();
    assert_eq!(
        attempts,
        [
            ("a", "1", Some("ERROR")),
            ("b", "2", Some("ERROR")),
            ("c", "3", None)
        ]
    );
    let (_, chat) = spans.iter().find(|(name, _)| name == "chat").unwrap();
    assert_eq!(chat["gen_ai.request.model"], "a");
    assert_eq!(chat["gen_ai.response.model"], "c");
}
