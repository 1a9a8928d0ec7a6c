//! The limits of one model call on both wire formats, against a hostile server on
//! 127.0.0.1: an endless stream of valid deltas is refused at the stream size limit,
//! a stream dripped forever (each delta sent only once the last one arrived, so the
//! idle timeout never fires) ends at the call timeout, bytes that are not UTF-8 are
//! replaced instead of failing the reply, a streamed reply's memory is what it keeps
//! (held to the response size limit), not what it read, and tool-call ids that repeat an earlier
//! reply's, or are empty, are made unique before the reply is stored.

#![allow(clippy::unwrap_used)]

use crate::providers_faults;
use crate::providers_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use brute::{EventKind, Message, ModelError, ToolCall, brute_agent};
use providers_faults::{APIS, Api, Settings, anthropic_start, env, openai_chunk};
use providers_support::{Reply, Server};
use serde_json::{Value, json};

/// The events that open a stream (`prefix`) and one text delta event (`piece`).
fn delta_events(api: Api, delta: &str) -> (Vec<u8>, Vec<u8>) {
    match api {
        Api::OpenAi => {
            let piece = format!(
                "data: {}\n\n",
                openai_chunk(json!({"content": delta}), Value::Null)
            );
            // (A flood's prefix must not be empty: it would end the chunked body.)
            (piece.clone().into_bytes(), piece.into_bytes())
        }
        Api::Anthropic => {
            let start = json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}});
            let prefix = format!(
                "event: message_start\ndata: {}\n\nevent: content_block_start\ndata: {start}\n\n",
                anthropic_start()
            );
            let delta = json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": delta}});
            let piece = format!("event: content_block_delta\ndata: {delta}\n\n");
            (prefix.into_bytes(), piece.into_bytes())
        }
    }
}

#[tokio::test]
async fn an_endless_stream_of_valid_deltas_is_refused_at_the_stream_size_limit() {
    let limit = 256 * 1024;
    for api in APIS {
        let (prefix, piece) = delta_events(api, &"x".repeat(1000));
        let written = Arc::new(AtomicUsize::new(0));
        let server = Server::start(vec![Reply::Flood {
            content_type: "text/event-stream",
            announce: false,
            prefix,
            piece,
            total: 1 << 30,
            written: written.clone(),
        }])
        .await;
        let settings = Settings {
            stream: true,
            max_stream_bytes: Some(limit),
            ..Settings::default()
        };
        let error = api.call(&server, &settings, &env()).await.unwrap_err();
        match &error {
            ModelError::TooLarge { limit: l, message } => {
                assert_eq!(*l, limit, "{api:?}");
                assert!(message.contains("stream size limit"), "{message}");
            }
            other => panic!("{api:?}: expected TooLarge, got {other:?}"),
        }
        // Refused where it passed the limit, not read to the server's end.
        let sent = written.load(Ordering::Relaxed);
        assert!(sent < 64 << 20, "{api:?}: the server wrote {sent} bytes");
    }
}

/// An event of `api` that adds nothing to a reply, `padding` bytes long: a chunk
/// without choices, a ping, each with a field no decoder reads.
fn padded_nothing(api: Api, padding: usize) -> Vec<u8> {
    let padding = "p".repeat(padding);
    match api {
        Api::OpenAi => format!(
            "data: {}\n\n",
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [], "padding": padding})
        ),
        Api::Anthropic => format!(
            "event: ping\ndata: {}\n\n",
            json!({"type": "ping", "padding": padding})
        ),
    }
    .into_bytes()
}

/// Bytes allocated and not yet freed by each thread, with their high mark: the
/// memory of a call on a current-thread runtime (the call, and this file's server,
/// run on the test's own thread; other tests' threads count apart).
mod allocations {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    pub struct Counting;

    thread_local! {
        static LIVE: Cell<isize> = const { Cell::new(0) };
        static PEAK: Cell<isize> = const { Cell::new(0) };
    }

    fn add(bytes: isize) {
        let _ = LIVE.try_with(|live| {
            live.set(live.get() + bytes);
            let _ = PEAK.try_with(|peak| peak.set(peak.get().max(live.get())));
        });
    }

    // SAFETY: every call is passed to the system allocator unchanged; the counting
    // only reads the sizes.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            // SAFETY: the caller's layout, as `GlobalAlloc::alloc` requires.
            let pointer = unsafe { System.alloc(layout) };
            if !pointer.is_null() {
                add(layout.size() as isize);
            }
            pointer
        }

        unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
            // SAFETY: allocated by `alloc` above with this layout.
            unsafe { System.dealloc(pointer, layout) };
            add(-(layout.size() as isize));
        }

        unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, size: usize) -> *mut u8 {
            // SAFETY: allocated by `alloc` above with this layout.
            let moved = unsafe { System.realloc(pointer, layout, size) };
            if !moved.is_null() {
                add(size as isize - layout.size() as isize);
            }
            moved
        }
    }

    /// Starts a measure on this thread: the high mark is set to what is live now.
    pub fn start() -> isize {
        let live = LIVE.with(Cell::get);
        PEAK.with(|peak| peak.set(live));
        live
    }

    /// The most bytes this thread had live above `start`'s since it was called.
    pub fn peak_since(start: isize) -> usize {
        (PEAK.with(Cell::get) - start).max(0) as usize
    }
}

