//! `shell`: `bash -c` in its own process group, with everything it started killed when

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::tools::error::quoted;
use crate::tools::truncate::Truncation;
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};

/// Bytes of each stream kept at most: the last ones (the output is cut further for the
/// model, and saved in full up to this size). Output past it is read and dropped, so
/// the command is never stopped by a full or closed pipe.
pub(crate) const MAX_CAPTURE: usize = 16 * 1024 * 1024;

/// The environment variable that marks the processes of one call.
const MARKER: &str = "BRUTE_SHELL_CALL";

/// Arguments of `shell`.
///
/// it ends, times out or is cancelled.
///
/// Finding what a command started: the process group catches children and
/// grandchildren that stay in it. A process that leaves the group (`setsid`, a daemon
/// that double-forks) is found by a marker instead: the command runs with
/// `BRUTE_SHELL_CALL=<token>` in its environment, which every descendant inherits, and
/// when the command is done every process whose environment holds the token is killed
/// (read from `/proc/<pid>/environ`). This needs no privilege and changes nothing in
/// the rest of the process (a child subreaper would make this process the parent of
/// every orphan of the application, and a cgroup needs a delegated hierarchy).
///
/// The limit: a descendant that leaves the process group *and* drops the marker from
/// its environment (`env -i`, a program that clears it, one started by another
/// service) survives; without `/proc` (outside Linux) only the process group is killed.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ShellArgs {
    /// The command, run with `bash -c`.
    pub command: String,
    /// The working directory, relative to the project root (default: the root).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Seconds before the command and everything it started are killed (default 300).
    #[serde(default)]
    pub timeout: Option<u64>,
}

/// `shell`: runs a command with `bash -c` in the project, in its own process group.
///
/// The output is stdout, then `STDERR:` and stderr if there is any, then the exit code
/// if it is not 0; long outputs keep their tail, and a stream longer than 16 MiB is
/// drained to its end and says `[output truncated at 16777216 bytes ..]`. When the
/// command ends, times out, or the call is cancelled, every process it started is
/// killed: its process group and, found by a marker in their environment, descendants
/// that left the group.
///
/// The working directory is opened beneath the root (see
/// [`Sandbox`](crate::tools::Sandbox)); the command itself is not confined.
#[derive(Clone, Copy, Debug, Default)]
pub struct Shell;

/// Kills a process group, and the processes carrying the call's marker, when dropped.
struct Reaper {
    group: Option<i32>,
    marker: String,
}

impl Drop for Reaper {
    fn drop(&mut self) {
        if let Some(pid) = self.group.take() {
            // ESRCH (the group is gone) is the normal case.
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        }
        kill_marked(&self.marker);
    }
}

/// Kills every process whose environment holds `marker` (`NAME=token`); a few passes,
/// for processes that forked while the previous pass ran.
fn kill_marked(marker: &str) {
    let needle = marker.as_bytes();
    for _ in 0..3 {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return;
        };
        let mut killed = 0;
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok())
            else {
                continue;
            };
            let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
                continue;
            };
            if environ.split(|b| *b == 0).any(|var| var == needle)
                && kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok()
            {
                killed += 1;
            }
        }
        if killed == 0 {
            return;
        }
    }
}

/// A token no other call uses.
fn token() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    format!("{}-{:016x}", std::process::id(), hasher.finish())
}

/// One stream, read to its end: the last [`MAX_CAPTURE`] bytes and how many were
/// dropped before them.
async fn drain(stream: Option<impl AsyncRead + Unpin>) -> (Vec<u8>, u64) {
    let mut kept = Vec::new();
    let mut dropped = 0u64;
    let Some(mut stream) = stream else {
        return (kept, dropped);
    };
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                kept.extend_from_slice(&buf[..n]);
                // Amortised: cut back to the cap once the buffer holds twice as much.
                if kept.len() >= 2 * MAX_CAPTURE {
                    let excess = kept.len() - MAX_CAPTURE;
                    kept.drain(..excess);
                    dropped += excess as u64;
                }
            }
        }
    }
    if kept.len() > MAX_CAPTURE {
        let excess = kept.len() - MAX_CAPTURE;
        kept.drain(..excess);
        dropped += excess as u64;
    }
    (kept, dropped)
}

