//! A small HTTP/1.1 server for the provider tests: it serves scripted replies on
//! 127.0.0.1 and records every request it receives. No framework, just tokio.

#![allow(dead_code, clippy::unwrap_used)]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// One scripted reply.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A complete response with a `Content-Length` body.
    Full {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// A `text/event-stream` response in chunked encoding, one write per piece (with a
    /// pause now and then, so that the client reads them separately).
    Stream { pieces: Vec<Vec<u8>> },
    /// Starts a chunked event stream, sends `pieces`, then closes the connection
    /// without the terminating chunk.
    DropMidStream { pieces: Vec<Vec<u8>> },
    /// Reads the request and says nothing for `Duration`.
    Stall(Duration),
    /// Starts an event stream, sends `pieces`, then says nothing for `stall`.
    StallMidStream {
        pieces: Vec<Vec<u8>>,
        stall: Duration,
    },
    /// Sends the headers of a `content-length` response and the first bytes of `body`,
    /// then says nothing for `stall`.
    StallMidBody { body: String, stall: Duration },
    /// Writes `head` (raw bytes: nothing, a status line, part of a stream), then resets
    /// the connection (RST).
    Reset { head: Vec<u8> },
    /// Starts an event stream, sends `prefix`, then one more `piece` each time `next`
    /// is notified, up to `pieces` of them (or until the client goes away), then
    /// `suffix` and the end of the body. With a `tick`, the (paused) tokio clock is
    /// advanced by it before each piece: time passes only as the stream flows.
    Drip {
        prefix: Vec<u8>,
        piece: Vec<u8>,
        pieces: usize,
        suffix: Vec<u8>,
        next: Arc<tokio::sync::Notify>,
        tick: Option<Duration>,
    },
    /// A 200 response of `content_type` whose body is `prefix` then `piece` repeated,
    /// `total` bytes in all, announced by `content-length` when `announce`, chunked
    /// otherwise. `written` counts the body bytes the socket accepted: it stops growing
    /// once the client gives up.
    Flood {
        content_type: &'static str,
        announce: bool,
        prefix: Vec<u8>,
        piece: Vec<u8>,
        total: usize,
        written: Arc<AtomicUsize>,
    },
}

impl Reply {
    /// A 200 JSON response.
    pub fn json(body: &str) -> Self {
        Reply::Full {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.into(),
        }
    }

    /// A JSON response with another status and extra headers.
    pub fn status(status: u16, headers: &[(&str, &str)], body: &str) -> Self {
        let mut all: Vec<(String, String)> =
            vec![("content-type".into(), "application/json".into())];
        all.extend(headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        Reply::Full {
            status,
            headers: all,
            body: body.into(),
        }
    }

    /// An event stream whose text is split into pieces of `size` bytes (cutting lines,
    /// JSON and UTF-8 sequences anywhere).
    pub fn stream_split(text: &str, size: usize) -> Self {
        Reply::Stream {
            pieces: split_bytes(text.as_bytes(), size),
        }
    }

    /// An event stream that stops after `cut` bytes of `text`, the connection closed.
    pub fn drop_after(text: &str, cut: usize, size: usize) -> Self {
        Reply::DropMidStream {
            pieces: split_bytes(&text.as_bytes()[..cut], size),
        }
    }

    /// The variant's name, for the server's timeline.
    fn kind(&self) -> &'static str {
        match self {
            Reply::Full { .. } => "Full",
            Reply::Stream { .. } => "Stream",
            Reply::DropMidStream { .. } => "DropMidStream",
            Reply::Stall(_) => "Stall",
            Reply::StallMidStream { .. } => "StallMidStream",
            Reply::StallMidBody { .. } => "StallMidBody",
            Reply::Reset { .. } => "Reset",
            Reply::Drip { .. } => "Drip",
            Reply::Flood { .. } => "Flood",
        }
    }
}

/// `text` cut into pieces of `size` bytes.
pub fn split_bytes(bytes: &[u8], size: usize) -> Vec<Vec<u8>> {
    bytes.chunks(size.max(1)).map(<[u8]>::to_vec).collect()
}

/// A request the server received.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// The value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the request body is JSON")
    }
}

