//! The faults, each triggered by an event of the run (a tool execution announced by a
//! server, a client's answer), never by a timer.

use std::time::{Duration, Instant};

use super::topology::Topology;
use super::workload::Progress;

/// One fault of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// SIGKILL of a server in the middle of a tool call (its stream open), then a
    /// restart.
    Kill,
    /// SIGKILL of a server as one of its answers streams its first item, then a
    /// restart.
    KillMidStream,
    /// SIGSTOP of a server holding a session in a tool call, until another server has
    /// taken the session over; then SIGCONT: its late writes must be fenced.
    Stop,
    /// A fast PostgreSQL stop and start while turns run.
    PgRestart,
    /// A server holding a session in a tool call is cut from PostgreSQL (only) until
    /// another server has taken the session over; then its tool returns and the
    /// link heals: its late writes must be fenced.
    Partition,
}

/// What a fault did: when, and what its affected request took to be answered again.
#[derive(Clone, Debug)]
pub struct Injected {
    pub fault: Fault,
    /// The call the fault cut, when it cut one.
    pub call: Option<String>,
    /// From the fault to the affected request's answer through another server (the
    /// lease taken over), for `Kill` and `Stop`.
    pub takeover: Option<Duration>,
}

/// A safety net on waits for events that a healthy run always sees.
const PATIENCE: Duration = Duration::from_secs(120);

async fn patient<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(PATIENCE, future)
        .await
        .unwrap_or_else(|_| panic!("no {what} within {PATIENCE:?}"))
}

/// Waits until the servers have announced `more` tool executions beyond now.
async fn executions(topology: &mut Topology, more: usize) {
    let target = *topology.executions.borrow() + more;
    patient(
        "progress of the workload",
        topology.executions.wait_for(|n| *n >= target),
    )
    .await
    .unwrap();
}

/// The idempotency key of the request that runs call `call` (`sNNNN-tK[-gated]-TOOL`):
/// the approval for a `gated` call, else the turn.
fn request_key(call: &str) -> String {
    let mut parts = call.split('-');
    let session = parts.next().unwrap_or("").trim_start_matches('s');
    let turn = parts.next().unwrap_or("");
    let approval = call.ends_with("-gated-gated");
    format!(
        "scale-{session}-{turn}{}",
        if approval { "-approve" } else { "" }
    )
}

/// Injects `fault`: on the server that first holds a tool call for the faults that
/// cut one, on server `n` for `KillMidStream`.
pub async fn inject(
    topology: &mut Topology,
    progress: &Progress,
    fault: Fault,
    n: usize,
) -> Injected {
    executions(topology, 20).await;
    match fault {
        Fault::Kill | Fault::Stop | Fault::Partition => {
            let (n, call) = patient("held tool call", topology.hold_any()).await;
            let key = request_key(&call);
            if std::env::var_os("BRUTE_SCALE_TRACE").is_some() {
                eprintln!("trace fault {fault:?} on s{n} at {call} ({key})");
            }
            let at = Instant::now();
            if fault == Fault::Partition {
                let spaces = topology
                    .netns
                    .as_ref()
                    .expect("the partition run has namespaces");
                spaces.partition(n, true);
                patient("takeover", progress.wait_for(&key)).await;
                topology.tell(n, "release");
                let spaces = topology.netns.as_ref().unwrap();
                spaces.partition(n, false);
            } else if fault == Fault::Kill {
                topology.signal(n, "KILL");
                topology.reap(n).await;
                topology.spawn(n);
                patient("restart", topology.expect(n, "listening ")).await;
            } else {
                topology.signal(n, "STOP");
                patient("takeover", progress.wait_for(&key)).await;
                topology.signal(n, "CONT");
                topology.tell(n, "release");
                // The stale holder's turn ends (fenced) before the drain lets it exit.
                topology.signal(n, "TERM");
                patient("drain", topology.expect(n, "stopped")).await;
                topology.reap(n).await;
                topology.spawn(n);
                patient("restart", topology.expect(n, "listening ")).await;
            }
            let answered = patient("answer", progress.wait_for(&key)).await;
            Injected {
                fault,
                call: Some(call),
                takeover: Some(answered.saturating_duration_since(at)),
            }
        }
        Fault::KillMidStream => {
            let seen = progress.first_items_seen();
            let port = format!(":{}", topology.ports[n]);
            patient(
                "a stream's first item",
                progress.first_item_from(&port, seen),
            )
            .await;
            topology.signal(n, "KILL");
            topology.reap(n).await;
            topology.spawn(n);
            patient("restart", topology.expect(n, "listening ")).await;
            Injected {
                fault,
                call: None,
                takeover: None,
            }
        }
        Fault::PgRestart => {
            tokio::task::block_in_place(|| {
                topology.pg.stop();
                topology.pg.start_again();
            });
            Injected {
                fault,
                call: None,
                takeover: None,
            }
        }
    }
}