#[global_allocator]
static ALLOCATOR: allocations::Counting = allocations::Counting;

/// A call of `api` against a server streaming `prefix`, then `piece` until `total`
/// bytes: its error and the most bytes its thread had live meanwhile.
async fn flooded(
    api: Api,
    settings: &Settings,
    (prefix, piece): (Vec<u8>, Vec<u8>),
    total: usize,
) -> (ModelError, usize) {
    let server = Server::start(vec![Reply::Flood {
        content_type: "text/event-stream",
        announce: false,
        prefix,
        piece,
        total,
        written: Arc::default(),
    }])
    .await;
    let start = allocations::start();
    let error = api.call(&server, settings, &env()).await.unwrap_err();
    (error, allocations::peak_since(start))
}

/// A stream's memory is what its reply keeps, not what it read: a reply that grows past
/// `max_response_bytes` is refused there (the stream still far below its own limit),
/// and a long stream that keeps nothing needs no more memory than a short one.
#[tokio::test]
async fn a_streamed_reply_is_held_to_the_response_size_limit_and_its_memory_to_what_it_keeps() {
    const STREAM: usize = 16 << 20;
    const REPLY: usize = 1 << 20;
    const PEAK: usize = 8 << 20;
    let settings = Settings {
        stream: true,
        max_response_bytes: Some(REPLY),
        ..Settings::default()
    };
    for api in APIS {
        // 16 MiB of text in deltas of 16 KiB, against a reply limit of 1 MiB.
        let text = delta_events(api, &"x".repeat(16 * 1024));
        let (error, peak) = flooded(api, &settings, text, STREAM).await;
        eprintln!(
            "{api:?}: {} KiB live at the peak of a refused reply",
            peak / 1024
        );
        match &error {
            ModelError::TooLarge { limit, message } => {
                assert_eq!(*limit, REPLY, "{api:?}");
                assert!(
                    message.contains("response size limit"),
                    "{api:?}: {message}"
                );
            }
            other => panic!("{api:?}: expected TooLarge, got {other:?}"),
        }
        assert!(
            peak < PEAK,
            "{api:?}: a call refused at a 1 MiB reply had {} KiB live at its peak",
            peak / 1024
        );

        // 16 MiB of events that add nothing to the reply (16 KiB of a field no one
        // reads): read whole (the stream then ends unfinished), in no more memory than
        // the reply they keep.
        let piece = padded_nothing(api, 16 * 1024);
        let (error, peak) = flooded(api, &settings, (piece.clone(), piece), STREAM).await;
        eprintln!(
            "{api:?}: {} KiB live at the peak of a stream that kept nothing",
            peak / 1024
        );
        assert!(
            matches!(&error, ModelError::Connection(m) if m.contains("ended before")),
            "{api:?}: {error:?}"
        );
        assert!(
            peak < PEAK,
            "{api:?}: a 16 MiB stream that kept nothing had {} KiB live at its peak",
            peak / 1024
        );
    }
}