/// The server: serves `replies` in order, one per request.
pub struct Server {
    pub addr: SocketAddr,
    requests: Arc<Mutex<Vec<Request>>>,
    timeline: Timeline,
}

/// What the server did and when (milliseconds since it started): each connection
/// accepted, request read and reply begun or ended, for a failing test to show where
/// an exchange stopped.
#[derive(Clone)]
struct Timeline {
    start: std::time::Instant,
    steps: Arc<Mutex<Vec<String>>>,
}

impl Timeline {
    fn new() -> Self {
        Timeline {
            start: std::time::Instant::now(),
            steps: Arc::default(),
        }
    }

    fn note(&self, connection: usize, what: impl std::fmt::Display) {
        let at = self.start.elapsed().as_millis();
        self.steps
            .lock()
            .unwrap()
            .push(format!("{at} ms: connection {connection}: {what}"));
    }
}

impl Server {
    pub async fn start(replies: Vec<Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = requests.clone();
        let timeline = Timeline::new();
        let noted = timeline.clone();
        tokio::spawn(async move {
            let mut connection = 0;
            loop {
                let socket = match listener.accept().await {
                    Ok((socket, _)) => socket,
                    Err(error) => {
                        noted.note(connection, format_args!("accept failed: {error}"));
                        return;
                    }
                };
                connection += 1;
                noted.note(connection, "accepted");
                // Each write leaves at once: without it a reply written in two parts
                // waits for the client's delayed ACK of the first (40 ms a reply).
                let _ = socket.set_nodelay(true);
                let exchange = Exchange {
                    replies: replies.clone(),
                    requests: recorded.clone(),
                    timeline: noted.clone(),
                    connection,
                };
                tokio::spawn(serve(socket, exchange));
            }
        });
        Server {
            addr,
            requests,
            timeline,
        }
    }

    /// What the server did so far, a line a step (for a failing assertion's message).
    pub fn timeline(&self) -> String {
        self.timeline.steps.lock().unwrap().join("\n")
    }

    /// `http://127.0.0.1:port`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

/// One connection's share of the server.
struct Exchange {
    replies: Arc<Mutex<VecDeque<Reply>>>,
    requests: Arc<Mutex<Vec<Request>>>,
    timeline: Timeline,
    connection: usize,
}

async fn serve(socket: TcpStream, exchange: Exchange) {
    let Exchange {
        replies,
        requests,
        timeline,
        connection,
    } = exchange;
    let mut socket = BufReader::new(socket);
    loop {
        let Some(request) = read_request(&mut socket).await else {
            timeline.note(connection, "closed (no further request)");
            return;
        };
        timeline.note(
            connection,
            format_args!(
                "read {} {} ({} bytes)",
                request.method,
                request.path,
                request.body.len()
            ),
        );
        requests.lock().unwrap().push(request);
        let reply = replies.lock().unwrap().pop_front();
        let Some(reply) = reply else {
            let _ = write_full(socket.get_mut(), 599, &[], "no scripted reply left").await;
            return;
        };
        let kind = reply.kind();
        timeline.note(connection, format_args!("replying ({kind})"));
        let keep_going = match reply {
            Reply::Full {
                status,
                headers,
                body,
            } => write_full(socket.get_mut(), status, &headers, &body)
                .await
                .is_ok(),
            Reply::Stream { pieces } => write_stream(socket.get_mut(), &pieces, true).await.is_ok(),
            Reply::DropMidStream { pieces } => {
                let _ = write_stream(socket.get_mut(), &pieces, false).await;
                let _ = socket.get_mut().shutdown().await;
                false
            }
            Reply::StallMidStream { pieces, stall } => {
                let _ = write_stream(socket.get_mut(), &pieces, false).await;
                tokio::time::sleep(stall).await;
                false
            }
            Reply::Stall(duration) => {
                tokio::time::sleep(duration).await;
                false
            }
            Reply::StallMidBody { body, stall } => {
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                );
                let socket = socket.get_mut();
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(&body.as_bytes()[..body.len() / 2]).await;
                let _ = socket.flush().await;
                tokio::time::sleep(stall).await;
                false
            }
            Reply::Reset { head } => {
                let socket = socket.get_mut();
                let _ = socket.write_all(&head).await;
                let _ = socket.flush().await;
                let _ = socket.set_zero_linger();
                false
            }
            Reply::Drip {
                prefix,
                piece,
                pieces,
                suffix,
                next,
                tick,
            } => {
                let socket = socket.get_mut();
                if write_stream(socket, &[prefix], false).await.is_ok() {
                    let mut sent = 0;
                    while sent < pieces {
                        next.notified().await;
                        if let Some(tick) = tick {
                            tokio::time::advance(tick).await;
                        }
                        if write_stream_piece(socket, &piece).await.is_err() {
                            return;
                        }
                        sent += 1;
                    }
                    let _ = write_stream_piece(socket, &suffix).await;
                    let _ = socket.write_all(b"0\r\n\r\n").await;
                    let _ = socket.flush().await;
                }
                false
            }
            Reply::Flood {
                content_type,
                announce,
                prefix,
                piece,
                total,
                written,
            } => {
                let _ = flood(
                    socket.get_mut(),
                    content_type,
                    announce,
                    &prefix,
                    &piece,
                    total,
                    &written,
                )
                .await;
                false
            }
        };
        timeline.note(
            connection,
            format_args!("replied ({kind}), keep going: {keep_going}"),
        );
        if !keep_going {
            return;
        }
    }
}

