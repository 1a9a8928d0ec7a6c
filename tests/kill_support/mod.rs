//! Test support for crash tests: a child process killed when dropped, and the kill
//! loop's round (wait for acknowledgements, SIGKILL, collect what was acknowledged).
//! Each test binary uses part of it.

#![allow(dead_code, clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use brute::Message;

/// A child process that is killed (SIGKILL) and reaped when dropped, so that a
/// failing assertion never leaves it running.
pub struct KillOnDrop(pub std::process::Child);

impl KillOnDrop {
    /// SIGKILL, then reap.
    pub fn kill(&mut self) {
        self.0.kill().unwrap();
        self.0.wait().unwrap();
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// One round of a kill test: spawns `command` (a child that prints `ack <message as
/// JSON>` for every message once it is durable), waits for `acks` acknowledgements,
/// sleeps `delay`, kills the child with SIGKILL, and returns every message it
/// acknowledged, those printed before the kill included. `round` names the round in a
/// failure.
pub fn kill_after_acks(
    command: &mut Command,
    acks: usize,
    delay: Duration,
    round: &str,
) -> Vec<Message> {
    let mut child = command
        .stdout(Stdio::piped())
        .spawn()
        .map(KillOnDrop)
        .unwrap();
    let mut stdout = BufReader::new(child.0.stdout.take().unwrap());
    let mut acked: Vec<Message> = Vec::new();
    let mut line = String::new();
    while acked.len() < acks {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "{round}: the child exited"
        );
        if let Some(json) = line.strip_prefix("ack ") {
            acked.push(serde_json::from_str(json.trim_end()).unwrap());
        }
    }
    std::thread::sleep(delay);
    child.kill(); // SIGKILL
    // Lines printed before the kill are acknowledged too.
    let mut rest = String::new();
    while stdout.read_line(&mut rest).unwrap() > 0 {
        if let Some(json) = rest.strip_prefix("ack ") {
            acked.push(serde_json::from_str(json.trim_end()).unwrap());
        }
        rest.clear();
    }
    acked
}

/// Spawns `command` and waits until it prints the line `signal` (a point it has
/// reached, such as "holding the lease"); the child is killed when dropped.
pub fn spawn_until(command: &mut Command, signal: &str) -> KillOnDrop {
    let mut child = command
        .stdout(Stdio::piped())
        .spawn()
        .map(KillOnDrop)
        .unwrap();
    let mut stdout = BufReader::new(child.0.stdout.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "the child exited before printing {signal:?}"
        );
        if line.trim_end() == signal {
            return child;
        }
    }
}

/// The name the test harness gives the test `test` of the module whose `module_path!()`
/// is `module`, for re-running it alone with `--exact`: the test binaries hold one module
/// per file, and the harness names a test by its path below the crate.
pub fn test_name(module: &str, test: &str) -> String {
    match module.split_once("::") {
        Some((_crate, path)) => format!("{path}::{test}"),
        None => test.to_string(),
    }
}
