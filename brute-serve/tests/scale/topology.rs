//! The topology of one run, started and stopped by the test: a private PostgreSQL,
//! the scripted model server (in this process), three brute-serve processes and
//! nginx in front of them, all on 127.0.0.1.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener as StdListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

use super::netns::Namespaces;
use super::server;
use crate::postgres_support::RestartableServer;

/// How many brute-serve processes run behind nginx.
pub const SERVERS: usize = 3;

/// What a run is configured with.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// The lease length of every server's store.
    pub ttl: Duration,
    /// Whether the servers run with the broken fence.
    pub unfenced: bool,
    /// Whether each server runs in a network namespace of its own (needed by the
    /// partition fault and netem).
    pub netns: bool,
    /// Whether what the servers send the database gets 50 ms delay and 5 % loss.
    pub netem: bool,
}

/// A line a server printed: which server, what.
pub type Line = (usize, String);

/// A brute-serve process: killed when dropped.
struct Proc {
    child: Child,
    stdin: ChildStdin,
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The running topology.
pub struct Topology {
    pub dir: tempfile::TempDir,
    pub pg: RestartableServer,
    pub database: String,
    /// nginx's address: `http://127.0.0.1:PORT`.
    pub base: String,
    /// Each server's port, fixed for the run (a restarted server gets it again).
    pub ports: Vec<u16>,
    procs: Vec<Option<Proc>>,
    nginx: Option<Child>,
    lines: mpsc::UnboundedSender<Line>,
    /// How many tool executions the servers have announced.
    pub executions: watch::Receiver<usize>,
    /// Control lines (`listening`, `stopped`) by server.
    control: Vec<mpsc::UnboundedReceiver<String>>,
    /// The held executions: which server, which hold and call.
    held: mpsc::UnboundedReceiver<(usize, String)>,
    /// The holds armed so far.
    holds: u64,
    model: tokio::task::JoinHandle<()>,
    model_base: String,
    config: Config,
    /// The test the servers run, by the harness's full name (`scale_out::scale_no_faults`):
    /// this binary re-executed with `--exact` runs it alone.
    test: String,
    /// The servers' namespaces, when the run has them (dropped after the processes).
    pub netns: Option<Namespaces>,
}

/// Fails the run with a reason that says what to do when `program` is missing.
pub fn require(program: &str) -> PathBuf {
    let found = ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        .iter()
        .map(|dir| Path::new(dir).join(program))
        .find(|path| path.is_file());
    found.unwrap_or_else(|| {
        panic!(
            "{program} is not installed: run `cargo xtask setup` (it installs Debian's {program})"
        )
    })
}

fn free_port() -> u16 {
    StdListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Topology {
    /// Starts everything for test `test` (its full name, as `--exact` takes it); returns
    /// once nginx and every server listen.
    pub async fn start(name: &str, test: &str, config: Config) -> Topology {
        let nginx_bin = require("nginx");
        let dir = tempfile::tempdir().unwrap();
        let pg = tokio::task::spawn_blocking(RestartableServer::start)
            .await
            .unwrap();
        let database = pg.database(name);
        let (model, model_base) = model_server().await;
        let (lines, mut incoming) = mpsc::unbounded_channel::<Line>();
        let (count, executions) = watch::channel(0usize);
        let (held_tx, held) = mpsc::unbounded_channel();
        let mut senders = Vec::new();
        let mut control = Vec::new();
        for _ in 0..SERVERS {
            let (tx, rx) = mpsc::unbounded_channel();
            senders.push(tx);
            control.push(rx);
        }
        tokio::spawn(async move {
            while let Some((server, line)) = incoming.recv().await {
                if line.starts_with("ledger ") {
                    count.send_modify(|n| *n += 1);
                } else if let Some(key) = line.strip_prefix("held ") {
                    let _ = held_tx.send((server, key.to_owned()));
                } else if ["listening ", "stopped"]
                    .iter()
                    .any(|p| line.starts_with(p))
                {
                    let _ = senders[server].send(line);
                }
            }
        });
        let mut topology = Topology {
            dir,
            pg,
            database,
            base: String::new(),
            ports: vec![0; SERVERS],
            procs: (0..SERVERS).map(|_| None).collect(),
            nginx: None,
            lines,
            executions,
            control,
            held,
            holds: 0,
            model,
            model_base,
            config,
            test: test.to_owned(),
            netns: None,
        };
        if config.netns {
            topology.isolate().await;
        }
        for server in 0..SERVERS {
            topology.spawn(server);
        }
        for server in 0..SERVERS {
            let listening = topology.expect(server, "listening ");
            let line = tokio::time::timeout(Duration::from_secs(120), listening)
                .await
                .unwrap_or_else(|_| panic!("server s{server} did not start listening"));
            topology.ports[server] = line["listening ".len()..].parse().unwrap();
        }
        topology.start_nginx(&nginx_bin);
        topology
    }

    /// Starts server `n` (again) on its port.
    pub fn spawn(&mut self, n: usize) {
        let exe = std::env::current_exe().unwrap();
        let (mut command, database, model, host) = match &self.netns {
            Some(spaces) => (
                spaces.command(n, &exe),
                self.database
                    .replace("host=127.0.0.1", &format!("host={}", spaces.database(n))),
                self.model_base
                    .replace("127.0.0.1", &spaces.near(n).to_string()),
                spaces.server(n).to_string(),
            ),
            None => (
                Command::new(exe),
                self.database.clone(),
                self.model_base.clone(),
                "127.0.0.1".to_owned(),
            ),
        };
        let mut child = command
            // `--include-ignored`: the figures test is ignored by default.
            .args([
                "--exact",
                self.test.as_str(),
                "--nocapture",
                "--include-ignored",
            ])
            .env(server::SERVER, format!("s{n}"))
            .env(server::DATABASE, database)
            .env(server::MODEL, model)
            .env(server::HOST, host)
            .env(server::LEDGERS, self.dir.path())
            .env(server::PORT, self.ports[n].to_string())
            .env(server::TTL_MS, self.config.ttl.as_millis().to_string())
            .env("BRUTE_TEST_POSTGRES", "unused")
            .envs(self.config.unfenced.then_some((server::UNFENCED, "1")))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(self.dir.path().join(format!("s{n}.stderr"))).unwrap())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let stdin = child.stdin.take().unwrap();
        let lines = self.lines.clone();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                let Some(said) = line.strip_prefix(server::MARK) else {
                    continue;
                };
                if lines.send((n, said.to_owned())).is_err() {
                    break;
                }
            }
        });
        self.procs[n] = Some(Proc { child, stdin });
    }

    /// Puts each server in a namespace of its own: the model and the database reached
    /// through forwarders on this side's addresses of each link.
    async fn isolate(&mut self) {
        let mut spaces = Namespaces::create(SERVERS);
        let port = |url: &str, key: &str| -> u16 {
            let at = url.find(key).unwrap() + key.len();
            url[at..]
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        let pg = port(&self.database, "port=");
        let model = port(&self.model_base, "127.0.0.1:");
        for n in 0..SERVERS {
            let near = spaces.near(n);
            let db = spaces.database(n);
            let by_forwarder = self.config.netem && !spaces.netem(n);
            if by_forwarder {
                println!(
                    "scale: this kernel has no netem qdisc: the database forwarder of s{n} delays 50 ms and stalls 5 % of chunks 200 ms"
                );
            }
            spaces
                .forward((near, model).into(), ([127, 0, 0, 1], model).into(), false)
                .await;
            spaces
                .forward((db, pg).into(), ([127, 0, 0, 1], pg).into(), by_forwarder)
                .await;
        }
        self.netns = Some(spaces);
    }

    /// Waits for server `n`'s next control line starting with `prefix`.
    pub async fn expect(&mut self, n: usize, prefix: &str) -> String {
        loop {
            let line = self.control[n]
                .recv()
                .await
                .unwrap_or_else(|| panic!("server s{n} stopped talking before {prefix:?}"));
            if line.starts_with(prefix) {
                return line;
            }
        }
    }

    /// Arms a hold on every server and waits for the first to hold an execution;
    /// the others are disarmed (and released, should one have held meanwhile). The
    /// server and its held call.
    pub async fn hold_any(&mut self) -> (usize, String) {
        self.holds += 1;
        let hold = self.holds.to_string();
        for n in 0..SERVERS {
            self.tell(n, &format!("hold {hold}"));
        }
        let (n, call) = loop {
            let (n, line) = self.held.recv().await.expect("the servers talk");
            // A line of an earlier hold, released already, is not this one.
            if let Some(call) = line.strip_prefix(&format!("{hold} ")) {
                break (n, call.to_owned());
            }
        };
        for other in (0..SERVERS).filter(|o| *o != n) {
            self.tell(other, "unhold");
            self.tell(other, "release");
        }
        (n, call)
    }

    /// Writes a command line to server `n`.
    pub fn tell(&mut self, n: usize, command: &str) {
        let proc = self.procs[n].as_mut().unwrap();
        writeln!(proc.stdin, "{command}").unwrap();
        proc.stdin.flush().unwrap();
    }

    /// Sends `signal` (`KILL`, `STOP`, `CONT`, `TERM`) to server `n`.
    pub fn signal(&mut self, n: usize, signal: &str) {
        let pid = self.procs[n].as_ref().unwrap().child.id().to_string();
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid)
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} of server s{n} failed");
    }

    /// The servers that exited without being told to, each with the end of its
    /// standard error.
    pub fn deaths(&mut self) -> Vec<String> {
        let mut deaths = Vec::new();
        for (n, proc) in self.procs.iter_mut().enumerate() {
            if let Some(proc) = proc
                && let Ok(Some(status)) = proc.child.try_wait()
            {
                let err = std::fs::read_to_string(self.dir.path().join(format!("s{n}.stderr")))
                    .unwrap_or_default();
                let tail: String = err.lines().rev().take(15).collect::<Vec<_>>().join("\n");
                deaths.push(format!(
                    "s{n} exited ({status}); its stderr, last lines first:\n{tail}"
                ));
            }
        }
        deaths
    }

    /// Reaps server `n` after it exited or was killed.
    pub async fn reap(&mut self, n: usize) {
        let mut proc = self.procs[n].take().unwrap();
        tokio::task::spawn_blocking(move || {
            let _ = proc.child.wait();
            drop(proc);
        })
        .await
        .unwrap();
    }

    fn start_nginx(&mut self, bin: &Path) {
        let port = free_port();
        let dir = self.dir.path().join("nginx");
        std::fs::create_dir_all(dir.join("tmp")).unwrap();
        let upstreams: String = self
            .ports
            .iter()
            .enumerate()
            .map(|(n, p)| {
                let host = self
                    .netns
                    .as_ref()
                    .map_or("127.0.0.1".to_owned(), |s| s.server(n).to_string());
                format!("        server {host}:{p} max_fails=1 fail_timeout=2s;\n")
            })
            .collect();
        let d = dir.display();
        let conf = format!(
            "worker_processes 1;
daemon off;
user root;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {d}/tmp/body;
    proxy_temp_path {d}/tmp/proxy;
    fastcgi_temp_path {d}/tmp/fastcgi;
    uwsgi_temp_path {d}/tmp/uwsgi;
    scgi_temp_path {d}/tmp/scgi;
    upstream brute {{
{upstreams}        keepalive 64;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://brute;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
            proxy_buffering off;
            proxy_request_buffering off;
            proxy_connect_timeout 1s;
            proxy_read_timeout {read}ms;
            proxy_next_upstream error timeout http_502 http_503 non_idempotent;
            proxy_next_upstream_tries 3;
            add_header X-Upstream $upstream_addr always;
        }}
    }}
}}
",
            read = read_timeout(self.config.ttl).as_millis()
        );
        let path = dir.join("nginx.conf");
        std::fs::write(&path, conf).unwrap();
        let child = Command::new(bin)
            .arg("-e")
            .arg(dir.join("error.log"))
            .arg("-p")
            .arg(&dir)
            .arg("-c")
            .arg(&path)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        self.nginx = Some(child);
        self.base = format!("http://127.0.0.1:{port}");
    }

    /// Waits until nginx answers (its upstreams' `/healthz` through it).
    pub async fn ready(&mut self, client: &reqwest::Client) {
        // Generous: nginx and its upstreams start slowly on a loaded machine; only one
        // that never answers reaches it.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        while tokio::time::Instant::now() < deadline {
            if let Some(nginx) = self.nginx.as_mut()
                && let Ok(Some(status)) = nginx.try_wait()
            {
                let mut err = String::new();
                let _ = std::io::Read::read_to_string(nginx.stderr.as_mut().unwrap(), &mut err);
                panic!("nginx exited ({status}): {err}");
            }
            let answered = client
                .get(format!("{}/healthz", self.base))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if answered {
                return;
            }
            // nginx gives no event when it listens; connecting is the event.
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("nginx did not answer on {}", self.base);
    }

    /// The ledger folder.
    pub fn ledgers(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        if let Some(mut nginx) = self.nginx.take() {
            // SIGTERM, not SIGKILL: the master stops its worker, which SIGKILL of the
            // master alone would leave running.
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(nginx.id().to_string())
                .status();
            let _ = nginx.wait();
        }
        for proc in &mut self.procs {
            // SIGCONT first: a stopped process does not die of SIGKILL until continued
            // on some kernels' accounting, and reaping it must not hang.
            if let Some(proc) = proc.as_ref() {
                let _ = Command::new("kill")
                    .arg("-CONT")
                    .arg(proc.child.id().to_string())
                    .status();
            }
            proc.take();
        }
        self.model.abort();
    }
}

