//! The stdio server's child process: started in a process group of its own, and the
//! whole group killed when the tools are dropped.

use std::process::Stdio;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use process_wrap::tokio::{CommandWrap, ProcessGroup};
use rmcp::transport::TokioChildProcess;

use crate::error::McpError;

/// A process group that is killed (`SIGKILL` to every member) when this is dropped:
/// the server, and whatever it started (`npx` starts `node`, shells start pipelines).
#[derive(Debug)]
pub(crate) struct KillGroup(Pid);

impl KillGroup {
    /// The group's id (the leader's process id).
    pub(crate) fn id(&self) -> u32 {
        self.0.as_raw().unsigned_abs()
    }
}

impl Drop for KillGroup {
    fn drop(&mut self) {
        // Synchronous, so it happens even when no runtime is left to run rmcp's own
        // asynchronous kill. A group that is already gone is not an error.
        let _ = killpg(self.0, Signal::SIGKILL);
    }
}

/// Starts `command` as the leader of a new process group, its stdin and stdout the
/// transport, its stderr inherited (servers log there).
pub(crate) fn spawn(
    server: &str,
    command: tokio::process::Command,
) -> Result<(TokioChildProcess, KillGroup), McpError> {
    let program = command
        .as_std()
        .get_program()
        .to_string_lossy()
        .into_owned();
    let spawn_error = |source| McpError::Spawn {
        server: server.to_string(),
        command: program.clone(),
        source,
    };
    let mut wrap = CommandWrap::from(command);
    wrap.wrap(ProcessGroup::leader());
    let (process, _stderr) = TokioChildProcess::builder(wrap)
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(spawn_error)?;
    let pid = process
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .ok_or_else(|| spawn_error(std::io::Error::other("the process has no id")))?;
    Ok((process, KillGroup(Pid::from_raw(pid))))
}
