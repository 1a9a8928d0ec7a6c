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
use providers_faults::{APIS, Api, CANARY, Settings, openai_chunk, sse_openai};
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
    what: String,
    stream: bool,
    reply: Reply,
    transient: bool,
}

fn leaks(api: Api) -> Vec<Leak> {
    let echo = format!("Incorrect API key provided: {CANARY}");
    let leak = |what: &str, stream, reply, transient| Leak {
        what: what.to_owned(),
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
        leak(
            "413 body that echoes the key",
            false,
            Reply::status(413, &[], &format!("request of {CANARY} too large")),
            false,
        ),
        leak(
            "400 context_length_exceeded body that echoes the key",
            true,
            Reply::status(
                400,
                &[],
                &json!({"error": {"message": echo, "type": "invalid_request_error", "code": "context_length_exceeded"}}).to_string(),
            ),
            false,
        ),
    ];
    // The key across every cut of a quote (500 bytes), in an error body, a stream's
    // error event and a malformed stream event.
    for offset in QUOTE - CANARY.len()..=QUOTE + 1 {
        let pad = ",".repeat(offset);
        let message = format!("{pad}{CANARY} and more {}", "words ".repeat(200));
        all.push(leak(
            &format!("400 body, the key at byte {offset}"),
            false,
            Reply::status(
                400,
                &[],
                &json!({"error": {"message": message}}).to_string(),
            ),
            false,
        ));
        all.push(leak(
            &format!("500 body that is not JSON, the key at byte {offset}"),
            false,
            Reply::status(500, &[], &format!("{pad}{CANARY} {}", "x ".repeat(400))),
            true,
        ));
        let malformed = match api {
            Api::OpenAi => format!("data: {{\"k{pad}{CANARY} {}\n\n", "y ".repeat(400)),
            Api::Anthropic => format!(
                "event: x\ndata: {{\"k{pad}{CANARY} {}\n\n",
                "y ".repeat(400)
            ),
        };
        all.push(leak(
            &format!("malformed stream event, the key at byte {offset}"),
            true,
            Reply::stream_split(&malformed, 9),
            false,
        ));
        let error_event = match api {
            Api::OpenAi => {
                sse_openai(&[json!({"error": {"message": message, "type": "server_error"}})])
            }
            Api::Anthropic => format!(
                "event: error\ndata: {}\n\n",
                json!({"type": "error", "error": {"type": "overloaded_error", "message": message}})
            ),
        };
        all.push(leak(
            &format!("stream error event, the key at byte {offset}"),
            true,
            Reply::stream_split(&error_event, 9),
            true,
        ));
    }
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

/// The first 8-byte piece of the key found in `text`: a key cut at a quote's end
/// leaks its start, which the whole key's absence does not show.
fn part_of_the_key(text: &str) -> Option<&'static str> {
    (0..=CANARY.len() - 8)
        .map(|at| &CANARY[at..at + 8])
        .find(|part| text.contains(part))
}

/// The longest quote of a server's text in an error message.
const QUOTE: usize = 500;

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
    let expected: usize = APIS.iter().map(|&api| leaks(api).len()).sum();
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
            if let Some(part) = part_of_the_key(&text) {
                panic!("{api:?}, {}: `{part}` of the key in:\n{text}", leak.what);
            }
            seen.push_str(&text);
            paths += 1;
        }
    }
    assert_eq!(paths, expected);
    assert!(paths > 200, "{paths} paths");
    let more = runtime.block_on(the_key_in_the_url_a_secret_header_and_the_output());
    assert_eq!(part_of_the_key(&more), None, "{more}");
    seen.push_str(&more);
    let logged = capture.0.lock().unwrap();
    assert!(
        part_of_the_key(&logged).is_none(),
        "the key reached tracing:\n{logged}"
    );
    // The capture did see the failures, with the server's words in them: the checks
    // above looked at real output.
    assert!(logged.contains("model call failed"), "{logged}");
    assert!(logged.contains("retrying"), "{logged}");
    // Stream bytes that are not UTF-8 were replaced with a warning, once per stream
    // (one stream of each provider).
    assert_eq!(
        logged.matches("an event stream line is not UTF-8").count(),
        2,
        "{logged}"
    );
    assert!(logged.matches("[redacted]").count() >= 8, "{logged}");
    assert!(seen.matches("[redacted]").count() >= 8, "{seen}");
}

