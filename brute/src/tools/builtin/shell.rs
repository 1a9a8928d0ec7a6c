//! `shell`: `bash -c` in its own process group, with everything it started killed when

use std::future::{Future, poll_fn};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::pin::pin;
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
/// drained to its end, keeps its last 16 MiB and ends with a note saying how many
/// bytes were dropped (the pipeline's own cut then says what it dropped of the rest).
/// Output read before a timeout is returned with the timeout error; a process that
/// escaped the kill and still holds the output open is not waited for (a quarter of a
/// second at most, never past the timeout), and the result says so. When the
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

/// A token no other call uses: the process id and 64 random bits (std's `RandomState`
/// is seeded randomly per thread and differs on every call).
fn token() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    format!("{}-{:016x}", std::process::id(), hasher.finish())
}

/// How long the output of a command that ended is still read when a process it started
/// and that could not be killed (it left the group and dropped the marker) holds the
/// pipes open; never past the call's own timeout.
const ESCAPED_GRACE: Duration = Duration::from_millis(250);

/// What was read of one stream: the last [`MAX_CAPTURE`] bytes and how many were
/// dropped before them. Kept outside the reading future, so that what was read is
/// there whenever reading stops (the end, a timeout, a process still holding the pipe).
#[derive(Default)]
struct Capture {
    kept: Vec<u8>,
    dropped: u64,
}

impl Capture {
    fn push(&mut self, bytes: &[u8]) {
        self.kept.extend_from_slice(bytes);
        // Amortised: cut back to the cap once the buffer holds twice as much.
        if self.kept.len() >= 2 * MAX_CAPTURE {
            self.cap();
        }
    }

    fn cap(&mut self) {
        if self.kept.len() > MAX_CAPTURE {
            let excess = self.kept.len() - MAX_CAPTURE;
            self.kept.drain(..excess);
            self.dropped += excess as u64;
        }
    }

    /// The text read, and a note when its start was dropped (`what` names the stream).
    fn finish(mut self, what: &str) -> (String, Option<String>) {
        self.cap();
        let text = String::from_utf8_lossy(&self.kept).into_owned();
        let note = (self.dropped > 0).then(|| {
            format!(
                "[{what}: {} bytes, the first {} dropped: only the last {MAX_CAPTURE} bytes are captured]",
                self.dropped + self.kept.len() as u64,
                self.dropped,
            )
        });
        (text, note)
    }
}

/// Reads `stream` into `into` to its end (or a read error).
async fn drain(stream: Option<impl AsyncRead + Unpin>, into: &mut Capture) {
    let Some(mut stream) = stream else { return };
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => into.push(&buf[..n]),
        }
    }
}

/// How a command's run ended.
enum Ended {
    /// It exited, and its output was read to the end.
    Exited(std::process::ExitStatus),
    /// It exited, but a process it started still held its output open after
    /// [`ESCAPED_GRACE`]: what that process wrote later is not shown.
    ExitedHeld(std::process::ExitStatus),
    /// Waiting for it failed.
    WaitFailed(std::io::Error),
    /// Its timeout ran out.
    TimedOut,
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
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        let (mut out, mut err) = (Capture::default(), Capture::default());
        let ended = {
            let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
            let mut drains = pin!(futures_util::future::join(
                drain(stdout, &mut out),
                drain(stderr, &mut err)
            ));
            let mut drained = false;
            // The command and its output together, until the command exits.
            let waited = {
                let mut wait = pin!(child.wait());
                let both = poll_fn(|cx| {
                    if !drained && drains.as_mut().poll(cx).is_ready() {
                        drained = true;
                    }
                    wait.as_mut().poll(cx)
                });
                tokio::time::timeout_at(deadline, both).await
            };
            // Kill what is left: on timeout the command itself, otherwise background
            // processes that would keep the pipes open.
            drop(reaper);
            match waited {
                Err(_elapsed) => Ended::TimedOut,
                Ok(Err(e)) => Ended::WaitFailed(e),
                Ok(Ok(status)) if drained => Ended::Exited(status),
                Ok(Ok(status)) => {
                    // What the killed processes wrote is read at once; a process that
                    // escaped the kill is not waited for past the grace or the timeout.
                    let until = deadline.min(tokio::time::Instant::now() + ESCAPED_GRACE);
                    match tokio::time::timeout_at(until, drains).await {
                        Ok(((), ())) => Ended::Exited(status),
                        Err(_elapsed) => Ended::ExitedHeld(status),
                    }
                }
            }
        };
        let (mut text, out_note) = out.finish("stdout");
        let (stderr, err_note) = err.finish("stderr");
        if !stderr.is_empty() {
            text.push_str("\nSTDERR:\n");
            text.push_str(&stderr);
        }
        // Notes last: a long output keeps its tail, so they survive the cut.
        let notes: Vec<String> = [out_note, err_note].into_iter().flatten().collect();
        let held = "[a process the command started still holds its output open: what it writes from now on is not shown]";
        match ended {
            Ended::TimedOut => {
                let mut message =
                    format!("Command timed out after {secs}s: {}", quoted(&args.command));
                if !text.is_empty() {
                    message.push_str("\nOutput before the timeout:\n");
                    message.push_str(&text);
                }
                for note in notes {
                    message.push('\n');
                    message.push_str(&note);
                }
                Err(ToolError::failed(message))
            }
            Ended::WaitFailed(e) => Err(ToolError::failed(format!("cannot wait for bash: {e}"))),
            Ended::Exited(status) | Ended::ExitedHeld(status) => {
                match status.code() {
                    Some(0) => {}
                    Some(code) => text.push_str(&format!("\n[exit code: {code}]")),
                    None => text.push_str("\n[killed by a signal]"),
                }
                if text.is_empty() {
                    text.push_str("(no output)");
                }
                if matches!(ended, Ended::ExitedHeld(_)) {
                    text.push('\n');
                    text.push_str(held);
                }
                for note in notes {
                    text.push('\n');
                    text.push_str(&note);
                }
                Ok(text.into())
            }
        }
    }
}
