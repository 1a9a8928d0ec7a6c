//! Network namespaces of the suite's own, for the network faults: each server in a
//! namespace `brute-scale-PID-sN` joined to this one by a veth pair on a private
//! /24 (`10.A.N.0`: `.1` this side, `.2` the server, `.3` this side's address of the
//! database). A blackhole route to `.3` in a server's namespace cuts it from
//! PostgreSQL only; `tc netem` on its veth, filtered on `.3`, slows and drops what it
//! sends the database (on a kernel without netem, such as the project machine's,
//! the database forwarder does the same in user space). The namespaces are deleted when the guard drops, on failure
//! too. Root only: anything else fails the run with the reason.

use std::net::{Ipv4Addr, SocketAddr};
use std::process::Command;
use std::time::Duration;

/// The namespaces of one run; deleted on drop.
pub struct Namespaces {
    pub names: Vec<String>,
    /// The second octet of the run's addresses.
    octet: u8,
    /// Each namespace's veth interface (its side).
    inner: Vec<String>,
    /// The forwarders into this namespace's 127.0.0.1 services.
    forwarders: Vec<tokio::task::JoinHandle<()>>,
}

/// Runs `ip` with `args`; fails the run with its output when it fails.
fn ip(args: &[&str]) {
    run("ip", args);
}

fn run(program: &str, args: &[&str]) {
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program} {args:?}: {e}"));
    assert!(
        output.status.success(),
        "`{program} {}` failed (the network faults need root and `ip netns`): {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr).trim()
    );
}

/// Deletes namespaces of this suite left by a process that no longer runs.
fn remove_leftovers() {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        let Some(rest) = name.strip_prefix("brute-scale-") else {
            continue;
        };
        let pid = rest.split('-').next().unwrap_or("");
        if !std::path::Path::new("/proc").join(pid).exists() {
            let _ = Command::new("ip").args(["netns", "del", name]).status();
        }
    }
}

impl Namespaces {
    /// Creates `servers` namespaces with their links.
    pub fn create(servers: usize) -> Namespaces {
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.trim_ascii() == b"0");
        assert!(
            root,
            "the network faults create network namespaces (`ip netns`) and need root; this is not root"
        );
        remove_leftovers();
        let pid = std::process::id();
        let octet = 200 + (pid % 50) as u8;
        let mut spaces = Namespaces {
            names: Vec::new(),
            octet,
            inner: Vec::new(),
            forwarders: Vec::new(),
        };
        for n in 0..servers {
            let name = format!("brute-scale-{pid}-s{n}");
            let host = format!("bsh{n}x{}", pid % 100_000);
            let inner = format!("bsn{n}x{}", pid % 100_000);
            ip(&["netns", "add", &name]);
            spaces.names.push(name.clone());
            ip(&["link", "add", &host, "type", "veth", "peer", "name", &inner]);
            ip(&["link", "set", &inner, "netns", &name]);
            let net = format!("10.{octet}.{n}");
            ip(&["addr", "add", &format!("{net}.1/24"), "dev", &host]);
            ip(&["addr", "add", &format!("{net}.3/24"), "dev", &host]);
            ip(&["link", "set", &host, "up"]);
            let inside = |args: &[&str]| {
                let mut all = vec!["netns", "exec", &name, "ip"];
                all.extend_from_slice(args);
                ip(&all);
            };
            inside(&["addr", "add", &format!("{net}.2/24"), "dev", &inner]);
            inside(&["link", "set", &inner, "up"]);
            inside(&["link", "set", "lo", "up"]);
            spaces.inner.push(inner);
        }
        spaces
    }

    /// This side's address in server `n`'s link (`.1`).
    pub fn near(&self, n: usize) -> Ipv4Addr {
        Ipv4Addr::new(10, self.octet, n as u8, 1)
    }

    /// Server `n`'s address (`.2`).
    pub fn server(&self, n: usize) -> Ipv4Addr {
        Ipv4Addr::new(10, self.octet, n as u8, 2)
    }

    /// The database's address as server `n` sees it (`.3`).
    pub fn database(&self, n: usize) -> Ipv4Addr {
        Ipv4Addr::new(10, self.octet, n as u8, 3)
    }

    /// Forwards `at` (an address of this side) to `to` on 127.0.0.1, for as long as
    /// the namespaces live; with `impaired`, what comes in at `at` is delayed as
    /// [`Namespaces::netem`] would (see [`impaired_copy`]).
    pub async fn forward(&mut self, at: SocketAddr, to: SocketAddr, impaired: bool) {
        let listener = tokio::net::TcpListener::bind(at)
            .await
            .unwrap_or_else(|e| panic!("cannot listen on {at}: {e}"));
        self.forwarders.push(tokio::spawn(async move {
            let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
            while let Ok((inbound, _)) = listener.accept().await {
                seed = seed.wrapping_add(0x2545_f491_4f6c_dd1d);
                tokio::spawn(async move {
                    let Ok(outbound) = tokio::net::TcpStream::connect(to).await else {
                        return;
                    };
                    if impaired {
                        let (read_in, write_in) = inbound.into_split();
                        let (read_out, write_out) = outbound.into_split();
                        let up = impaired_copy(read_in, write_out, seed);
                        let down = plain_copy(read_out, write_in);
                        let _ = tokio::join!(up, down);
                    } else {
                        let (mut inbound, mut outbound) = (inbound, outbound);
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
            }
        }));
    }

    /// The command that runs `program` in server `n`'s namespace.
    pub fn command(&self, n: usize, program: &std::path::Path) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.names[n]]).arg(program);
        command
    }

    /// Cuts server `n` from the database (a blackhole route to its `.3`), or heals it.
    pub fn partition(&self, n: usize, cut: bool) {
        let db = format!("{}/32", self.database(n));
        let verb = if cut { "add" } else { "del" };
        ip(&[
            "netns",
            "exec",
            &self.names[n],
            "ip",
            "route",
            verb,
            "blackhole",
            &db,
        ]);
    }

    /// 50 ms of delay and 5 % loss on what server `n` sends the database, with
    /// `tc netem` on its veth: false when the kernel has no netem (nor prio) qdisc,
    /// and the forwarder must do it instead ([`impaired_copy`]).
    pub fn netem(&self, n: usize) -> bool {
        let dev = self.inner[n].as_str();
        let db = format!("{}/32", self.database(n));
        let tc = |args: &[&str]| {
            let mut all = vec!["netns", "exec", &self.names[n], "tc"];
            all.extend_from_slice(args);
            Command::new("ip")
                .args(&all)
                .output()
                .unwrap_or_else(|e| panic!("cannot run ip {all:?}: {e}"))
        };
        let prio = tc(&["qdisc", "add", "dev", dev, "root", "handle", "1:", "prio"]);
        if !prio.status.success() {
            let why = String::from_utf8_lossy(&prio.stderr);
            assert!(
                why.contains("qdisc kind is unknown"),
                "tc qdisc add prio failed: {why}"
            );
            return false;
        }
        for args in [
            &[
                "qdisc", "add", "dev", dev, "parent", "1:3", "handle", "30:", "netem", "delay",
                "50ms", "loss", "5%",
            ][..],
            &[
                "filter", "add", "dev", dev, "parent", "1:0", "protocol", "ip", "u32", "match",
                "ip", "dst", &db, "flowid", "1:3",
            ][..],
        ] {
            let out = tc(args);
            if !out.status.success() {
                let why = String::from_utf8_lossy(&out.stderr);
                assert!(why.contains("kind is unknown"), "tc {args:?} failed: {why}");
                return false;
            }
        }
        true
    }
}

