//! The message format: the seed's sample line both ways, and a lossless round trip of
//! arbitrary messages, images and documents included; lines written before content
//! parts existed load unchanged, and text-only lines are still written byte for byte as
//! they were.
#![allow(clippy::unwrap_used)]

use brute::message::{Data, Part, PartError, Source};
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

/// Lines as brute wrote them before messages had parts (golden: copied from a session
/// file of that version). Each loads, and is written back byte for byte.
const GOLDEN_LINES: &[&str] = &[
    r#"{"role":"user","content":"What's in /tmp?"}"#,
    r#"{"role":"assistant","content":"","tool_calls":[{"id":"tc1","name":"shell","arguments":{"command":"ls /tmp"}}]}"#,
    r#"{"role":"tool","content":"a.txt\nb.txt","tool_call_id":"tc1"}"#,
    r#"{"role":"assistant","content":"Two files.","reasoning":"ls said so","reasoning_signature":"sig"}"#,
];

#[test]
fn lines_of_the_version_before_parts_load_and_are_written_back_byte_for_byte() {
    for line in GOLDEN_LINES {
        let message: Message = serde_json::from_str(line).unwrap();
        assert!(message.parts().is_empty());
        assert_eq!(&serde_json::to_string(&message).unwrap(), line);
    }
    // And a text-only message made by this version writes the old line.
    assert_eq!(
        serde_json::to_string(&Message::user("What's in /tmp?")).unwrap(),
        GOLDEN_LINES[0]
    );
}

/// A line with every field, in the order brute has always written them: the rare
/// fields held out of line are written back in their places.
const EVERY_FIELD: &str = concat!(
    r#"{"role":"tool","content":"waiting","parts":[{"type":"image","url":"https://example.com/a.png"}],"#,
    r#""reasoning":"r","reasoning_signature":"s","#,
    r#""tool_calls":[{"id":"tc1","name":"shell","arguments":{}}],"tool_call_id":"tc0","awaiting_approval":true}"#
);

#[test]
fn a_line_with_every_field_is_written_back_in_field_order() {
    let message: Message = serde_json::from_str(EVERY_FIELD).unwrap();
    assert_eq!(message.parts().len(), 1);
    assert_eq!(message.reasoning(), Some("r"));
    assert_eq!(message.reasoning_signature(), Some("s"));
    assert!(message.awaiting_approval());
    assert_eq!(message.tool_call_id.as_deref(), Some("tc0"));
    assert_eq!(serde_json::to_string(&message).unwrap(), EVERY_FIELD);
}

#[test]
fn clearing_the_rare_fields_gives_the_plain_message_back() {
    let mut message = Message::assistant("hi")
        .with_reasoning("think")
        .with_reasoning_signature("sig")
        .with_part(Part::image_url("https://example.com/a.png"));
    message.set_awaiting_approval(true);
    assert_ne!(message, Message::assistant("hi"));
    message.set_reasoning(None);
    message.set_reasoning_signature(None);
    message.set_awaiting_approval(false);
    message.parts_mut().clear();
    assert_eq!(message, Message::assistant("hi"));
    assert_eq!(
        serde_json::to_string(&message).unwrap(),
        r#"{"role":"assistant","content":"hi"}"#
    );
}

