//! The JSON Schema validator: the keywords structured output uses, and a refusal of
//! any keyword it does not check (so none passes an answer by being ignored).
#![allow(clippy::unwrap_used)]

use brute_eval::{Schema, SchemaError};
use serde_json::json;

#[test]
fn a_keyword_it_does_not_check_is_refused_when_the_schema_is_made() {
    let error = Schema::new(json!({
        "type": "object",
        "properties": {"tags": {"type": "array", "uniqueItems": true}}
    }))
    .unwrap_err();
    assert_eq!(
        error,
        SchemaError::Unsupported {
            at: "#/properties/tags".into(),
            keyword: "uniqueItems".into()
        }
    );
    assert!(
        error
            .to_string()
            .starts_with("schema #/properties/tags: the keyword `uniqueItems` is not supported")
    );
    let bad_pattern = Schema::new(json!({"type": "string", "pattern": "("})).unwrap_err();
    assert!(
        matches!(bad_pattern, SchemaError::Invalid { ref keyword, .. } if keyword == "pattern")
    );
    let bad_type = Schema::new(json!({"type": "text"})).unwrap_err();
    assert!(
        bad_type.to_string().contains("unknown type \"text\""),
        "{bad_type}"
    );
    let remote = Schema::new(json!({"$ref": "https://example.com/s.json"})).unwrap_err();
    assert!(matches!(remote, SchemaError::Invalid { ref keyword, .. } if keyword == "$ref"));
    // Annotations are fine.
    Schema::new(json!({"title": "T", "description": "d", "format": "email", "type": "string"}))
        .unwrap();
}

#[test]
fn refs_unions_and_bounds_are_checked_where_the_value_is() {
    let schema = Schema::new(json!({
        "type": "object",
        "properties": {
            "owner": {"$ref": "#/$defs/Person"},
            "pets": {"type": "array", "items": {"$ref": "#/$defs/Pet"}, "maxItems": 2},
            "id": {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": "^[a-z]+$"}]},
            "kind": {"enum": ["home", "office"]}
        },
        "required": ["owner"],
        "$defs": {
            "Person": {
                "type": "object",
                "properties": {"name": {"type": "string", "minLength": 1}},
                "required": ["name"]
            },
            "Pet": {"type": ["string", "null"], "maxLength": 5}
        }
    }))
    .unwrap();
    let good =
        json!({"owner": {"name": "Ada"}, "pets": ["cat", null], "id": "abc", "kind": "home"});
    assert_eq!(schema.validate(&good), Ok(()));
    let cases = [
        (
            json!({"owner": {"name": ""}}),
            "/owner/name: should be at least 1 characters long",
        ),
        (json!({"owner": {}}), "/owner: the field `name` is missing"),
        (
            json!({"owner": {"name": "A"}, "pets": ["hamster"]}),
            "/pets/0: should be at most 5 characters long",
        ),
        (
            json!({"owner": {"name": "A"}, "pets": [1]}),
            "/pets/0: should be a string or null, not a number",
        ),
        (
            json!({"owner": {"name": "A"}, "pets": ["a", "b", "c"]}),
            "/pets: should have at most 2 items, has 3",
        ),
        (
            json!({"owner": {"name": "A"}, "id": "ABC"}),
            "/id: matches none of the schemas of `anyOf`",
        ),
        (
            json!({"owner": {"name": "A"}, "kind": "shed"}),
            "/kind: should be one of [\"home\",\"office\"]",
        ),
        (json!([]), "/: should be an object, not an array"),
    ];
    for (value, error) in cases {
        assert_eq!(schema.validate(&value), Err(error.to_owned()), "{value}");
    }
}

#[test]
fn one_of_not_and_exclusive_bounds() {
    let schema = Schema::new(json!({
        "oneOf": [{"type": "number", "exclusiveMinimum": 0}, {"type": "number", "maximum": 10}],
        "not": {"const": 5}
    }))
    .unwrap();
    assert!(schema.validate(&json!(20)).is_ok());
    assert!(schema.validate(&json!(-1)).is_ok());
    assert_eq!(
        schema.validate(&json!(3)),
        Err("/: should match exactly one schema of `oneOf`, matches 2".into())
    );
    let no_five = Schema::new(json!({"type": "integer", "not": {"const": 5}})).unwrap();
    assert_eq!(
        no_five.validate(&json!(5)),
        Err("/: matches the schema of `not`".into())
    );
    assert_eq!(
        no_five.validate(&json!(5.5)),
        Err("/: should be an integer, not a number".into())
    );
}

#[test]
fn a_schema_that_refers_to_itself_forever_is_an_error_not_a_hang() {
    let schema = Schema::new(json!({"$ref": "#"})).unwrap();
    let error = schema.validate(&json!(1)).unwrap_err();
    assert!(error.contains("nest deeper than"), "{error}");
    // A recursive schema that consumes the value is fine.
    let tree = Schema::new(json!({
        "type": "object",
        "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}
    }))
    .unwrap();
    assert!(
        tree.validate(&json!({"children": [{"children": [{}]}]}))
            .is_ok()
    );
    assert_eq!(
        tree.validate(&json!({"children": [{"children": [3]}]})),
        Err("/children/0/children/0: should be an object, not a number".into())
    );
}