/// Bytes that are not UTF-8 in a stream (replaced, with a warning in the log), a key
/// in a base URL's query (a connection error quotes the address), a key sent
/// Azure-style in an `api-key` header and echoed in a 401, and a model that writes the
/// key in its answer (streamed and not; `redact_output(false)` lets it through, so the
/// check is real).
async fn the_key_in_the_url_a_secret_header_and_the_output() -> String {
    let mut seen = String::new();
    // Nothing listens on a port just freed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let model = brute::providers::OpenAi::compatible(
        format!("http://127.0.0.1:{port}/v1?key={CANARY}"),
        "m",
    )
    .api_key(CANARY);
    let error = brute::Model::complete(&model, &providers_faults::env())
        .await
        .unwrap_err();
    assert!(
        matches!(error, brute::Error::Model(brute::ModelError::Connection(_))),
        "{error:?}"
    );
    let _ = write!(seen, "\n{error} {error:?} {model:?}");

    let echo = json!({"error": {"message": format!("bad api-key {CANARY}")}}).to_string();
    let server = Server::start(vec![Reply::status(401, &[], &echo)]).await;
    let azure = brute::providers::OpenAi::compatible(format!("{}/v1", server.url()), "m")
        .key(None)
        .header("api-key", CANARY);
    let error = brute::Model::complete(&azure, &providers_faults::env())
        .await
        .unwrap_err();
    assert_eq!(server.requests()[0].header("api-key"), Some(CANARY));
    assert!(error.to_string().contains("[redacted]"), "{error}");
    let _ = write!(seen, "\n{error} {error:?}");

    for api in APIS {
        let mut bytes = api.deltas_stream(&["a".into(), "b".into()]).into_bytes();
        for _ in 0..2 {
            let at = bytes
                .windows(3)
                .position(|w| w == b"\"a\"" || w == b"\"b\"")
                .unwrap();
            bytes[at + 1] = 0xff;
        }
        let server = Server::start(vec![Reply::Stream {
            pieces: vec![bytes],
        }])
        .await;
        let completion = api
            .call(&server, &Settings::streamed(true), &providers_faults::env())
            .await
            .unwrap();
        assert_eq!(completion.message.content, "\u{fffd}\u{fffd}", "{api:?}");
    }
    for api in APIS {
        for stream in [false, true] {
            let said = format!("My key is {CANARY}, keep it.");
            let server =
                Server::start(vec![api.text(&said, stream), api.text(&said, stream)]).await;
            let settings = Settings::streamed(stream);
            let deltas = Arc::new(Mutex::new(String::new()));
            let (clean, raw) = match api {
                Api::OpenAi => (
                    answer(api.openai(&server, &settings), &deltas).await,
                    answer(
                        api.openai(&server, &settings).redact_output(false),
                        &Default::default(),
                    )
                    .await,
                ),
                Api::Anthropic => (
                    answer(api.anthropic(&server, &settings), &deltas).await,
                    answer(
                        api.anthropic(&server, &settings).redact_output(false),
                        &Default::default(),
                    )
                    .await,
                ),
            };
            assert_eq!(
                clean, "My key is [redacted], keep it.",
                "{api:?}, stream {stream}"
            );
            assert_eq!(
                raw, said,
                "{api:?}, stream {stream}: the option is what redacts"
            );
            let deltas = deltas.lock().unwrap();
            // Deltas exactly when streamed.
            assert_eq!(stream, !deltas.is_empty(), "{api:?}: {deltas}");
            let _ = write!(seen, "\n{clean} {deltas}");
        }
    }
    seen
}

/// The answer of one call through an agent that captures content in its traces
/// (unless the model was told not to redact its output), and its deltas in `deltas`.
async fn answer<F: WireFormat>(model: HttpModel<F>, deltas: &Arc<Mutex<String>>) -> String {
    // Content in the traces only where the output is redacted (the subscriber checks).
    let capture = !format!("{model:?}").contains("redact_output: false");
    let mut agent = brute_agent! { run model; };
    agent.capture_content(capture);
    let log = deltas.clone();
    agent.on(EventKind::ContentDelta, move |_env, event| {
        if let brute::Event::ContentDelta(text) = event {
            log.lock().unwrap().push_str(text);
        }
    });
    let responses = Arc::new(Mutex::new(Vec::new()));
    let log = responses.clone();
    agent.on(EventKind::ModelResponse, move |_env, event| {
        if let brute::Event::ModelResponse { message, .. } = event {
            log.lock().unwrap().push(message.content.clone());
        }
    });
    let outcome = agent.start("Go.").await.unwrap();
    let text = outcome.text().unwrap_or_default().to_owned();
    // The event carries the message that was stored.
    assert_eq!(
        responses.lock().unwrap().as_slice(),
        std::slice::from_ref(&text)
    );
    text
}
