//! A reply with a single tool call whose id is empty (some providers and local
//! servers send one): the call gets an id before it is stored or run, its result
//! answers exactly that id, and the session stays a valid history over several such
//! turns (ids are unique within a reply, as `check_history` asks; two turns may give
//! their calls the same id). Written against the public API only, so it holds whichever layer gives the
//! id.

#![allow(clippy::unwrap_used)]

use crate::session_support;

use std::path::PathBuf;
use std::time::Duration;

use brute::session::check_history;
use brute::tools::{DefaultToolPipeline, ToolError};
use brute::{
    Message, Role, ToolCall, brute_agent,
    middleware::{Loop, MaxIterations, SessionLog},
    providers::ScriptedModel,
};
use session_support::{AnyStore, temp_dir};

/// Returns its text.
#[brute::tool]
async fn echo(
    /// The text.
    text: String,
) -> Result<String, ToolError> {
    Ok(text)
}

/// Calls `echo` once, with an empty id, after each prompt; answers after the result.
fn model() -> ScriptedModel {
    ScriptedModel::from_fn(|env| match env.messages.last() {
        Some(m) if m.role == Role::Tool => Message::assistant(format!("got {}", m.content)),
        _ => Message::tool_calls(
            "",
            vec![ToolCall::new(
                "",
                "echo",
                serde_json::json!({ "text": "one call" }),
            )],
        ),
    })
}

/// Runs `test` on a current-thread runtime, with a JSONL store in a temporary folder
/// and a temporary folder for the tools' root.
fn with_store<F: Future<Output = ()>>(test: impl FnOnce(AnyStore, PathBuf) -> F) {
    let dir = temp_dir();
    let root = temp_dir();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let store = AnyStore::open(
                "jsonl",
                dir.path().to_str().unwrap(),
                Duration::from_secs(60),
            )
            .await;
            test(store, root.path().to_path_buf()).await;
        });
}

#[test]
fn a_single_tool_call_with_an_empty_id_gets_an_id_its_result_answers() {
    with_store(|store, root| async move {
        let agent = brute_agent! {
            use SessionLog { store: store.store(), session: "ids" };
            use Loop::ToolResult;
            use MaxIterations { max: 4 };
            use DefaultToolPipeline { tools: (Echo,), root: root.clone() };
            run model();
        };
        for prompt in ["first", "second", "third"] {
            let outcome = agent.start(prompt).await.unwrap();
            assert_eq!(outcome.text(), Some("got one call"));
            // In the turn's own messages, as in the store.
            let calls: Vec<&ToolCall> = outcome
                .env
                .messages
                .iter()
                .flat_map(|m| &m.tool_calls)
                .collect();
            let last = calls.last().unwrap();
            assert!(!last.id.is_empty(), "{prompt}: the call kept its empty id");
            let result = outcome.env.messages.iter().rev().nth(1).unwrap();
            assert_eq!(result.role, Role::Tool);
            assert_eq!(result.tool_call_id.as_deref(), Some(last.id.as_str()));
            assert_eq!(result.content, "one call");
        }
        let stored = store.load("ids").await;
        assert_eq!(check_history(&stored), [], "{stored:#?}");
        let ids: Vec<&str> = stored
            .iter()
            .flat_map(|m| &m.tool_calls)
            .map(|c| c.id.as_str())
            .collect();
        assert_eq!(ids.len(), 3);
        assert!(ids.iter().all(|id| !id.is_empty()), "{ids:?}");
        let results: Vec<&str> = stored
            .iter()
            .filter_map(|m| m.tool_call_id.as_deref())
            .collect();
        assert_eq!(results, ids, "every result answers its own call");
    });
}

/// Calls `echo` twice per turn, always with the id `same`: once per reply, over two
/// replies of a turn and over turns of a session. Every stored call must still get an
/// id of its own, and every result must answer its own call, across replies and across
/// turns (the check reads the session's index of ids, not a scan of the history).
#[test]
fn an_id_repeated_across_replies_and_turns_is_refused_and_renamed() {
    with_store(|store, root| async move {
        let model = ScriptedModel::from_fn(|env| {
            let results = env
                .messages
                .iter()
                .rev()
                .take_while(|m| m.role != Role::User)
                .filter(|m| m.role == Role::Tool)
                .count();
            if results < 2 {
                Message::tool_calls(
                    "",
                    vec![ToolCall::new(
                        "same",
                        "echo",
                        serde_json::json!({ "text": format!("call {results}") }),
                    )],
                )
            } else {
                Message::assistant("done")
            }
        });
        let agent = brute_agent! {
            use SessionLog { store: store.store(), session: "same" };
            use Loop::ToolResult;
            use MaxIterations { max: 5 };
            use DefaultToolPipeline { tools: (Echo,), root: root.clone() };
            run model;
        };
        for prompt in ["first", "second", "third"] {
            let outcome = agent.start(prompt).await.unwrap();
            assert_eq!(outcome.text(), Some("done"), "{prompt}");
        }
        let stored = store.load("same").await;
        assert_eq!(check_history(&stored), [], "{stored:#?}");
        let mut ids: Vec<&str> = stored
            .iter()
            .flat_map(|m| &m.tool_calls)
            .map(|c| c.id.as_str())
            .collect();
        assert_eq!(ids.len(), 6, "{ids:?}");
        assert_eq!(ids[0], "same", "the first use of an id keeps it");
        let results: Vec<&str> = stored
            .iter()
            .filter_map(|m| m.tool_call_id.as_deref())
            .collect();
        assert_eq!(results, ids, "every result answers its own call");
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 6, "an id is used twice: {ids:?}");
    });
}

/// A reply whose call id is larger than any provider sends (10 KiB) is refused as too
/// large, naming the tool and the cap, and nothing of it is stored: the id would
/// otherwise be kept twice (call and result) and sent back on every later call.
#[test]
fn an_id_longer_than_the_cap_is_refused_before_it_is_stored() {
    with_store(|store, root| async move {
        let model = ScriptedModel::from_fn(|_env| {
            Message::tool_calls(
                "",
                vec![ToolCall::new(
                    "x".repeat(10 * 1024),
                    "echo",
                    serde_json::json!({ "text": "never" }),
                )],
            )
        });
        let agent = brute_agent! {
            use SessionLog { store: store.store(), session: "long" };
            use Loop::ToolResult;
            use MaxIterations { max: 4 };
            use DefaultToolPipeline { tools: (Echo,), root: root.clone() };
            run model;
        };
        let Err(error) = agent.start("hi").await else {
            panic!("a reply with a 10 KiB call id was accepted");
        };
        let text = error.to_string();
        assert!(
            matches!(
                &error,
                brute::Error::Model(brute::ModelError::TooLarge { limit: 256, .. })
            ),
            "{error:?}"
        );
        assert!(
            text.contains("`echo`") && text.contains("10240 bytes"),
            "{text}"
        );
        let stored = store.load("long").await;
        assert!(
            stored.iter().all(|m| m.tool_calls.is_empty()),
            "the call was stored: {stored:?}"
        );
    });
}
