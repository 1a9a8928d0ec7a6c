//! A canary key, given in code with `.api_key(..)`, through every error path of both
//! providers that can carry text from the server: it must appear in none of the
//! returned error's `Display` and `Debug`, the `Retry` events, or the tracing output.
//!
//! Alone in its test binary: it installs a global subscriber (tracing caches
//! per-callsite interest process-wide, so a scoped one would race other tests).

#![allow(clippy::unwrap_used)]

mod providers_faults;
mod providers_support;

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use brute::providers::{HttpModel, WireFormat};
use brute::{EventKind, brute_agent};
use providers_faults::{Api, CANARY, Settings, openai_chunk, sse_openai};
use providers_support::{Reply, Server};
use serde_json::{Value, json};

/// Every event's fields and every span's fields, as text.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<String>>);

struct Text<'a>(&'a mut String);

impl tracing::field::Visit for Text<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={value:?}", field.name());
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let mut text = self.0.lock().unwrap();
        let _ = write!(text, "\nspan {}:", attrs.metadata().name());
        attrs.record(&mut Text(&mut text));
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        values.record(&mut Text(&mut self.0.lock().unwrap()));
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut text = self.0.lock().unwrap();
        let _ = write!(text, "\nevent {}:", event.metadata().level());
        event.record(&mut Text(&mut text));
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// A reply that sends the key back, and whether `Retry` tries again after it.
struct Leak {
    what: &'static str,
    stream: bool,
    reply: Reply,
    transient: bool,
}

fn leaks(api: Api) -> Vec<Leak> {
    let echo = format!("Incorrect API key provided: {CANARY}");
    let leak = |what, stream, reply, transient| Leak {
        what,
        stream,
        reply,
        transient,
    };
    let mut all = vec![
        leak(
            "401 body",
            false,
            Reply::status(
                401,
                &[],
                &json!({"error": {"message": echo, "type": "invalid_request_error"}}).to_string(),
            ),
            false,
        ),
        leak(
            "500 body that is not JSON",
            false,
            Reply::status(500, &[], &format!("<html>upstream said {CANARY}</html>")),
            true,
        ),
        leak(
            "400 body",
            true,
            Reply::status(400, &[], &json!({"error": {"message": echo}}).to_string()),
            false,
        ),
        leak(
            "200 body that is not JSON",
            false,
            Reply::json(&format!("{{\"id\": \"{CANARY}\" oops")),
            false,
        ),
    ];
    match api {
        Api::OpenAi => {
            all.push(leak(
                "OpenAI 200 body holding an error object",
                false,
                Reply::json(
                    &json!({"error": {"message": echo, "type": "server_error"}}).to_string(),
                ),
                true,
            ));
            let error_chunk = sse_openai(&[
                openai_chunk(json!({"content": "Hel"}), Value::Null),
                json!({"error": {"message": echo, "type": "server_error"}}),
            ]);
            all.push(leak(
                "OpenAI stream error chunk",
                true,
                Reply::stream_split(&error_chunk, 9),
                true,
            ));
            all.push(leak(
                "OpenAI malformed stream chunk",
                true,
                Reply::stream_split(&format!("data: {{\"key\": \"{CANARY}\", oops\n\n"), 9),
                false,
            ));
        }
        Api::Anthropic => {
            let error_event = format!(
                "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{}}}}\n\nevent: error\ndata: {}\n\n",
                json!({"type": "error", "error": {"type": "overloaded_error", "message": echo}})
            );
            all.push(leak(
                "Anthropic stream error event",
                true,
                Reply::stream_split(&error_event, 9),
                true,
            ));
            all.push(leak(
                "Anthropic 200 error body",
                false,
                Reply::json(
                    &json!({"type": "error", "error": {"type": "api_error", "message": echo}})
                        .to_string(),
                ),
                true,
            ));
            all.push(leak(
                "Anthropic malformed stream event",
                true,
                Reply::stream_split(&format!("event: x\ndata: {{\"type\": \"{CANARY}\n\n"), 9),
                false,
            ));
        }
    }
    all
}

/// Runs one leak through an agent with a retry layer; returns everything a user
/// could see of the failure except the tracing output.
async fn run<F: WireFormat>(model: HttpModel<F>, leak: &Leak) -> String {
    let mut seen = format!("{model:?}\n");
    let mut agent = brute_agent! {
        use brute::middleware::Retry { attempts: 2, base_delay: Duration::from_millis(1), jitter: false };
        run model;
    };
    let retries = Arc::new(Mutex::new(Vec::new()));
    let log = retries.clone();
    agent.on(EventKind::Retry, move |_env, event| {
        if let brute::Event::Retry { error, .. } = event {
            log.lock().unwrap().push(format!("{error} {error:?}"));
        }
    });
    let error = agent.start("Go.").await.unwrap_err();
    let retries = retries.lock().unwrap();
    assert_eq!(
        retries.len(),
        usize::from(leak.transient),
        "{}: {error:?}",
        leak.what
    );
    let _ = write!(seen, "{error}\n{error:?}\n{}", retries.join("\n"));
    // The server's text is there, with the key taken out, when the error quotes it.
    assert!(
        seen.contains("[redacted]") || !error.to_string().contains("API key provided"),
        "{}: {error}",
        leak.what
    );
    seen
}

#[test]
fn the_canary_key_appears_in_no_error_event_or_log_line() {
    let capture = Capture::default();
    tracing::subscriber::set_global_default(capture.clone()).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut seen = String::new();
    let mut paths = 0;
    for api in [Api::OpenAi, Api::Anthropic] {
        for leak in leaks(api) {
            let replies = if leak.transient {
                vec![leak.reply.clone(), leak.reply.clone()]
            } else {
                vec![leak.reply.clone()]
            };
            let text = runtime.block_on(async {
                let server = Server::start(replies).await;
                let settings = Settings::streamed(leak.stream);
                match api {
                    Api::OpenAi => run(api.openai(&server, &settings), &leak).await,
                    Api::Anthropic => run(api.anthropic(&server, &settings), &leak).await,
                }
            });
            assert!(!text.contains(CANARY), "{api:?}, {}:\n{text}", leak.what);
            seen.push_str(&text);
            paths += 1;
        }
    }
    assert_eq!(paths, 14);
    let logged = capture.0.lock().unwrap();
    assert!(
        !logged.contains(CANARY),
        "the key reached tracing:\n{logged}"
    );
    // The capture did see the failures, with the server's words in them: the checks
    // above looked at real output.
    assert!(logged.contains("model call failed"), "{logged}");
    assert!(logged.contains("retrying"), "{logged}");
    assert!(logged.matches("[redacted]").count() >= 8, "{logged}");
    assert!(seen.matches("[redacted]").count() >= 8, "{seen}");
}
