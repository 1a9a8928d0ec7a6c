//! The JSONL store's writer threads: blocking file work off the async runtime, with
//! group commit.
//!
//! A job has two phases: its work (read, write), which may leave a file to fsync, and
//! its finish (reply), which gets the fsync's result. A writer thread takes every job
//! waiting in the queue, runs all their work, makes all their files durable at once,
//! then runs all their finishes. On Linux, two or more files of one file system are
//! made durable by one `syncfs` (one journal commit and one cache flush for the whole
//! batch, where an fsync per file would cost a commit each); elsewhere, or for a
//! single file, each file is fsynced. Each turn still waits for its own data to be
//! durable before it goes on, so a message is stored before the next model call.

use std::fs::File;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread;

use tokio::sync::oneshot;

use crate::session::error::SessionError;

type Finish = Box<dyn FnOnce(io::Result<()>) + Send>;
type Job = Box<dyn FnOnce() -> (Option<File>, Finish) + Send>;

/// The most jobs one thread takes at once (so that one batch does not starve the
/// replies of its first jobs).
const MAX_BATCH: usize = 1024;

/// A set of writer threads sharing one queue.
#[derive(Debug)]
pub(crate) struct Pool {
    queue: Sender<Job>,
}

impl Pool {
    /// The pool of one JSONL store (and its clones): `BRUTE_SESSION_WRITERS` threads,
    /// 1 by default (fewer threads make bigger batches, and so fewer durability
    /// steps). The threads end when the last clone of the store is dropped. No pool is
    /// shared through the process: stores made apart batch apart.
    pub(crate) fn from_env() -> Arc<Pool> {
        let threads = std::env::var("BRUTE_SESSION_WRITERS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(1);
        Arc::new(Pool::new(threads))
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

    /// Runs `write` on a writer thread; the file it returns (if any) is made durable
    /// with the batch's; `finish` gets what `write` returned and that result, and its
    /// result is given back.
    pub(crate) fn run<W: Send + 'static, R: Send + 'static>(
        &self,
        write: impl FnOnce() -> (W, Option<File>) + Send + 'static,
        finish: impl FnOnce(W, io::Result<()>) -> R + Send + 'static,
    ) -> impl Future<Output = Result<R, SessionError>> + Send + 'static {
        let (reply, result) = oneshot::channel();
        let job: Job = Box::new(move || {
            let (written, sync) = write();
            let finish: Finish = Box::new(move |synced| {
                let _ = reply.send(finish(written, synced));
            });
            (sync, finish)
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

    /// Runs `work` on a writer thread, with nothing to make durable.
    pub(crate) fn run_plain<R: Send + 'static>(
        &self,
        work: impl FnOnce() -> R + Send + 'static,
    ) -> impl Future<Output = Result<R, SessionError>> + Send + 'static {
        self.run(move || (work(), None), |result, _| result)
    }
}

/// A writer thread: batches of jobs, all their work, one durability step, then all
/// their finishes.
fn work(jobs: &Mutex<Receiver<Job>>) {
    let mut batch = Vec::new();
    let mut files = Vec::new();
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
            if let Ok((file, finish)) = catch_unwind(AssertUnwindSafe(job)) {
                files.push(file);
                finishes.push(finish);
            }
        }
        let results = make_durable(&files);
        files.clear();
        for (finish, result) in finishes.drain(..).zip(results) {
            let _ = catch_unwind(AssertUnwindSafe(move || finish(result)));
        }
    }
}

/// Makes every file of `files` durable; one result per entry (`Ok` for `None`).
fn make_durable(files: &[Option<File>]) -> Vec<io::Result<()>> {
    let count = files.iter().flatten().count();
    #[cfg(target_os = "linux")]
    if count >= 2 {
        return syncfs_each_device(files);
    }
    let _ = count;
    files
        .iter()
        .map(|f| f.as_ref().map_or(Ok(()), File::sync_data))
        .collect()
}

/// One `syncfs` per file system of `files`: it writes back every dirty page and inode
/// of that file system, commits the journal and flushes the disk cache, and reports
/// write-back errors (Linux 5.8 and later), which is what an fsync of each file would
/// do, once for the whole batch.
#[cfg(target_os = "linux")]
fn syncfs_each_device(files: &[Option<File>]) -> Vec<io::Result<()>> {
    use std::collections::HashMap;
    use std::os::unix::fs::MetadataExt;

    let mut devices: HashMap<u64, Result<(), (io::ErrorKind, String)>> = HashMap::new();
    let mut of_file = Vec::with_capacity(files.len());
    for file in files {
        let Some(file) = file else {
            of_file.push(None);
            continue;
        };
        match file.metadata() {
            Ok(meta) => {
                let device = meta.dev();
                devices.entry(device).or_insert_with(|| {
                    nix::unistd::syncfs(file).map_err(|e| {
                        let e = io::Error::from(e);
                        (e.kind(), e.to_string())
                    })
                });
                of_file.push(Some(Ok(device)));
            }
            // Without its device, the file is fsynced on its own.
            Err(_) => of_file.push(Some(Err(file.sync_data()))),
        }
    }
    of_file
        .into_iter()
        .map(|entry| match entry {
            None => Ok(()),
            Some(Err(own)) => own,
            Some(Ok(device)) => match &devices[&device] {
                Ok(()) => Ok(()),
                Err((kind, message)) => Err(io::Error::new(*kind, message.clone())),
            },
        })
        .collect()
}
