//! A canary key, given in code with `.api_key(..)`, through every error path of both
//! providers that can carry text from the server: it must appear in none of the
//! returned error's `Display` and `Debug`, the `Retry` events, or the tracing output.
//!
//! It installs its test binary's one global subscriber (tracing caches per-callsite
//! interest process-wide, so a scoped one would race other tests), and keeps only its
//! own thread's records: another thread's record is checked for the keys as it comes
//! and dropped, so the tests beside it (one of which counts its thread's allocations)
//! pay nothing for the capture.

#![allow(clippy::unwrap_used)]

use crate::providers_faults;
use crate::providers_support;

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use brute::providers::{HttpModel, WireFormat};
use brute::{EventKind, brute_agent};
use providers_faults::{APIS, Api, CANARY, Settings, openai_chunk, sse_openai};
use providers_support::{Reply, Server};
use serde_json::{Value, json};

/// Every event's fields and every span's fields of the thread that made the capture,
/// as text (the test's own records, counted while other tests of the binary run
/// beside it), and every record of another thread that holds a key or a piece of the
/// canary (none may reach tracing from anywhere).
#[derive(Clone)]
struct Capture {
    own: Arc<Mutex<String>>,
    elsewhere: Arc<Mutex<Vec<String>>>,
    owner: std::thread::ThreadId,
}

impl Capture {
    /// A capture whose own records are those of the calling thread.
    fn of_this_thread() -> Capture {
        Capture {
            own: Arc::default(),
            elsewhere: Arc::default(),
            owner: std::thread::current().id(),
        }
    }

    /// Appends one record to the own text when it comes from the capture's thread;
    /// from another thread, keeps it only if it holds a piece of a key.
    fn write(&self, record: impl Fn(&mut String)) {
        if std::thread::current().id() == self.owner {
            record(&mut self.own.lock().unwrap());
            return;
        }
        let mut text = String::new();
        record(&mut text);
        // The canary's 8-byte pieces and the other keys whole: their 4-byte pieces
        // (`ret:`) are words another test may well log.
        let piece = |key: &str| match key {
            CANARY => part_of_the_key(&text, key).is_some(),
            _ => text.contains(key),
        };
        if KEYS.iter().any(|key| piece(key)) {
            self.elsewhere.lock().unwrap().push(text);
        }
    }
}

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
        self.write(|text| {
            let _ = write!(text, "\nspan {}:", attrs.metadata().name());
            attrs.record(&mut Text(text));
        });
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        self.write(|text| values.record(&mut Text(text)));
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        self.write(|text| {
            let _ = write!(text, "\nevent {}:", event.metadata().level());
            event.record(&mut Text(text));
        });
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// The keys the canary test authenticates with, one at a time: the key-shaped canary
/// (letters, digits and `-`, which quoting never cuts into), punctuation a header value
/// may hold and quoting cuts at (`!`, `:`, `%`, `+`, `/`, `=`), the characters JSON
/// escapes or some servers escape (`"`, `\`, `'`, `<`, `&`, `/`), and non-ASCII (sent as
/// the UTF-8 bytes of the header value).
const KEYS: [&str; 4] = [
    CANARY,
    "Sec!ret:7f%2B+/=q9Zx",
    "Sec\"ret\\q'<7c&9e/x",
    "Sécrét✓ключ-7f3e",
];

/// A reply that sends the key back, and whether `Retry` tries again after it.
struct Leak {
    what: String,
    stream: bool,
    reply: Reply,
    transient: bool,
    /// The model is told `.redact_output(false)`: the reply is decoded as it came, and
    /// only the error's own redaction stands between the key and the user.
    raw_output: bool,
    /// The kind of `ModelError` the reply must give (its `Debug` name), when it names
    /// the step of `Redactor::error` this leak holds.
    kind: Option<&'static str>,
}

/// Writes a JSON body.
type Encode = fn(&Value) -> String;

