//! The JSONL store's writer threads: blocking file work off the async runtime, with
//! group commit.
//!
//! A job has two phases: the work (read, write) and its finish (fsync, reply). A
//! writer thread takes every job waiting in the queue, runs all their work, then all
//! their finishes: the writes of many concurrent turns reach the disk before the first
//! fsync, so on a journaling file system the first fsync commits them all and the
//! others find little left to do. Each turn still waits for its own fsync before it
//! goes on, so a message is durable before the next model call.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;

use tokio::sync::oneshot;

use super::error::SessionError;

type Finish = Box<dyn FnOnce() + Send>;
type Job = Box<dyn FnOnce() -> Finish + Send>;

/// The most jobs one thread takes at once (so that one batch does not starve the
/// replies of its first jobs).
const MAX_BATCH: usize = 512;

/// A set of writer threads sharing one queue.
#[derive(Debug)]
pub(crate) struct Pool {
    queue: Sender<Job>,
}

impl Pool {
    /// The pool shared by every JSONL store of the process (created on first use).
    pub(crate) fn shared() -> Arc<Pool> {
        static SHARED: OnceLock<Arc<Pool>> = OnceLock::new();
        SHARED.get_or_init(|| Arc::new(Pool::new(8))).clone()
    }

    /// A pool of `threads` writer threads.
    pub(crate) fn new(threads: usize) -> Pool {
        let (queue, jobs) = mpsc::channel::<Job>();
        let jobs = Arc::new(Mutex::new(jobs));
        for n in 0..threads.max(1) {
            let jobs = jobs.clone();
            // A pool that cannot start a thread has fewer; with none, every job fails
            // with `WriterGone`.
            let _ = thread::Builder::new()
                .name(format!("brute-session-writer-{n}"))
                .spawn(move || work(&jobs));
        }
        Pool { queue }
    }

    /// Runs `write` then `finish` on a writer thread (see the module docs), and gives
    /// back what `finish` returns.
    pub(crate) fn run<W: Send + 'static, R: Send + 'static>(
        &self,
        write: impl FnOnce() -> W + Send + 'static,
        finish: impl FnOnce(W) -> R + Send + 'static,
    ) -> impl Future<Output = Result<R, SessionError>> + Send + 'static {
        let (reply, result) = oneshot::channel();
        let job: Job = Box::new(move || {
            let written = write();
            Box::new(move || {
                let _ = reply.send(finish(written));
            })
        });
        let sent = self.queue.send(job).is_ok();
        async move {
            if !sent {
                return Err(SessionError::WriterGone { store: "jsonl" });
            }
            result
                .await
                .map_err(|_| SessionError::WriterGone { store: "jsonl" })
        }
    }
}

/// A writer thread: batches of jobs, all their work, then all their finishes.
fn work(jobs: &Mutex<Receiver<Job>>) {
    let mut batch = Vec::new();
    let mut finishes = Vec::new();
    loop {
        {
            let Ok(queue) = jobs.lock() else { return };
            let Ok(first) = queue.recv() else { return };
            batch.push(first);
            while batch.len() < MAX_BATCH {
                match queue.try_recv() {
                    Ok(job) => batch.push(job),
                    Err(_) => break,
                }
            }
        }
        // A panicking job drops its reply (its turn sees `WriterGone`); the thread
        // goes on with the others.
        for job in batch.drain(..) {
            if let Ok(finish) = catch_unwind(AssertUnwindSafe(job)) {
                finishes.push(finish);
            }
        }
        for finish in finishes.drain(..) {
            let _ = catch_unwind(AssertUnwindSafe(finish));
        }
    }
}