/// The text of a drained stream, saying when its start was dropped.
fn text_of((bytes, dropped): (Vec<u8>, u64)) -> String {
    let text = String::from_utf8_lossy(&bytes);
    if dropped == 0 {
        return text.into_owned();
    }
    format!(
        "[output truncated at {MAX_CAPTURE} bytes: the first {dropped} bytes are not shown]\n{text}"
    )
}

/// The working directory as the child opens it: the directory handle opened beneath
/// the root, through `/proc/self/fd` (so a swap of the path after the check cannot
/// move it), or the checked path where `/proc` is missing.
fn working_dir(handle: &cap_std::fs::Dir, checked: &Path) -> PathBuf {
    let proc_fd = PathBuf::from(format!("/proc/self/fd/{}", handle.as_raw_fd()));
    if proc_fd.is_dir() {
        proc_fd
    } else {
        checked.to_path_buf()
    }
}

impl Tool for Shell {
    type Args = ShellArgs;

    fn name(&self) -> &str {
        "shell"
    }

    fn description(&self) -> &str {
        "Run a shell command (bash -c) in the project directory. Returns stdout, stderr and the exit code."
    }

    fn truncation(&self) -> Truncation {
        Truncation::Tail
    }

    async fn call(&self, args: ShellArgs, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let raw_cwd = args.cwd.as_deref().unwrap_or(".");
        let cwd = cx.resolve(raw_cwd)?;
        let handle = cx.sandbox().open_dir(&cwd).map_err(|e| {
            ToolError::failed(format!("cwd `{}` is not a directory: {e}", quoted(raw_cwd)))
        })?;
        let secs = args.timeout.unwrap_or(300);
        let marker = format!("{MARKER}={}", token());
        let mut child = tokio::process::Command::new("bash")
            .arg("-c")
            .arg(&args.command)
            .current_dir(working_dir(&handle, &cwd))
            .env(MARKER, &marker[MARKER.len() + 1..])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| ToolError::failed(format!("cannot start bash: {e}")))?;
        drop(handle);
        let reaper = Reaper {
            group: child.id().and_then(|id| i32::try_from(id).ok()),
            marker,
        };
        let stdout = tokio::spawn(drain(child.stdout.take()));
        let stderr = tokio::spawn(drain(child.stderr.take()));
        let status = tokio::time::timeout(Duration::from_secs(secs), child.wait()).await;
        // Kill what is left: on timeout the command itself, otherwise background
        // processes that would keep the pipes open.
        drop(reaper);
        let collect = |task: tokio::task::JoinHandle<(Vec<u8>, u64)>| async move {
            match tokio::time::timeout(Duration::from_secs(2), task).await {
                Ok(Ok(drained)) => text_of(drained),
                _ => String::new(),
            }
        };
        let (stdout, stderr) = futures_util::join!(collect(stdout), collect(stderr));
        let mut out = stdout;
        if !stderr.is_empty() {
            out.push_str("\nSTDERR:\n");
            out.push_str(&stderr);
        }
        match status {
            Err(_) => {
                let mut message =
                    format!("Command timed out after {secs}s: {}", quoted(&args.command));
                if !out.is_empty() {
                    message.push_str("\nOutput before the timeout:\n");
                    message.push_str(&out);
                }
                Err(ToolError::failed(message))
            }
            Ok(Err(e)) => Err(ToolError::failed(format!("cannot wait for bash: {e}"))),
            Ok(Ok(status)) => {
                match status.code() {
                    Some(0) => {}
                    Some(code) => out.push_str(&format!("\n[exit code: {code}]")),
                    None => out.push_str("\n[killed by a signal]"),
                }
                if out.is_empty() {
                    out.push_str("(no output)");
                }
                Ok(out.into())
            }
        }
    }
}