/// `value` as a server that escapes `/` and every non-ASCII character writes it
/// (PHP's `json_encode`; Python's `json.dumps` escapes the latter).
fn escaped_json(value: &Value) -> String {
    let mut out = String::new();
    for c in value.to_string().chars() {
        match c {
            '/' => out.push_str("\\/"),
            c if c.is_ascii() => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out
}

/// An error event of `api`'s stream carrying `error` (an OpenAI error object; the
/// Anthropic event gets its `type` and `message`).
fn error_event(api: Api, error: &Value, encode: Encode) -> String {
    match api {
        Api::OpenAi => format!(
            "data: {}\n\ndata: [DONE]\n\n",
            encode(&json!({ "error": error }))
        ),
        Api::Anthropic => format!(
            "event: error\ndata: {}\n\n",
            encode(&json!({"type": "error", "error": error}))
        ),
    }
}

fn leaks(api: Api, key: &str) -> Vec<Leak> {
    let echo = format!("Incorrect API key provided: {key}");
    let leak = |what: &str, stream, reply, transient| Leak {
        what: what.to_owned(),
        stream,
        reply,
        transient,
        raw_output: false,
        kind: None,
    };
    // Each JSON body as serde writes it, and escaped where that changes the key.
    let mut styles: Vec<(&str, Encode)> = vec![("", |v: &Value| v.to_string())];
    let plain = serde_json::to_string(key).unwrap();
    if escaped_json(&json!(key)) != plain {
        styles.push((", escaped", escaped_json));
    }
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
            Reply::status(500, &[], &format!("<html>upstream said {key}</html>")),
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
            Reply::json(&format!("{{\"id\": \"{key}\" oops")),
            false,
        ),
        leak(
            "413 body that echoes the key",
            false,
            Reply::status(413, &[], &format!("request of {key} too large")),
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
    // Every status a body can come with, each body in both JSON styles.
    for &(style, encode) in &styles {
        let body = |kind: &str| encode(&json!({"error": {"message": echo, "type": kind}}));
        for (status, headers, kind, transient, what) in [
            (
                401,
                &[][..],
                "invalid_request_error",
                false,
                "Authentication",
            ),
            (500, &[], "server_error", true, "Server"),
            (
                503,
                &[("retry-after", "0")][..],
                "server_error",
                true,
                "Unavailable",
            ),
            (413, &[], "request_too_large", false, "ContextTooLong"),
            (400, &[], "invalid_request_error", false, "Rejected"),
        ] {
            all.push(Leak {
                kind: Some(what),
                ..leak(
                    &format!("{status} body{style}"),
                    false,
                    Reply::status(status, headers, &body(kind)),
                    transient,
                )
            });
        }
    }
    // JSON lets a server write any character as `\uXXXX`; one that writes every one so
    // (upper-case hex) hides the key from the body's redaction, which knows the usual
    // forms only: the parsed message carries it whole, and the error's own redaction
    // takes it out. The only path to `Unavailable`'s step (a 5xx with `retry-after`).
    // (`TooLarge`'s messages quote no server text: no path carries a key to its step.)
    let spelled: String = key
        .encode_utf16()
        .map(|unit| format!("\\u{unit:04X}"))
        .collect();
    all.push(Leak {
        kind: Some("Unavailable"),
        ..leak(
            "503 body with retry-after, every character of the key escaped",
            false,
            Reply::status(
                503,
                &[("retry-after", "0")],
                &format!("{{\"error\": {{\"message\": \"key {spelled} is rate limited\", \"type\": \"server_error\"}}}}"),
            ),
            true,
        )
    });
    // Every kind an error event of a stream (or a 200 body holding an error object)
    // gives, decoded as it came (`redact_output(false)`): the error's redaction is all
    // there is.
    for &(style, encode) in &styles {
        for (kind, message, transient, what) in [
            (
                "authentication_error",
                echo.clone(),
                false,
                "Authentication",
            ),
            ("api_error", echo.clone(), true, "Server"),
            (
                "invalid_request_error",
                format!("prompt is too long for {key}"),
                false,
                "ContextTooLong",
            ),
            ("invalid_request_error", echo.clone(), false, "Rejected"),
        ] {
            let error = json!({"type": kind, "message": message});
            all.push(Leak {
                raw_output: true,
                kind: Some(what),
                ..leak(
                    &format!("unredacted stream error event {kind}{style}"),
                    true,
                    Reply::stream_split(&error_event(api, &error, encode), 9),
                    transient,
                )
            });
        }
    }
    all.push(Leak {
        raw_output: true,
        kind: Some("Malformed"),
        ..leak(
            "unredacted malformed stream event",
            true,
            Reply::stream_split(&format!("data: {{\"key\": \"{key}\", oops\n\n"), 9),
            false,
        )
    });
    // The key across every cut of a quote (500 bytes), in an error body, a stream's
    // error event and a malformed stream event.
    for offset in QUOTE - key.len()..=QUOTE + 1 {
        let pad = ",".repeat(offset);
        let message = format!("{pad}{key} and more {}", "words ".repeat(200));
        for &(style, encode) in &styles {
            all.push(leak(
                &format!("400 body{style}, the key at byte {offset}"),
                false,
                Reply::status(400, &[], &encode(&json!({"error": {"message": message}}))),
                false,
            ));
            let error = json!({"type": "server_error", "message": message});
            let error = match api {
                Api::OpenAi => error,
                Api::Anthropic => json!({"type": "overloaded_error", "message": message}),
            };
            for raw_output in [false, true] {
                all.push(Leak {
                    raw_output,
                    ..leak(
                        &format!(
                            "stream error event{style}, the key at byte {offset}, raw output {raw_output}"
                        ),
                        true,
                        Reply::stream_split(&error_event(api, &error, encode), SWEEP_PIECE),
                        true,
                    )
                });
            }
        }
        all.push(leak(
            &format!("500 body that is not JSON, the key at byte {offset}"),
            false,
            Reply::status(500, &[], &format!("{pad}{key} {}", "x ".repeat(400))),
            true,
        ));
        let malformed = match api {
            Api::OpenAi => format!("data: {{\"k{pad}{key} {}\n\n", "y ".repeat(400)),
            Api::Anthropic => format!("event: x\ndata: {{\"k{pad}{key} {}\n\n", "y ".repeat(400)),
        };
        for raw_output in [false, true] {
            all.push(Leak {
                raw_output,
                ..leak(
                    &format!(
                        "malformed stream event, the key at byte {offset}, raw output {raw_output}"
                    ),
                    true,
                    Reply::stream_split(&malformed, SWEEP_PIECE),
                    false,
                )
            });
        }
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
                Reply::stream_split(&format!("data: {{\"key\": \"{key}\", oops\n\n"), 9),
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
                Reply::stream_split(&format!("event: x\ndata: {{\"type\": \"{key}\n\n"), 9),
                false,
            ));
        }
    }
    all
}

