//! Loading a dataset: the cases as written, and errors that name the file, the line and
//! the field.
#![allow(clippy::unwrap_used)]

use brute_eval::{Case, Dataset, DatasetError, ExpectedCall};
use serde_json::json;

fn error(text: &str) -> String {
    Dataset::from_jsonl("cases.jsonl", text)
        .unwrap_err()
        .to_string()
}

#[test]
fn cases_load_in_order_with_their_optional_fields() {
    let dataset = Dataset::from_jsonl(
        "cases.jsonl",
        r#"{"id": "a", "prompt": "first", "expected": "one"}

{"id": "b", "prompt": "second", "tool_calls": [{"name": "weather", "arguments": {"city": "Oslo"}}, {"name": "clock"}]}
"#,
    )
    .unwrap();
    assert_eq!(dataset.name(), "cases.jsonl");
    assert_eq!(
        dataset.cases(),
        &[
            Case::new("a", "first").expect("one"),
            Case::new("b", "second")
                .expect_call(ExpectedCall::with_arguments(
                    "weather",
                    json!({"city": "Oslo"})
                ))
                .expect_call(ExpectedCall::new("clock")),
        ]
    );
}

#[test]
fn a_missing_or_mistyped_field_is_named_with_its_line() {
    assert_eq!(
        error("{\"id\": \"a\", \"prompt\": \"p\"}\n{\"id\": \"b\"}"),
        "cases.jsonl:2: field `prompt`: is missing"
    );
    assert_eq!(
        error(r#"{"id": "a", "prompt": "p", "expected": 42}"#),
        "cases.jsonl:1: field `expected`: should be a string, not a number"
    );
    assert_eq!(
        error(r#"{"id": 7, "prompt": "p"}"#),
        "cases.jsonl:1: field `id`: should be a string, not a number"
    );
    assert_eq!(
        error(r#"{"id": "a", "prompt": "p", "tool_calls": [{"name": "w", "arguments": [1]}]}"#),
        "cases.jsonl:1: field `tool_calls`: call 0: `arguments` should be an object, not an array"
    );
    assert_eq!(
        error(r#"{"id": "a", "prompt": "p", "tool_calls": {"name": "w"}}"#),
        "cases.jsonl:1: field `tool_calls`: should be an array, not an object"
    );
}

#[test]
fn a_misspelt_field_is_an_error_not_a_case_without_it() {
    assert_eq!(
        error(r#"{"id": "a", "prompt": "p", "expectd": "x"}"#),
        "cases.jsonl:1: unknown field `expectd` (a case has `id`, `prompt`, `expected` and `tool_calls`)"
    );
}

#[test]
fn duplicate_ids_and_lines_that_are_not_json_are_refused() {
    assert_eq!(
        error("{\"id\": \"a\", \"prompt\": \"p\"}\n{\"id\": \"a\", \"prompt\": \"q\"}"),
        "cases.jsonl:2: field `id`: `a` is also the id of line 1"
    );
    let not_json = error("{\"id\": \"a\", \"prompt\": \"p\"}\n\n{oops");
    assert!(
        not_json.starts_with("cases.jsonl:3: not JSON: "),
        "{not_json}"
    );
    assert_eq!(
        error("[1, 2]"),
        "cases.jsonl:1: a case is a JSON object, not an array"
    );
    assert_eq!(
        error("\n  \n"),
        "cases.jsonl: the dataset has no case (one JSON object per line)"
    );
}

#[test]
fn a_file_is_named_in_its_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cases.jsonl");
    std::fs::write(&path, "{\"id\": \"\", \"prompt\": \"p\"}\n").unwrap();
    let message = Dataset::from_file(&path).unwrap_err().to_string();
    assert_eq!(
        message,
        format!("{}:1: field `id`: is empty", path.display())
    );
    let missing = Dataset::from_file(dir.path().join("absent.jsonl")).unwrap_err();
    assert!(matches!(missing, DatasetError::Io { .. }), "{missing}");
}
