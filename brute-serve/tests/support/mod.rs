//! Test support for the server: start one on 127.0.0.1, call it, read its streams.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::net::SocketAddr;
use std::path::Path;

use brute::tools::{ToolContext, ToolError};
use brute_serve::Server;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A server running on 127.0.0.1 for one test.
pub struct Running {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), brute_serve::ServeError>>>,
}

impl Running {
    /// Starts `server` on a free port.
    pub async fn start(server: Server) -> Running {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(server.serve(listener, async {
            stopped.await.ok();
        }));
        Running {
            base: format!("http://{addr}"),
            addr,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Asks for graceful shutdown; the handle of the serving task.
    pub fn shutdown(&mut self) -> JoinHandle<Result<(), brute_serve::ServeError>> {
        if let Some(stop) = self.stop.take() {
            stop.send(()).ok();
        }
        self.task.take().unwrap()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// The token the tests' servers require.
pub const TOKEN: &str = "test-token";

/// An HTTP client (reqwest, with rustls' ring provider installed in case the build
/// turned reqwest's rustls on).
pub fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// The name the test harness gives test `test` of the module whose `module_path!()` is
/// `module_path`, as `--exact` takes it when a test runs its own binary again:
/// `approvals::a_decision_survives_a_killed_server` (the harness leaves out the crate's
/// name, the first part of the module path).
pub fn harness_name(module_path: &str, test: &str) -> String {
    match module_path.split_once("::") {
        Some((_crate, module)) => format!("{module}::{test}"),
        None => test.to_owned(),
    }
}

/// A client request to `base + path` with the tests' token.
pub fn post(client: &reqwest::Client, url: String, body: Value) -> reqwest::RequestBuilder {
    client
        .post(url)
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("content-type", "application/json")
        .body(body.to_string())
}

/// The events of an SSE body: `(event name, data as JSON)`; `data: [DONE]` is
/// `("", Value::Null)`.
pub fn events(body: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for block in body.split("\n\n") {
        let mut name = String::new();
        let mut data = String::new();
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("event:") {
                name = v.trim().to_owned();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim_start());
            }
        }
        if data.is_empty() {
            continue;
        }
        let value = if data == "[DONE]" {
            Value::Null
        } else {
            serde_json::from_str(&data).unwrap_or_else(|e| panic!("bad SSE data {data:?}: {e}"))
        };
        out.push((name, value));
    }
    out
}

/// Launches a rocket: appends a line to `launches.log` in the tool root.
#[brute::tool]
pub async fn launch(
    /// Where to.
    target: String,
    cx: &ToolContext,
) -> Result<String, ToolError> {
    use std::io::Write;
    let path = cx.sandbox().root().join("launches.log");
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| ToolError::failed(format!("{}: {e}", path.display())))?;
    writeln!(file, "{target}").map_err(|e| ToolError::failed(e.to_string()))?;
    Ok(format!("launched to {target}"))
}

/// The targets `launch` was run with, in order, from `launches.log` in `dir`.
pub fn launches(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("launches.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}