/// Time here is tokio's paused clock, and it moves only when the server sends a piece:
/// one `STEP` before each delta, each delta sent only once the last one arrived. So
/// the stream is still flowing when the call's deadline comes, it never falls silent
/// for as long as the idle timeout, and how busy the machine is changes nothing.
#[tokio::test(start_paused = true)]
async fn a_stream_dripped_forever_ends_at_the_call_timeout() {
    const STEP: Duration = Duration::from_secs(1);
    let call_timeout = STEP * 10;
    // Shorter than the call timeout, longer than a step: only a server that falls
    // silent could end the call at it.
    let idle = STEP * 3;
    // A blocking task keeps the paused clock from jumping to the next timer while the
    // runtime waits for the socket (tokio's `spawn_blocking` inhibits auto-advance);
    // after two minutes of real time it gives up, so a hang ends the test.
    let (release, held) = std::sync::mpsc::channel::<()>();
    let hold = tokio::task::spawn_blocking(move || {
        held.recv_timeout(Duration::from_secs(120))
            .is_err_and(|e| e == std::sync::mpsc::RecvTimeoutError::Timeout)
    });
    for api in APIS {
        let (prefix, piece) = delta_events(api, "a");
        // A keep-alive comment before each delta: the server never falls silent.
        let mut drip = b": keep-alive\n\n".to_vec();
        drip.extend_from_slice(&piece);
        let next = Arc::new(tokio::sync::Notify::new());
        next.notify_one();
        // 1,000 deltas, a thousand steps: far longer than the call timeout, and a
        // stream that ends well when nothing stops it.
        let end = api.deltas_stream(&[]);
        let suffix = match api {
            Api::OpenAi => end.into_bytes(),
            Api::Anthropic => {
                let stop = end.find("event: content_block_stop").unwrap();
                end.as_bytes()[stop..].to_vec()
            }
        };
        let server = Server::start(vec![Reply::Drip {
            prefix,
            piece: drip,
            pieces: 1000,
            suffix,
            next: next.clone(),
            tick: Some(STEP),
        }])
        .await;
        let settings = Settings {
            stream: true,
            idle: Some(idle),
            call_timeout: Some(call_timeout),
            ..Settings::default()
        };
        let deltas = Arc::new(AtomicUsize::new(0));
        let seen = deltas.clone();
        let started = tokio::time::Instant::now();
        let error = match api {
            Api::OpenAi => {
                let model = api.openai(&server, &settings);
                let mut agent = brute_agent! { run model; };
                let notify = next.clone();
                agent.on(EventKind::ContentDelta, move |_env, _event| {
                    seen.fetch_add(1, Ordering::Relaxed);
                    notify.notify_one();
                });
                agent.start("Go.").await.unwrap_err()
            }
            Api::Anthropic => {
                let model = api.anthropic(&server, &settings);
                let mut agent = brute_agent! { run model; };
                let notify = next.clone();
                agent.on(EventKind::ContentDelta, move |_env, _event| {
                    seen.fetch_add(1, Ordering::Relaxed);
                    notify.notify_one();
                });
                agent.start("Go.").await.unwrap_err()
            }
        };
        let elapsed = started.elapsed();
        assert!(!hold.is_finished(), "{api:?}: the call hung");
        assert!(
            matches!(error, brute::Error::Model(ModelError::Timeout(t)) if t == call_timeout),
            "{api:?}: {error:?}"
        );
        // Cut at the deadline, not before it nor long after, while deltas still came:
        // one a step until the end.
        assert!(
            (call_timeout..=call_timeout + STEP * 2).contains(&elapsed),
            "{api:?}: cut after {elapsed:?}"
        );
        let deltas = deltas.load(Ordering::Relaxed);
        assert!(
            (9..=12).contains(&deltas),
            "{api:?}: {deltas} deltas arrived in {elapsed:?}"
        );
    }
    release.send(()).unwrap();
    assert!(!hold.await.unwrap(), "the test hung");
}

#[tokio::test]
async fn bytes_that_are_not_utf8_are_replaced_and_the_reply_kept() {
    for api in APIS {
        let text = api.deltas_stream(&["Hel".into(), "zz".into()]);
        let mut bytes = text.into_bytes();
        // Put an invalid byte inside the second delta's text.
        let at = bytes.windows(2).position(|w| w == b"zz").unwrap();
        bytes.insert(at + 1, 0xff);
        let server = Server::start(vec![Reply::Stream {
            pieces: providers_support::split_bytes(&bytes, 5),
        }])
        .await;
        let completion = api
            .call(&server, &Settings::streamed(true), &env())
            .await
            .unwrap_or_else(|e| panic!("{api:?}: {e:?}"));
        assert_eq!(completion.message.content, "Helz\u{fffd}z", "{api:?}");
    }
}

#[tokio::test]
async fn call_ids_repeated_across_replies_or_empty_are_unique_before_they_are_stored() {
    for api in APIS {
        for stream in [false, true] {
            let replies = vec![
                api.calls(&[("same".into(), "t".into(), "{}".into())], stream),
                api.calls(&[(String::new(), "t".into(), "{}".into())], stream),
            ];
            let server = Server::start(replies).await;
            let settings = Settings::streamed(stream);
            let mut history = vec![
                Message::user("Go."),
                Message::tool_calls("", vec![ToolCall::new("same", "t", json!({}))]),
                Message::tool_result("same", "done"),
                Message::tool_calls("", vec![ToolCall::new("call_0_0", "t", json!({}))]),
                Message::tool_result("call_0_0", "done"),
                Message::user("Again."),
            ];
            for _ in 0..2 {
                let outcome = match api {
                    Api::OpenAi => {
                        let model = api.openai(&server, &settings);
                        let agent = brute_agent! { run model; };
                        let mut env = agent.env();
                        env.messages.extend(history.clone());
                        agent.turn(env).await.unwrap()
                    }
                    Api::Anthropic => {
                        let model = api.anthropic(&server, &settings);
                        let agent = brute_agent! { run model; };
                        let mut env = agent.env();
                        env.messages.extend(history.clone());
                        agent.turn(env).await.unwrap()
                    }
                };
                let reply = outcome.env.messages.last().unwrap().clone();
                let id = reply.tool_calls[0].id.clone();
                let ids: Vec<&str> = history
                    .iter()
                    .flat_map(|m| m.tool_calls.iter().map(|c| c.id.as_str()))
                    .collect();
                assert!(!id.is_empty(), "{api:?}, stream {stream}: an empty id");
                assert!(
                    !ids.contains(&id.as_str()),
                    "{api:?}, stream {stream}: `{id}` is already in {ids:?}"
                );
                history.push(reply);
                history.push(Message::tool_result(id, "done"));
                history.push(Message::user("Again."));
            }
        }
    }
}
