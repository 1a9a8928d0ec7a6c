//! Memory across rounds of durable turns: resident memory after the last of ten
//! rounds of 1,000 turns stays within 10 % of what it was after the first round, so
//! nothing a turn leaves behind accumulates (sessions, leases, listeners, pools).

#![allow(clippy::unwrap_used)]

use brute::middleware::{SessionLog, SystemPrompt};
use brute::providers::ScriptedModel;
use brute::session::{JsonlStore, SessionId};
use brute::{Message, brute_agent};

/// This process's resident memory, in bytes (Linux: `/proc/self/statm`).
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

#[test]
fn resident_memory_is_flat_across_rounds_of_durable_turns() {
    const ROUNDS: usize = 10;
    const TURNS: usize = 1_000;
    const SESSIONS: usize = 50;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // On a memory file system where there is one: the turns still take every
    // durability step (fsync included), which then costs no disk time.
    let shm = std::path::Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let store = JsonlStore::new(dir.path());
    let model =
        ScriptedModel::from_fn(|env| Message::assistant(format!("reply {}", env.messages.len())));
    let agent = brute_agent! {
        use SessionLog { store: store.clone() };
        use SystemPrompt { prompt: "You are terse." };
        run model;
    };
    let mut after = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS {
        runtime.block_on(async {
            for turn in 0..TURNS {
                // Each round starts its sessions anew, so their files stay small and
                // what is measured is what a turn leaves behind.
                let session = format!("r{round}-s{}", turn % SESSIONS);
                let mut env = agent.env();
                env.extensions.insert(SessionId::from(session));
                env.messages.push(Message::user(format!("turn {turn}")));
                agent.turn(env).await.unwrap();
            }
        });
        after.push(resident_bytes());
    }
    eprintln!(
        "resident KiB after each round: {:?}",
        after.iter().map(|b| b / 1024).collect::<Vec<_>>()
    );
    let first = after[0] as f64;
    let last = after[ROUNDS - 1] as f64;
    assert!(
        last <= first * 1.10,
        "resident memory grew from {:.1} MiB after the first round to {:.1} MiB after the last: {:?}",
        first / 1048576.0,
        last / 1048576.0,
        after.iter().map(|b| b / 1024).collect::<Vec<_>>()
    );
}
