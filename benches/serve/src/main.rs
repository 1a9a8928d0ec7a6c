//! The servers of `benches/serve/run.sh`: one `brute_serve::Server` and one bare axum
//! server that answers with the very bytes brute-serve answered with (captured once at
//! start), streamed one event per frame as brute-serve streams them: the limit that
//! brute-serve's own work is measured against. The load generator (`wrk`) runs in
//! another process.
//!
//! `brute-serve-bench <brute port> <bare port> <data folder>`; with
//! `BRUTE_BENCH_PG=<url>` an agent on PostgreSQL too. Prints `ready` when both listen.
//!
//! brute-serve's agents (the `agent` of a turn, the `model` of a chat completion):
//! `zero` (no session store, a model that answers at once), `m20` (no store, a 20 ms
//! model), `jsonl`, `sqlite` and `postgres` (`SessionLog` on that store, 20 ms model).
//!
//! The bare server's routes: `POST /v1/sessions/{id}/turns` (the SSE bytes of a `zero`
//! turn), `POST /slow/v1/sessions/{id}/turns` (the same after 20 ms: the ideal of the
//! durable rows), `POST /v1/chat/completions` (a completion's JSON) and `POST
//! /stream/v1/chat/completions` (a streamed completion's chunks).

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::Response;
use axum::routing::post;
use axum::serve::ListenerExt;
use brute::middleware::SessionLog;
use brute::session::{JsonlStore, PostgresStore, SqliteStore};
use brute::{Completion, Env, Message, brute_agent};
use brute_serve::Server;
use tokio::net::TcpListener;

/// A model that answers `done` after `delay` (at once for zero).
struct Fixed {
    delay: Duration,
}

impl brute::Model for Fixed {
    async fn complete(&self, _env: &Env) -> Result<Completion, brute::Error> {
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        Ok(Message::assistant("done").into())
    }
}

const TOKEN: &str = "bench";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: brute-serve-bench <brute port> <bare port> <data folder>";
    let brute_port: u16 = args.next().ok_or(usage)?.parse()?;
    let bare_port: u16 = args.next().ok_or(usage)?.parse()?;
    let data = PathBuf::from(args.next().ok_or(usage)?);
    let workers = std::env::var("BRUTE_BENCH_WORKERS")
        .ok()
        .and_then(|w| w.parse().ok())
        .unwrap_or(2);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()?
        .block_on(run(brute_port, bare_port, data))
}

async fn run(
    brute_port: u16,
    bare_port: u16,
    data: PathBuf,
) -> Result<(), Box<dyn std::error::Error>> {
    std::fs::create_dir_all(&data)?;
    let model20 = Duration::from_millis(20);
    let jsonl = Arc::new(JsonlStore::new(data.join("jsonl")));
    let sqlite = Arc::new(SqliteStore::open(data.join("sessions.sqlite"))?);
    let zero = brute_agent! { run Fixed { delay: Duration::ZERO }; };
    let m20 = brute_agent! { run Fixed { delay: model20 }; };
    let on_jsonl = brute_agent! {
        use SessionLog { store: jsonl.clone() };
        run Fixed { delay: model20 };
    };
    let on_sqlite = brute_agent! {
        use SessionLog { store: sqlite.clone() };
        run Fixed { delay: model20 };
    };
    let mut server = Server::new(jsonl.clone())
        .agent("zero", zero)
        .agent("m20", m20)
        .agent("jsonl", on_jsonl)
        .agent("sqlite", on_sqlite)
        .bearer_token(TOKEN);
    if let Ok(url) = std::env::var("BRUTE_BENCH_PG") {
        let pg = Arc::new(PostgresStore::connect(&url).await?);
        let on_pg = brute_agent! {
            use SessionLog { store: pg.clone() };
            run Fixed { delay: model20 };
        };
        server = server.agent("postgres", on_pg);
    }
    let listener = TcpListener::bind(("127.0.0.1", brute_port)).await?;
    let brute = tokio::spawn(server.serve(listener, async {
        tokio::signal::ctrl_c().await.ok();
    }));

    let base = format!("http://127.0.0.1:{brute_port}");
    let client = reqwest::Client::new();
    let capture = |path: &str, body: &'static str| {
        let request = client
            .post(format!("{base}{path}"))
            .header("authorization", format!("Bearer {TOKEN}"))
            .header("content-type", "application/json")
            .body(body);
        async move {
            let response = request.send().await?;
            let status = response.status();
            let bytes = response.bytes().await?;
            if !status.is_success() {
                return Err(
                    format!("capture: {status}: {}", String::from_utf8_lossy(&bytes)).into(),
                );
            }
            Ok::<_, Box<dyn std::error::Error>>(bytes)
        }
    };
    let turn = capture(
        "/v1/sessions/capture/turns",
        r#"{"input":"go","agent":"zero"}"#,
    )
    .await?;
    let completion = capture(
        "/v1/chat/completions",
        r#"{"model":"zero","messages":[{"role":"user","content":"go"}]}"#,
    )
    .await?;
    let chunks = capture(
        "/v1/chat/completions",
        r#"{"model":"zero","stream":true,"messages":[{"role":"user","content":"go"}]}"#,
    )
    .await?;

    let bare = Bare {
        turn: events(&turn),
        completion,
        chunks: events(&chunks),
    };
    let bare = Arc::new(bare);
    let router = Router::new()
        .route(
            "/v1/sessions/{id}/turns",
            post({
                let bare = bare.clone();
                move |_body: Bytes| std::future::ready(sse(&bare.turn))
            }),
        )
        .route(
            "/slow/v1/sessions/{id}/turns",
            post({
                let bare = bare.clone();
                move |_body: Bytes| async move {
                    tokio::time::sleep(model20).await;
                    sse(&bare.turn)
                }
            }),
        )
        .route(
            "/v1/chat/completions",
            post({
                let bare = bare.clone();
                move |_body: Bytes| {
                    std::future::ready(
                        Response::builder()
                            .header(header::CONTENT_TYPE, "application/json")
                            .body(Body::from(bare.completion.clone()))
                            .unwrap_or_default(),
                    )
                }
            }),
        )
        .route(
            "/stream/v1/chat/completions",
            post({
                let bare = bare.clone();
                move |_body: Bytes| std::future::ready(sse(&bare.chunks))
            }),
        );
    let listener = TcpListener::bind(("127.0.0.1", bare_port))
        .await?
        .tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
    let bare_server = tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async {
                tokio::signal::ctrl_c().await.ok();
            })
            .await
    });
    println!("ready");
    brute.await??;
    bare_server.await??;
    Ok(())
}

/// The captured responses.
struct Bare {
    turn: Arc<[Bytes]>,
    completion: Bytes,
    chunks: Arc<[Bytes]>,
}

/// The events of an SSE body, each with its blank line.
fn events(body: &Bytes) -> Arc<[Bytes]> {
    let mut out = Vec::new();
    let mut start = 0;
    while let Some(at) = body[start..].windows(2).position(|w| w == b"\n\n") {
        let end = start + at + 2;
        out.push(body.slice(start..end));
        start = end;
    }
    if start < body.len() {
        out.push(body.slice(start..));
    }
    out.into()
}

/// An SSE response streaming `events`, one frame each.
fn sse(events: &Arc<[Bytes]>) -> Response {
    let events = events.clone();
    let frames = futures_util::stream::iter(
        (0..events.len()).map(move |i| Ok::<_, Infallible>(events[i].clone())),
    );
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(frames))
        .unwrap_or_default()
}
