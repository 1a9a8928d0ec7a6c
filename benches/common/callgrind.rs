//! What the single-purpose callgrind benches share (`turn_instructions`,
//! `guard_stream`): a loop of turns callgrind counts alone, the bench binary run under
//! callgrind once per version, and the machine's load for the record.

use std::future::Future;
use std::process::Command;

/// Runs `turns` turns, each the future `turn` makes. Not inlined, so that callgrind
/// counts exactly this (`--toggle-collect='*count_turns*'`).
#[inline(never)]
pub fn count_turns<F: Future>(
    runtime: &tokio::runtime::Runtime,
    turns: u32,
    mut turn: impl FnMut() -> F,
) {
    runtime.block_on(async {
        for _ in 0..turns {
            drop(std::hint::black_box(turn().await));
        }
    });
}

/// Instructions per turn of `version` (the bench binary's argument), this binary run
/// under callgrind, which runs `turns` turns of it; `None` without valgrind.
pub fn instructions_per_turn(version: &str, turns: u32) -> Option<f64> {
    let exe = std::env::current_exe().ok()?;
    let output = Command::new("valgrind")
        .args([
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            "--toggle-collect=*count_turns*",
        ])
        .arg(exe)
        .arg(version)
        .output()
        .ok()?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let collected = stderr.lines().find_map(|l| {
        l.split_once("Collected :")
            .map(|(_, n)| n.trim().to_string())
    })?;
    Some(collected.parse::<f64>().ok()? / f64::from(turns))
}

/// The load average of the last 1, 5 and 15 minutes.
pub fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_string())
}
