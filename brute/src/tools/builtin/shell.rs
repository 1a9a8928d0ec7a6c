//! `shell`: `bash -c` in its own process group, killed as a whole on timeout or
//! cancellation.

use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::tools::truncate::Truncation;
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};

/// Bytes of each stream kept at most (the output is cut further for the model, and
/// saved in full up to this size).
const MAX_CAPTURE: u64 = 16 * 1024 * 1024;

/// Arguments of `shell`.
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
/// if it is not 0; long outputs keep their tail. When the command times out, or the
/// call is cancelled, the whole process group is killed (children and grandchildren);
/// processes still running in the group when the command returns are killed too.
#[derive(Clone, Copy, Debug, Default)]
pub struct Shell;

/// Kills a process group when dropped.
struct GroupGuard(Option<i32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pid) = self.0.take() {
            // ESRCH (the group is gone) is the normal case.
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

async fn read_capped(stream: Option<impl AsyncRead + Unpin>) -> Vec<u8> {
    let mut out = Vec::new();
    if let Some(stream) = stream {
        let _ = stream.take(MAX_CAPTURE).read_to_end(&mut out).await;
    }
    out
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
        let cwd = cx.resolve(args.cwd.as_deref().unwrap_or("."))?;
        if !cwd.is_dir() {
            return Err(ToolError::failed(format!(
                "cwd `{}` is not a directory",
                args.cwd.as_deref().unwrap_or(".")
            )));
        }
        let secs = args.timeout.unwrap_or(300);
        let mut child = tokio::process::Command::new("bash")
            .arg("-c")
            .arg(&args.command)
            .current_dir(&cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| ToolError::failed(format!("cannot start bash: {e}")))?;
        let guard = GroupGuard(child.id().and_then(|id| i32::try_from(id).ok()));
        let stdout = tokio::spawn(read_capped(child.stdout.take()));
        let stderr = tokio::spawn(read_capped(child.stderr.take()));
        let status = tokio::time::timeout(Duration::from_secs(secs), child.wait()).await;
        // Kill what is left of the group: on timeout the command itself, otherwise
        // background processes that would keep the pipes open.
        drop(guard);
        let collect = |task: tokio::task::JoinHandle<Vec<u8>>| async move {
            match tokio::time::timeout(Duration::from_secs(2), task).await {
                Ok(Ok(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
                _ => String::new(),
            }
        };
        let (stdout, stderr) = (collect(stdout).await, collect(stderr).await);
        let mut out = stdout;
        if !stderr.is_empty() {
            out.push_str("\nSTDERR:\n");
            out.push_str(&stderr);
        }
        match status {
            Err(_) => {
                let mut message = format!("Command timed out after {secs}s: {}", args.command);
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