/// netem's delay, done by the forwarder.
const DELAY: Duration = Duration::from_millis(50);
/// What a lost segment costs TCP: its minimum retransmission timeout.
const RETRANSMIT: Duration = Duration::from_millis(200);

/// Copies `from` to `to` as `tc netem delay 50ms loss 5%` would look to the
/// application when the kernel has no netem: a delay line where each chunk arrives
/// 50 ms after it was sent, and one in twenty (a pseudo-random draw from `seed`) a
/// further 200 ms, the retransmission a lost segment costs, holding back those
/// behind it as TCP's in-order delivery does.
async fn impaired_copy(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut seed: u64,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::time::Instant;
    let (line, mut arrivals) = tokio::sync::mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let deliver = async move {
        while let Some((at, chunk)) = arrivals.recv().await {
            // The fault itself is time: this wait is the impairment, not a synchronisation.
            tokio::time::sleep_until(at).await;
            if to.write_all(&chunk).await.is_err() {
                break;
            }
        }
        let _ = to.shutdown().await;
    };
    let send = async move {
        let mut buf = vec![0u8; 16 * 1024];
        let mut last = Instant::now();
        loop {
            let n = match from.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let lost = seed.is_multiple_of(20);
            let at = Instant::now() + if lost { DELAY + RETRANSMIT } else { DELAY };
            last = last.max(at);
            if line.send((last, buf[..n].to_vec())).is_err() {
                break;
            }
        }
    };
    tokio::join!(send, deliver);
}

/// Copies `from` to `to` unchanged.
async fn plain_copy(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
) {
    let _ = tokio::io::copy(&mut from, &mut to).await;
    let _ = tokio::io::AsyncWriteExt::shutdown(&mut to).await;
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for forwarder in &self.forwarders {
            forwarder.abort();
        }
        // Deleting a namespace deletes its veth, and with it the pair's other end.
        for name in &self.names {
            let _ = Command::new("ip").args(["netns", "del", name]).status();
        }
    }
}