/// The first piece of `key` found in `text`, 8 bytes of the canary or 4 of the others
/// (whose pieces are no English): a key cut at a quote's end leaks its start, which
/// the whole key's absence does not show.
fn part_of_the_key(text: &str, key: &str) -> Option<String> {
    let size = if key == CANARY { 8 } else { 4 };
    let (text, key) = (text.as_bytes(), key.as_bytes());
    key.windows(size)
        .find(|part| text.windows(size).any(|w| w == *part))
        .map(|part| String::from_utf8_lossy(part).into_owned())
}

/// The pieces a stream of the sweep across the quote's cut is sent in: the key meets
/// a piece's end at a different place at each offset (the named leaks send 9 bytes a
/// piece, a cut inside every key).
const SWEEP_PIECE: usize = 97;

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
    if let Some(kind) = leak.kind {
        // The whole key was in a message of this kind: its step of the error's
        // redaction (or an earlier one) replaced it.
        assert!(
            format!("{error:?}").contains(&format!("Model({kind}")),
            "{}: {error:?}",
            leak.what
        );
        assert!(
            error.to_string().contains("[redacted]"),
            "{}: {error}",
            leak.what
        );
    }
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
    let capture = Capture::of_this_thread();
    tracing::subscriber::set_global_default(capture.clone()).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut seen = String::new();
    let mut paths = 0;
    let expected: usize = APIS
        .iter()
        .flat_map(|&api| KEYS.map(|key| leaks(api, key).len()))
        .sum();
    for (api, key) in APIS.iter().flat_map(|&api| KEYS.map(|key| (api, key))) {
        // One server and one model (one HTTP client) for the leaks of each setting,
        // their replies queued in the order the leaks run.
        let all = leaks(api, key);
        for (stream, raw_output) in [(false, false), (false, true), (true, false), (true, true)] {
            let group: Vec<&Leak> = all
                .iter()
                .filter(|l| (l.stream, l.raw_output) == (stream, raw_output))
                .collect();
            let replies = group
                .iter()
                .flat_map(|l| vec![l.reply.clone(); 1 + usize::from(l.transient)])
                .collect();
            runtime.block_on(async {
                let server = Server::start(replies).await;
                let settings = Settings::streamed(stream);
                let openai = api.openai(&server, &settings).api_key(key);
                let anthropic = api.anthropic(&server, &settings).api_key(key);
                let (openai, anthropic) = (
                    openai.redact_output(!raw_output),
                    anthropic.redact_output(!raw_output),
                );
                for leak in group {
                    let text = match api {
                        Api::OpenAi => run(openai.clone(), leak).await,
                        Api::Anthropic => run(anthropic.clone(), leak).await,
                    };
                    if let Some(part) = part_of_the_key(&text, key) {
                        panic!(
                            "{api:?}, key {key}, {}: `{part}` of the key in:\n{text}",
                            leak.what
                        );
                    }
                    seen.push_str(&text);
                    paths += 1;
                }
            });
        }
    }
    assert_eq!(paths, expected);
    assert!(paths > 1000, "{paths} paths");
    let more = runtime.block_on(the_key_in_the_url_a_secret_header_and_the_output());
    assert_eq!(part_of_the_key(&more, CANARY), None, "{more}");
    seen.push_str(&more);
    let elsewhere = capture.elsewhere.lock().unwrap();
    assert!(
        elsewhere.is_empty(),
        "a piece of a key reached tracing on another thread:\n{elsewhere:#?}"
    );
    // The test's runtime runs on its own thread: what it logged is there.
    let logged = capture.own.lock().unwrap();
    for key in KEYS {
        assert!(
            part_of_the_key(&logged, key).is_none(),
            "the key {key} reached tracing:\n{logged}"
        );
    }
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
