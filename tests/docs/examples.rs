//! The numbered examples and the extras run offline and succeed (issue 14, item 3).
//!
//! Each example is compiled into this binary as a module (its own file, unchanged) and
//! its `run` is called with its scripted model, whatever `BRUTE_MODEL` or the API keys
//! of the environment say, so no test reaches the network. Each `run` checks its own
//! result (the check passes after the fix, the session remembered, nothing was
//! written by the read-only agent, the sub-agents overlapped, ...) and fails
//! otherwise. `.ci/run` also runs every example binary offline and checks its status.

#![allow(clippy::unwrap_used)]
// Each example declares `mod common;`, so its shared file is a module of each of them,
// as in the example binaries.
#![allow(clippy::duplicate_mod)]

use brute::providers::{AnyModel, ScriptedModel};

macro_rules! example {
    ($($name:ident => $path:literal,)*) => {$(
        #[allow(dead_code, unreachable_pub)]
        #[path = $path]
        mod $name;
    )*};
}

example! {
    ex01 => "../../examples/01_basic.rs",
    ex02 => "../../examples/02_fix_bug.rs",
    ex03 => "../../examples/03_sessions.rs",
    ex04 => "../../examples/04_custom_rules.rs",
    ex05 => "../../examples/05_multi_turn.rs",
    ex06 => "../../examples/06_read_only.rs",
    ex07 => "../../examples/07_sub_agents.rs",
    compaction => "../../examples/compaction.rs",
    custom_middleware => "../../examples/custom_middleware.rs",
    guarded => "../../examples/guarded.rs",
    handoff => "../../examples/handoff.rs",
}

fn scripted(script: fn(&brute::Env) -> brute::Message) -> AnyModel {
    ScriptedModel::from_fn(script).named("scripted").into()
}

#[tokio::test]
async fn ex01_basic_writes_and_reads_with_all_tools() {
    let root = tempfile::tempdir().unwrap();
    ex01::run(scripted(ex01::script), root.path())
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(root.path().join("hello.txt")).unwrap(),
        "hello from brute\n"
    );
}

#[tokio::test]
async fn ex02_fixes_the_bug_until_the_check_passes() {
    let root = tempfile::tempdir().unwrap();
    ex02::run(scripted(ex02::script), root.path())
        .await
        .unwrap();
    let lib = std::fs::read_to_string(root.path().join("lib.sh")).unwrap();
    assert!(lib.contains("$(( $1 + $2 ))"), "{lib}");
}

#[tokio::test]
async fn ex03_a_second_run_remembers_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("session.jsonl");
    ex03::run(scripted(ex03::script), &session).await.unwrap();
    // user, assistant, user, assistant: the system prompt is not part of the record.
    assert_eq!(
        std::fs::read_to_string(&session).unwrap().lines().count(),
        4
    );
}

#[tokio::test]
async fn ex04_the_rules_reach_the_model() {
    ex04::run(scripted(ex04::script)).await.unwrap();
}

#[tokio::test]
async fn ex05_the_third_turn_sees_the_first_two() {
    ex05::run(scripted(ex05::script)).await.unwrap();
}

#[tokio::test]
async fn ex06_the_read_only_agent_cannot_write() {
    let root = tempfile::tempdir().unwrap();
    ex06::run(scripted(ex06::script), root.path())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ex07_sub_agents_run_in_parallel() {
    let root = tempfile::tempdir().unwrap();
    ex07::run(
        scripted(ex07::lead_script),
        scripted(ex07::researcher_script),
        scripted(ex07::counter_script),
        root.path(),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn compaction_archives_what_it_dropped() {
    let dir = tempfile::tempdir().unwrap();
    compaction::run(scripted(compaction::script), dir.path())
        .await
        .unwrap();
    // Every archived message is one the session gave up, and the session still opens
    // with the first question (the sliding window keeps it).
    let archive = std::fs::read_to_string(dir.path().join("archive.jsonl")).unwrap();
    let session = std::fs::read_to_string(dir.path().join("session.jsonl")).unwrap();
    let kept: Vec<brute::Message> = session
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(kept[0].content, "Tell me one fact about Mercury.");
    assert!(!archive.is_empty());
    for line in archive.lines() {
        let archived: brute::Message = serde_json::from_str(line).unwrap();
        assert!(
            !kept.contains(&archived),
            "{archived:?} is both archived and kept"
        );
    }
}

#[tokio::test]
async fn custom_middleware_ends_the_turn_at_its_budget() {
    let root = tempfile::tempdir().unwrap();
    custom_middleware::run(scripted(custom_middleware::script), root.path())
        .await
        .unwrap();
}

#[tokio::test]
async fn guarded_falls_back_loads_the_skill_and_redacts_the_address() {
    let skills = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/skills");
    guarded::run(scripted(guarded::script), &skills, true)
        .await
        .unwrap();
}

#[tokio::test]
async fn handoff_billing_answers_and_the_session_names_it() {
    let dir = tempfile::tempdir().unwrap();
    handoff::run(
        scripted(handoff::triage_script),
        scripted(handoff::billing_script),
        &dir.path().join("session.jsonl"),
    )
    .await
    .unwrap();
}
