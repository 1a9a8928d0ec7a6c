//! Both wire formats against a fault-injecting server on 127.0.0.1: malformed bodies,
//! unknown tools, bad and huge arguments, a thousand calls in one reply, streams cut
//! mid-event, 500 and 429, connection resets, stalls and oversized lines. Every failure
//! is a typed [`ModelError`]; oversized input is refused at its limit, not read whole.

#![allow(clippy::unwrap_used)]

use crate::providers_faults;
use crate::providers_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use brute::ModelError;
use providers_faults::{APIS, Api, CANARY, Settings, env, openai_chunk, sse_openai};
use providers_support::{Reply, Server};
use serde_json::{Value, json};

/// The most an error message may say, whatever the server sent.
const MESSAGE_BOUND: usize = 2_000;

fn assert_bounded(error: &ModelError) {
    let text = error.to_string();
    assert!(
        text.len() < MESSAGE_BOUND,
        "{} bytes: {text:.300}",
        text.len()
    );
    assert!(!text.contains(CANARY), "{text}");
}

#[tokio::test]
async fn malformed_bodies_are_malformed_errors_that_quote_a_bounded_part() {
    let garbage = format!("{{\"oops\": {}", "\"not json\" ".repeat(100_000));
    for api in APIS {
        let replies = vec![
            Reply::json(&garbage),
            Reply::json("[1, 2, 3]"),
            Reply::json(r#"{"unexpected": true}"#),
            Reply::json(""),
        ];
        let server = Server::start(replies).await;
        for _ in 0..4 {
            let error = api
                .call(&server, &Settings::default(), &env())
                .await
                .unwrap_err();
            assert!(
                matches!(error, ModelError::Malformed(_)),
                "{api:?}: {error:?}"
            );
            assert!(
                error.to_string().contains(&server.url()),
                "names the place: {error}"
            );
            assert_bounded(&error);
        }
        // A stream whose event is not JSON, a megabyte long: quoted in part.
        let bad = format!("data: {{\"oops\": \"{}\n\n", "x".repeat(1 << 20));
        let server = Server::start(vec![Reply::stream_split(&bad, 4096)]).await;
        let error = api
            .call(&server, &Settings::streamed(true), &env())
            .await
            .unwrap_err();
        assert!(
            matches!(error, ModelError::Malformed(_)),
            "{api:?}: {error:?}"
        );
        assert_bounded(&error);
    }
}

#[tokio::test]
async fn unknown_tools_bad_and_huge_arguments_reach_the_tool_layer_as_written() {
    let huge = json!({"path": "big.txt", "content": "é".repeat(1 << 20)}).to_string();
    let calls = vec![
        (
            "c1".to_string(),
            "no_such_tool".to_string(),
            r#"{"a":1}"#.to_string(),
        ),
        (
            "c2".to_string(),
            "read".to_string(),
            "{not json".to_string(),
        ),
        ("c3".to_string(), "write".to_string(), huge),
    ];
    for api in APIS {
        for stream in [false, true] {
            let server = Server::start(vec![api.calls(&calls, stream)]).await;
            let completion = api
                .call(&server, &Settings::streamed(stream), &env())
                .await
                .unwrap_or_else(|e| panic!("{api:?} stream={stream}: {e}"));
            let got = &completion.message.tool_calls;
            assert_eq!(got.len(), 3, "{api:?} stream={stream}");
            assert_eq!(
                (got[0].id.as_str(), got[0].name.as_str()),
                ("c1", "no_such_tool")
            );
            assert_eq!(got[0].arguments, json!({"a": 1}));
            // Arguments that are not JSON are kept as written, for the tool layer to
            // report to the model.
            assert_eq!(got[1].arguments, Value::String("{not json".into()));
            let content = got[2].arguments["content"].as_str().unwrap();
            assert_eq!(content.chars().count(), 1 << 20, "{api:?} stream={stream}");
        }
    }
}

#[tokio::test]
async fn a_thousand_calls_in_one_reply_all_arrive_in_order() {
    let calls: Vec<(String, String, String)> = (0..1000)
        .map(|i| {
            (
                format!("call_{i}"),
                "read".into(),
                json!({"path": format!("f{i}")}).to_string(),
            )
        })
        .collect();
    for api in APIS {
        for stream in [false, true] {
            let server = Server::start(vec![api.calls(&calls, stream)]).await;
            let completion = api
                .call(&server, &Settings::streamed(stream), &env())
                .await
                .unwrap();
            let got = &completion.message.tool_calls;
            assert_eq!(got.len(), 1000, "{api:?} stream={stream}");
            for (i, call) in got.iter().enumerate() {
                assert_eq!(call.id, format!("call_{i}"));
                assert_eq!(call.arguments, json!({"path": format!("f{i}")}));
            }
        }
    }
}

#[tokio::test]
async fn streams_cut_mid_event_are_transient_connection_errors() {
    for api in APIS {
        let text = api.text_stream("Grüße aus Köln, wie geht's?");
        let bytes = text.as_bytes();
        let after_first_event = text.find("\n\n").unwrap() + 2;
        let inside_umlaut = text.find('ü').unwrap() + 1;
        let last_delta = text.rfind("'s?").unwrap();
        let cuts = [after_first_event, inside_umlaut, text.len() / 2, last_delta];
        for cut in cuts {
            let dropped = Reply::drop_after(&text, cut, 5);
            let ended = Reply::Stream {
                pieces: vec![bytes[..cut].to_vec()],
            };
            let server = Server::start(vec![dropped, ended]).await;
            for _ in 0..2 {
                let error = api
                    .call(&server, &Settings::streamed(true), &env())
                    .await
                    .unwrap_err();
                let connection = matches!(error, ModelError::Connection(_));
                // A cut inside a character leaves a line that is not UTF-8 only when
                // the line is completed; a cut stream never completes it.
                assert!(connection, "{api:?} cut at {cut}: {error:?}");
                assert!(error.is_transient());
                assert_bounded(&error);
            }
        }
    }
}

#[tokio::test]
async fn server_errors_and_rate_limits_are_typed() {
    for api in APIS {
        for stream in [false, true] {
            let server = Server::start(vec![
                Reply::status(
                    500,
                    &[],
                    r#"{"error":{"message":"boom","type":"server_error"}}"#,
                ),
                Reply::status(
                    429,
                    &[("retry-after", "2")],
                    r#"{"error":{"message":"slow down"}}"#,
                ),
                Reply::status(503, &[], &"<html>unavailable</html>".repeat(10_000)),
            ])
            .await;
            let settings = Settings::streamed(stream);
            let error = api.call(&server, &settings, &env()).await.unwrap_err();
            assert!(
                matches!(error, ModelError::Server { status: 500, .. }),
                "{error:?}"
            );
            let error = api.call(&server, &settings, &env()).await.unwrap_err();
            assert_eq!(
                error,
                ModelError::RateLimited {
                    retry_after: Some(Duration::from_secs(2))
                }
            );
            let error = api.call(&server, &settings, &env()).await.unwrap_err();
            assert!(
                matches!(error, ModelError::Server { status: 503, .. }),
                "{error:?}"
            );
            assert!(error.is_transient());
            assert_bounded(&error);
        }
    }
}

#[tokio::test]
async fn connection_resets_are_transient_connection_errors() {
    for api in APIS {
        for stream in [false, true] {
            let mut mid_stream = Api::stream_head();
            let first = api.text_stream("hello there");
            let first = &first[..first.find("\n\n").unwrap() + 2];
            mid_stream.extend_from_slice(format!("{:x}\r\n{first}\r\n", first.len()).as_bytes());
            let server = Server::start(vec![
                Reply::Reset { head: Vec::new() },
                Reply::Reset {
                    head: b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{\"id\":".to_vec(),
                },
                Reply::Reset { head: mid_stream },
            ])
            .await;
            for what in ["before the headers", "inside a body", "inside a stream"] {
                let error = api
                    .call(&server, &Settings::streamed(stream), &env())
                    .await
                    .unwrap_err();
                assert!(
                    matches!(error, ModelError::Connection(_)),
                    "{api:?} stream={stream}, reset {what}: {error:?}"
                );
                assert!(error.is_transient());
            }
        }
    }
}

#[tokio::test]
async fn each_silence_has_its_own_timeout() {
    let first_byte = Duration::from_millis(400);
    let idle = Duration::from_millis(200);
    let settings = |stream| Settings {
        stream,
        first_byte: Some(first_byte),
        idle: Some(idle),
        ..Settings::default()
    };
    let long = Duration::from_secs(30);
    for api in APIS {
        // Silent before the headers: the first-byte timeout.
        for stream in [false, true] {
            let server = Server::start(vec![Reply::Stall(long)]).await;
            let error = api
                .call(&server, &settings(stream), &env())
                .await
                .unwrap_err();
            assert_eq!(
                error,
                ModelError::Timeout(first_byte),
                "{api:?} stream={stream}"
            );
        }
        // Silent between two chunks of a stream, or inside a body: the idle timeout.
        let Reply::Stream { pieces } = api.text("one two three four five", true) else {
            unreachable!()
        };
        let server = Server::start(vec![
            Reply::StallMidStream {
                pieces: pieces[..3].to_vec(),
                stall: long,
            },
            Reply::StallMidBody {
                body: api.text_body("half of me").to_string(),
                stall: long,
            },
        ])
        .await;
        let error = api
            .call(&server, &settings(true), &env())
            .await
            .unwrap_err();
        assert_eq!(error, ModelError::Timeout(idle), "{api:?} mid-stream");
        let error = api
            .call(&server, &settings(false), &env())
            .await
            .unwrap_err();
        assert_eq!(error, ModelError::Timeout(idle), "{api:?} mid-body");
        assert!(error.is_transient());
    }
}

/// A flood of `total` bytes; the counter says how much of it the socket took.
fn flood(
    content_type: &'static str,
    announce: bool,
    prefix: &str,
    total: usize,
) -> (Reply, Arc<AtomicUsize>) {
    let written = Arc::new(AtomicUsize::new(0));
    let reply = Reply::Flood {
        content_type,
        announce,
        prefix: prefix.as_bytes().to_vec(),
        piece: vec![b'x'; 64 * 1024],
        total,
        written: written.clone(),
    };
    (reply, written)
}

#[tokio::test]
async fn oversized_lines_and_bodies_are_refused_at_the_limit() {
    const TOTAL: usize = 256 << 20;
    for api in APIS {
        // An event line that never ends, in a 256 MiB stream: refused at 64 KiB.
        let (reply, written) = flood("text/event-stream", false, "data: {\"a\":\"", TOTAL);
        let server = Server::start(vec![reply]).await;
        let settings = Settings {
            stream: true,
            max_event_bytes: Some(64 << 10),
            ..Settings::default()
        };
        let error = api.call(&server, &settings, &env()).await.unwrap_err();
        assert!(
            matches!(error, ModelError::TooLarge { limit: 65_536, .. }),
            "{api:?}: {error:?}"
        );
        assert!(!error.is_transient());
        assert_bounded(&error);
        // The client stopped reading: the server could not send the rest.
        let sent = written.load(Ordering::Relaxed);
        assert!(
            sent < TOTAL / 8,
            "{api:?}: the server wrote {sent} bytes of the stream"
        );

        // Non-streamed: a body announced larger than the limit is refused unread ...
        let settings = Settings {
            max_response_bytes: Some(1 << 20),
            ..Settings::default()
        };
        let (announced, written) = flood("application/json", true, "{\"a\":\"", TOTAL);
        // ... and one that does not say its length is refused once it passes it.
        let (chunked, written_chunked) = flood("application/json", false, "{\"a\":\"", TOTAL);
        let server = Server::start(vec![announced, chunked]).await;
        for written in [written, written_chunked] {
            let error = api.call(&server, &settings, &env()).await.unwrap_err();
            assert!(
                matches!(
                    error,
                    ModelError::TooLarge {
                        limit: 1_048_576,
                        ..
                    }
                ),
                "{api:?}: {error:?}"
            );
            let sent = written.load(Ordering::Relaxed);
            assert!(
                sent < TOTAL / 8,
                "{api:?}: the server wrote {sent} bytes of the body"
            );
        }
    }
}

#[tokio::test]
async fn a_plain_json_answer_to_a_streamed_request_is_decoded() {
    for api in APIS {
        let server = Server::start(vec![api.text("Not a stream, but fine.", false)]).await;
        let completion = api
            .call(&server, &Settings::streamed(true), &env())
            .await
            .unwrap();
        assert_eq!(completion.message.content, "Not a stream, but fine.");
        assert!(server.requests()[0].json()["stream"] == json!(true));
    }
}

#[tokio::test]
async fn an_error_chunk_inside_a_stream_is_typed_by_its_kind() {
    let openai = sse_openai(&[
        openai_chunk(json!({"content": "Hel"}), Value::Null),
        json!({"error": {"message": "The server had an error", "type": "server_error"}}),
    ]);
    let anthropic = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    for (api, text) in [(Api::OpenAi, openai.as_str()), (Api::Anthropic, anthropic)] {
        let server = Server::start(vec![Reply::stream_split(text, 11)]).await;
        let error = api
            .call(&server, &Settings::streamed(true), &env())
            .await
            .unwrap_err();
        assert!(
            matches!(error, ModelError::Server { .. }),
            "{api:?}: {error:?}"
        );
        assert!(error.is_transient());
    }
}

#[tokio::test]
async fn custom_headers_are_sent_and_invalid_ones_are_rejected_without_a_request() {
    let server = Server::start(vec![
        Api::OpenAi.text("hi", false),
        Api::Anthropic.text("hi", false),
    ])
    .await;
    let settings = Settings::default();
    let openai = Api::OpenAi
        .openai(&server, &settings)
        .header("HTTP-Referer", "https://example.com");
    let anthropic = Api::Anthropic
        .anthropic(&server, &settings)
        .header("x-proxy", "p1");
    brute::Model::complete(&openai, &env()).await.unwrap();
    brute::Model::complete(&anthropic, &env()).await.unwrap();
    let requests = server.requests();
    assert_eq!(
        requests[0].header("http-referer"),
        Some("https://example.com")
    );
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {CANARY}").as_str())
    );
    assert_eq!(requests[1].header("x-proxy"), Some("p1"));
    assert_eq!(requests[1].header("x-api-key"), Some(CANARY));
    assert_eq!(requests[1].header("anthropic-version"), Some("2023-06-01"));

    let bad = Api::OpenAi
        .openai(&server, &settings)
        .header("bad header", "v\n");
    let error = brute::Model::complete(&bad, &env()).await.unwrap_err();
    assert!(
        matches!(error, brute::Error::Model(ModelError::Rejected(_))),
        "{error:?}"
    );
    assert_eq!(server.requests().len(), 2, "nothing was sent");
}