/// nginx's `proxy_read_timeout`: a stalled upstream's stream is cut after this.
pub fn read_timeout(ttl: Duration) -> Duration {
    ttl * 2
}

/// The scripted model's state: a counter that makes every final answer unique.
struct Model {
    answers: AtomicU64,
}

/// Starts the scripted OpenAI-compatible model server on 127.0.0.1; its task and API
/// root.
async fn model_server() -> (tokio::task::JoinHandle<()>, String) {
    let state = Arc::new(Model {
        answers: AtomicU64::new(0),
    });
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(complete))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (task, format!("http://{addr}/v1"))
}

/// Whether turn `turn` of a session asks for the approval-gated tool.
pub fn gated_turn(prompt: &str) -> bool {
    prompt.ends_with(" gated")
}

/// One completion, by the script: a prompt gets a `ledger` call; the ledger's result
/// gets a `gated` call on gated turns, else the final text; the gated call's result
/// gets the final text. Call ids are `PROMPT-ledger` / `PROMPT-gated` (spaces as
/// `-`), so that a call id names its session and turn. The final text names the
/// prompt, a counter unique in the run and the server that asked (its API key).
async fn complete(
    State(model): State<Arc<Model>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Json<Value> {
    let server = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer key-of-"))
        .unwrap_or("?")
        .to_owned();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let prompt = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_owned();
    let tag = prompt.replace(' ', "-");
    let last = messages.last().cloned().unwrap_or(Value::Null);
    let call = |name: &str| {
        let id = format!("{tag}-{name}");
        json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [{
                "id": id,
                "type": "function",
                "function": {"name": name, "arguments": json!({"key": id}).to_string()}
            }]
        })
    };
    let message = match (last["role"].as_str(), last["tool_call_id"].as_str()) {
        (Some("user"), _) => call("ledger"),
        (Some("tool"), Some(id)) if id.ends_with("-ledger") && gated_turn(&prompt) => call("gated"),
        _ => {
            let n = model.answers.fetch_add(1, Ordering::Relaxed);
            json!({"role": "assistant", "content": format!("{prompt} done #{n} by {server}")})
        }
    };
    let finish = if message["tool_calls"].is_array() {
        "tool_calls"
    } else {
        "stop"
    };
    Json(json!({
        "id": "chatcmpl-scale",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    }))
}
