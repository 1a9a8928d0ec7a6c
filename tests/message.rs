//! The message format: the seed's sample line both ways, and a lossless round trip of
//! arbitrary messages.
#![allow(clippy::unwrap_used)]

use brute::{Message, Role, ToolCall};
use proptest::prelude::*;
use serde_json::{Value, json};

const SEED_LINE: &str = r#"{"role":"assistant","content":"","tool_calls":[{"id":"tc1","name":"shell","arguments":{"command":"ls"}}]}"#;

#[test]
fn the_seed_line_loads_and_serialises_back_byte_for_byte() {
    let message: Message = serde_json::from_str(SEED_LINE).unwrap();
    assert_eq!(
        message,
        Message::tool_calls(
            "",
            vec![ToolCall::new("tc1", "shell", json!({"command": "ls"}))]
        )
    );
    assert_eq!(serde_json::to_string(&message).unwrap(), SEED_LINE);
}

#[test]
fn tool_results_carry_their_call_id() {
    let line = serde_json::to_string(&Message::tool_result("tc1", "a.txt")).unwrap();
    assert_eq!(
        line,
        r#"{"role":"tool","content":"a.txt","tool_call_id":"tc1"}"#
    );
    assert_eq!(
        serde_json::from_str::<Message>(&line)
            .unwrap()
            .tool_call_id
            .as_deref(),
        Some("tc1")
    );
}

#[test]
fn a_line_without_content_loads_with_empty_content() {
    let message: Message = serde_json::from_str(r#"{"role":"user"}"#).unwrap();
    assert_eq!(message, Message::user(""));
}

#[test]
fn an_unknown_role_is_an_error_naming_it() {
    let err = serde_json::from_str::<Message>(r#"{"role":"robot","content":"x"}"#).unwrap_err();
    assert!(err.to_string().contains("robot"), "{err}");
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("JSON has no NaN or infinity", |f| f.is_finite())
            .prop_map(Value::from),
        ".*".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(".*", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn message() -> impl Strategy<Value = Message> {
    let role = prop_oneof![
        Just(Role::System),
        Just(Role::User),
        Just(Role::Assistant),
        Just(Role::Tool)
    ];
    let call = (".*", ".*", json_value()).prop_map(|(id, name, arguments)| ToolCall {
        id,
        name,
        arguments,
    });
    (
        role,
        ".*",
        proptest::option::of(".*"),
        proptest::option::of(".*"),
        prop::collection::vec(call, 0..3),
        proptest::option::of(".*"),
        proptest::bool::ANY,
    )
        .prop_map(
            |(
                role,
                content,
                reasoning,
                reasoning_signature,
                tool_calls,
                tool_call_id,
                awaiting_approval,
            )| Message {
                role,
                content,
                reasoning,
                reasoning_signature,
                tool_calls,
                tool_call_id,
                awaiting_approval,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    /// Floats included: this found that serde_json needs `float_roundtrip` for the
    /// session format to be lossless.
    #[test]
    fn any_message_survives_a_round_trip_through_its_json_line(message in message()) {
        let line = serde_json::to_string(&message).unwrap();
        prop_assert!(!line.contains('\n'), "one message is one line");
        let back: Message = serde_json::from_str(&line).unwrap();
        prop_assert_eq!(back, message);
    }
}