#[test]
fn idempotency_keys_are_written_last_and_read_back_and_old_lines_have_none() {
    let message = Message::user("go")
        .with_idempotency_key("k1")
        .with_idempotency_key("k1");
    let line = serde_json::to_string(&message).unwrap();
    assert_eq!(
        line,
        r#"{"role":"user","content":"go","idempotency_keys":["k1"]}"#
    );
    assert_eq!(serde_json::from_str::<Message>(&line).unwrap(), message);
    let old: Message = serde_json::from_str(r#"{"role":"user","content":"go"}"#).unwrap();
    assert!(old.idempotency_keys().is_empty());
    assert_ne!(old, message);
}

/// A layout promise, not a timing: the common message (text, tool calls, the id a
/// result answers) is what a transcript holds and moves, and the rare fields cost it
/// one pointer. It was 152 bytes with every field in line.
#[test]
fn a_message_is_small() {
    assert!(
        std::mem::size_of::<Message>() <= 88,
        "size_of::<Message>() = {}",
        std::mem::size_of::<Message>()
    );
}

#[test]
fn images_and_documents_have_a_flat_json_form() {
    let message = Message::user("Compare these.")
        .with_part(Part::image_url("https://example.com/a.png"))
        .with_part(Part::image("image/png", b"\x89PNG").unwrap())
        .with_part(Part::pdf(b"%PDF").titled("report.pdf"));
    let line = serde_json::to_string(&message).unwrap();
    assert_eq!(
        line,
        concat!(
            r#"{"role":"user","content":"Compare these.","parts":["#,
            r#"{"type":"image","url":"https://example.com/a.png"},"#,
            r#"{"type":"image","media_type":"image/png","data":"iVBORw=="},"#,
            r#"{"type":"document","media_type":"application/pdf","data":"JVBERg==","title":"report.pdf"}]}"#
        )
    );
    let back: Message = serde_json::from_str(&line).unwrap();
    assert_eq!(back, message);
    assert_eq!(back.parts()[1].data().unwrap().to_bytes(), b"\x89PNG");
    assert_eq!(
        back.parts()[2].data().unwrap().media_type(),
        "application/pdf"
    );
}

#[test]
fn a_part_that_is_not_valid_is_an_error_when_loading() {
    for (line, says) in [
        (
            r#"{"role":"user","parts":[{"type":"image","media_type":"image/png","data":"not base64!"}]}"#,
            "not base64",
        ),
        (
            r#"{"role":"user","parts":[{"type":"image","media_type":"png","data":"QQ=="}]}"#,
            "media type",
        ),
        (
            r#"{"role":"user","parts":[{"type":"image","url":"https://x","data":"QQ=="}]}"#,
            "either `url` or both",
        ),
        (
            r#"{"role":"user","parts":[{"type":"audio","url":"https://x"}]}"#,
            "audio",
        ),
    ] {
        let err = serde_json::from_str::<Message>(line)
            .unwrap_err()
            .to_string();
        assert!(err.contains(says), "{line}: {err}");
    }
    assert_eq!(
        Part::image("png", b"x").unwrap_err(),
        PartError::MediaType("png".into())
    );
    assert!(Data::from_base64("image/png", "QQ=").is_err());
    assert!(matches!(
        Part::document_url("https://x/y.pdf").source(),
        Source::Url(_)
    ));
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

fn part() -> impl Strategy<Value = Part> {
    let source = prop_oneof![
        ".*".prop_map(Source::Url),
        (
            "[a-z]{1,8}/[a-z0-9.+-]{1,12}",
            prop::collection::vec(any::<u8>(), 0..64)
        )
            .prop_map(|(media_type, bytes)| Source::Data(
                Data::from_bytes(media_type, &bytes).unwrap()
            )),
    ];
    (source, any::<bool>(), proptest::option::of(".*")).prop_map(|(source, image, title)| {
        if image {
            Part::Image(source)
        } else {
            Part::Document { source, title }
        }
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
        prop::collection::vec(part(), 0..3),
        proptest::bool::ANY,
        prop::collection::vec(".*", 0..3),
    )
        .prop_map(
            |(
                role,
                content,
                reasoning,
                reasoning_signature,
                tool_calls,
                tool_call_id,
                parts,
                awaiting_approval,
                keys,
            )| {
                let mut message = Message::new(role, content);
                message.set_reasoning(reasoning);
                message.set_reasoning_signature(reasoning_signature);
                message.tool_calls = tool_calls;
                message.tool_call_id = tool_call_id;
                *message.parts_mut() = parts;
                message.set_awaiting_approval(awaiting_approval);
                for key in keys {
                    message.add_idempotency_key(key);
                }
                message
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
