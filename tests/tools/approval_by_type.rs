//! The approval policy of `DefaultToolPipeline` is a type: the default, `AllowAll`, is
//! zero-sized and never asks; a policy type of one's own decides every call; and a
//! policy that says it never asks (`MAY_ASK = false`) but answers `Ask` anyway has
//! that call denied, never dropped (no call is left without a result).
#![allow(clippy::unwrap_used)]

use brute::tools::{AllowAll, ApprovalPolicy, Decision, ToolError};
use brute::{
    Message, Role, StopReason, ToolCall, brute_agent, middleware::Loop, providers::ScriptedModel,
    tool, tools::DefaultToolPipeline,
};
use serde_json::json;

/// Returns its label.
#[tool]
async fn echo(
    /// What to return.
    label: String,
) -> Result<String, ToolError> {
    Ok(label)
}

fn call(id: &str, label: &str) -> ToolCall {
    ToolCall::new(id, "echo", json!({ "label": label }))
}

/// `(call id, content)` of every tool result, in order.
fn results(messages: &[Message]) -> Vec<(String, String)> {
    messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| {
            let id = m.tool_call_id.clone().unwrap_or_default();
            (id, m.content.clone())
        })
        .collect()
}

/// Denies the calls whose label is "no", allows the others; may ask (the default).
struct DenyNo;

impl ApprovalPolicy for DenyNo {
    fn decide(&self, call: &ToolCall) -> Decision {
        if call.arguments["label"] == "no" {
            Decision::Deny("labels saying no are refused".into())
        } else {
            Decision::Allow
        }
    }
}

/// Says it never asks, and answers `Ask` for every call all the same.
struct AsksAnyway;

impl ApprovalPolicy for AsksAnyway {
    const MAY_ASK: bool = false;

    fn decide(&self, _call: &ToolCall) -> Decision {
        Decision::Ask
    }
}

#[test]
fn the_default_policy_is_zero_sized_and_never_asks() {
    assert_eq!(std::mem::size_of::<AllowAll>(), 0);
    const { assert!(!AllowAll::MAY_ASK) };
    assert_eq!(AllowAll.decide(&call("c", "x")), Decision::Allow);
}

#[tokio::test]
async fn a_policy_type_of_ones_own_decides_each_call() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::per_turn([
        Message::tool_calls("", vec![call("a", "yes"), call("b", "no")]),
        Message::tool_calls("", vec![call("c", "no")]),
        Message::assistant("done"),
    ]);
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: (Echo,), root: dir.path(), approval: DenyNo };
        run model;
    };
    let outcome = agent.start("go").await.unwrap();
    let denied = "Error: tool `echo`: the call was denied: labels saying no are refused";
    assert_eq!(
        results(&outcome.env.messages),
        [
            ("a".to_string(), "yes".to_string()),
            ("b".to_string(), denied.to_string()),
            ("c".to_string(), denied.to_string()),
        ]
    );
    assert_eq!(outcome.stop, StopReason::Completed);
}

#[tokio::test]
async fn an_ask_from_a_policy_that_never_asks_is_denied_not_dropped() {
    let dir = tempfile::tempdir().unwrap();
    // Two calls in one reply (the batch path), then one (the single-call path).
    let model = ScriptedModel::per_turn([
        Message::tool_calls("", vec![call("a", "one"), call("b", "two")]),
        Message::tool_calls("", vec![call("c", "three")]),
        Message::assistant("done"),
    ]);
    let agent = brute_agent! {
        use Loop::ToolResult;
        use DefaultToolPipeline { tools: (Echo,), root: dir.path(), approval: AsksAnyway };
        run model;
    };
    let outcome = agent.start("go").await.unwrap();
    let denied = "Error: tool `echo`: the call was denied: it waits for a person's approval";
    let got = results(&outcome.env.messages);
    let ids: Vec<&str> = got.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"], "every call has its result");
    assert!(got.iter().all(|(_, text)| text == denied), "{got:?}");
    // Nothing paused: the policy said it never asks, so no call waits for a person.
    assert_eq!(outcome.stop, StopReason::Completed);
    assert!(outcome.env.messages.iter().all(|m| !m.awaiting_approval()));
}