async fn read_request(socket: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    if socket.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        socket.read_line(&mut line).await.ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let length = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    socket.read_exact(&mut body).await.ok()?;
    Some(Request {
        method,
        path,
        headers,
        body,
    })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        503 => "Service Unavailable",
        500 => "Internal Server Error",
        529 => "Overloaded",
        _ => "Status",
    }
}

async fn write_full(
    socket: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
    body: &str,
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-length: {}\r\n",
        reason(status),
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    socket.write_all(head.as_bytes()).await?;
    socket.write_all(body.as_bytes()).await?;
    socket.flush().await
}

async fn write_stream(
    socket: &mut TcpStream,
    pieces: &[Vec<u8>],
    terminate: bool,
) -> std::io::Result<()> {
    socket
        .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n")
        .await?;
    socket.flush().await?;
    for (n, bytes) in pieces.iter().enumerate() {
        if bytes.is_empty() {
            continue;
        }
        socket
            .write_all(format!("{:x}\r\n", bytes.len()).as_bytes())
            .await?;
        socket.write_all(bytes).await?;
        socket.write_all(b"\r\n").await?;
        socket.flush().await?;
        // Pause now and then so that the client sees the pieces in separate reads.
        if n % 8 == 7 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        } else {
            tokio::task::yield_now().await;
        }
    }
    if terminate {
        socket.write_all(b"0\r\n\r\n").await?;
        socket.flush().await?;
    }
    Ok(())
}

async fn write_stream_piece(socket: &mut TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    socket
        .write_all(format!("{:x}\r\n", bytes.len()).as_bytes())
        .await?;
    socket.write_all(bytes).await?;
    socket.write_all(b"\r\n").await?;
    socket.flush().await
}

async fn flood(
    socket: &mut TcpStream,
    content_type: &str,
    announce: bool,
    prefix: &[u8],
    piece: &[u8],
    total: usize,
    written: &AtomicUsize,
) -> std::io::Result<()> {
    let length = if announce {
        format!("content-length: {total}")
    } else {
        "transfer-encoding: chunked".to_string()
    };
    let head = format!("HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\n{length}\r\n\r\n");
    socket.write_all(head.as_bytes()).await?;
    let mut sent = 0;
    let mut next: &[u8] = prefix;
    while sent < total {
        let bytes = &next[..next.len().min(total - sent)];
        if announce {
            socket.write_all(bytes).await?;
        } else {
            socket
                .write_all(format!("{:x}\r\n", bytes.len()).as_bytes())
                .await?;
            socket.write_all(bytes).await?;
            socket.write_all(b"\r\n").await?;
        }
        sent += bytes.len();
        written.store(sent, Ordering::Relaxed);
        next = piece;
    }
    if !announce {
        socket.write_all(b"0\r\n\r\n").await?;
    }
    socket.flush().await
}
