//! [`Schema`]: a JSON Schema validator for the keywords structured output uses.
//!
//! The workspace has schemars, which writes schemas, and no validator; the schemas an
//! eval checks answers against are the ones brute sends as structured output
//! ([`OutputSchema`](brute::structured::OutputSchema), schemars' output, hand-written
//! ones of the same kind). This validator knows those keywords and refuses a schema
//! with any other constraining keyword when it is made, so a keyword it does not know
//! never passes an answer by being ignored.

use serde_json::{Map, Value};

use crate::dataset::kind;

/// How deep `$ref`s may nest while validating one value: a schema that refers to itself
/// without consuming the value (`{"$ref": "#"}`) is an error, not a hang.
const MAX_DEPTH: usize = 64;

/// Keywords that say nothing about validity (annotations and containers of
/// definitions); `format` is an annotation in draft 2020-12.
const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "$defs",
    "definitions",
    "title",
    "description",
    "default",
    "examples",
    "format",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// Why a schema cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The schema uses a keyword this validator does not check.
    #[error(
        "schema {at}: the keyword `{keyword}` is not supported (supported: type, enum, const, properties, required, additionalProperties, items, prefixItems, minItems, maxItems, minLength, maxLength, pattern, minimum, maximum, exclusiveMinimum, exclusiveMaximum, anyOf, oneOf, allOf, not, $ref to #/$defs or #/definitions)"
    )]
    Unsupported {
        /// Where in the schema, as a JSON pointer (`#/properties/name`).
        at: String,
        /// The keyword.
        keyword: String,
    },
    /// A keyword's value is not of the kind the keyword takes.
    #[error("schema {at}: `{keyword}` {message}")]
    Invalid {
        /// Where in the schema, as a JSON pointer.
        at: String,
        /// The keyword.
        keyword: String,
        /// What is wrong with its value.
        message: String,
    },
}

/// A checked JSON Schema, ready to validate values.
///
/// ```
/// use brute_eval::Schema;
/// use serde_json::json;
///
/// let schema = Schema::new(json!({
///     "type": "object",
///     "properties": {"name": {"type": "string"}, "population": {"type": "integer", "minimum": 0}},
///     "required": ["name", "population"],
///     "additionalProperties": false
/// }))?;
/// assert!(schema.validate(&json!({"name": "Bern", "population": 134794})).is_ok());
/// assert_eq!(
///     schema.validate(&json!({"name": "Bern", "population": "many"})).unwrap_err(),
///     "/population: should be an integer, not a string"
/// );
/// # Ok::<(), brute_eval::SchemaError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Schema {
    root: Value,
}

impl Schema {
    /// Checks `schema`: every keyword is one this validator checks (or an annotation),
    /// with a value of the right kind, and every `pattern` compiles.
    pub fn new(schema: Value) -> Result<Self, SchemaError> {
        check(&schema, "#")?;
        Ok(Schema { root: schema })
    }

    /// The schema as given.
    pub fn as_value(&self) -> &Value {
        &self.root
    }

    /// Whether `value` matches; the error names the first place that does not (a JSON
    /// pointer into the value, `/` for the root) and why.
    pub fn validate(&self, value: &Value) -> Result<(), String> {
        validate(&self.root, &self.root, value, "", 0)
    }
}

fn invalid(at: &str, keyword: &str, message: impl Into<String>) -> SchemaError {
    SchemaError::Invalid {
        at: at.to_owned(),
        keyword: keyword.to_owned(),
        message: message.into(),
    }
}

fn check(schema: &Value, at: &str) -> Result<(), SchemaError> {
    let object = match schema {
        Value::Bool(_) => return Ok(()),
        Value::Object(object) => object,
        other => {
            return Err(invalid(
                at,
                "schema",
                format!("should be an object or a boolean, not {}", kind(other)),
            ));
        }
    };
    for (keyword, value) in object {
        let here = format!("{at}/{keyword}");
        match keyword.as_str() {
            "type" => check_types(value, at)?,
            "properties" | "$defs" | "definitions" => {
                let Value::Object(children) = value else {
                    return Err(invalid(at, keyword, "should be an object of schemas"));
                };
                for (name, child) in children {
                    check(child, &format!("{here}/{name}"))?;
                }
            }
            "items" | "additionalProperties" | "not" => check(value, &here)?,
            "prefixItems" | "anyOf" | "oneOf" | "allOf" => {
                let Value::Array(children) = value else {
                    return Err(invalid(at, keyword, "should be an array of schemas"));
                };
                for (i, child) in children.iter().enumerate() {
                    check(child, &format!("{here}/{i}"))?;
                }
            }
            "required" => {
                if !value
                    .as_array()
                    .is_some_and(|names| names.iter().all(Value::is_string))
                {
                    return Err(invalid(at, keyword, "should be an array of strings"));
                }
            }
            "enum" => {
                if !value.is_array() {
                    return Err(invalid(at, keyword, "should be an array"));
                }
            }
            "const" => {}
            "minItems" | "maxItems" | "minLength" | "maxLength" => {
                if value.as_u64().is_none() {
                    return Err(invalid(at, keyword, "should be a non-negative integer"));
                }
            }
            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => {
                if !value.is_number() {
                    return Err(invalid(at, keyword, "should be a number"));
                }
            }
            "pattern" => {
                let Some(pattern) = value.as_str() else {
                    return Err(invalid(at, keyword, "should be a string"));
                };
                regex::Regex::new(pattern)
                    .map_err(|e| invalid(at, keyword, format!("is not a regex: {e}")))?;
            }
            "$ref" => {
                let target = value.as_str().unwrap_or_default();
                if target != "#" && !target.starts_with("#/") {
                    return Err(invalid(
                        at,
                        keyword,
                        "should point into this schema (`#` or `#/$defs/..`)",
                    ));
                }
            }
            other if ANNOTATIONS.contains(&other) => {}
            other => {
                return Err(SchemaError::Unsupported {
                    at: at.to_owned(),
                    keyword: other.to_owned(),
                });
            }
        }
    }
    Ok(())
}

const TYPES: &[&str] = &[
    "null", "boolean", "object", "array", "number", "integer", "string",
];

fn check_types(value: &Value, at: &str) -> Result<(), SchemaError> {
    let names: Vec<&Value> = match value {
        Value::Array(names) => names.iter().collect(),
        one => vec![one],
    };
    for name in names {
        match name.as_str() {
            Some(name) if TYPES.contains(&name) => {}
            _ => {
                return Err(invalid(
                    at,
                    "type",
                    format!("names an unknown type {name} (one of {})", TYPES.join(", ")),
                ));
            }
        }
    }
    Ok(())
}

fn pointer(path: &str) -> &str {
    if path.is_empty() { "/" } else { path }
}

fn validate(
    root: &Value,
    schema: &Value,
    value: &Value,
    path: &str,
    depth: usize,
) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!(
            "{}: the schema's $refs nest deeper than {MAX_DEPTH}",
            pointer(path)
        ));
    }
    let object = match schema {
        Value::Bool(true) => return Ok(()),
        Value::Bool(false) => return Err(format!("{}: no value is allowed here", pointer(path))),
        Value::Object(object) => object,
        // `Schema::new` refused anything else.
        _ => return Ok(()),
    };
    let fail = |message: String| Err(format!("{}: {message}", pointer(path)));
    if let Some(target) = object.get("$ref").and_then(Value::as_str) {
        let resolved = resolve(root, target).ok_or_else(|| {
            format!(
                "{}: the schema's $ref {target} points nowhere",
                pointer(path)
            )
        })?;
        validate(root, resolved, value, path, depth + 1)?;
    }
    if let Some(types) = object.get("type")
        && !matches_type(types, value)
    {
        return fail(format!(
            "should be {}, not {}",
            type_names(types),
            kind(value)
        ));
    }
    if let Some(Value::Array(allowed)) = object.get("enum")
        && !allowed.contains(value)
    {
        return fail(format!(
            "should be one of {}",
            Value::Array(allowed.clone())
        ));
    }
    if let Some(constant) = object.get("const")
        && constant != value
    {
        return fail(format!("should be {constant}"));
    }
    match value {
        Value::Object(fields) => validate_object(root, object, fields, path, depth)?,
        Value::Array(items) => validate_array(root, object, items, path, depth)?,
        Value::String(text) => validate_string(object, text, path)?,
        Value::Number(_) => validate_number(object, value, path)?,
        _ => {}
    }
    if let Some(Value::Array(all)) = object.get("allOf") {
        for schema in all {
            validate(root, schema, value, path, depth + 1)?;
        }
    }
    if let Some(Value::Array(any)) = object.get("anyOf")
        && !any
            .iter()
            .any(|s| validate(root, s, value, path, depth + 1).is_ok())
    {
        return fail("matches none of the schemas of `anyOf`".into());
    }
    if let Some(Value::Array(one)) = object.get("oneOf") {
        let matching = one
            .iter()
            .filter(|s| validate(root, s, value, path, depth + 1).is_ok())
            .count();
        if matching != 1 {
            return fail(format!(
                "should match exactly one schema of `oneOf`, matches {matching}"
            ));
        }
    }
    if let Some(not) = object.get("not")
        && validate(root, not, value, path, depth + 1).is_ok()
    {
        return fail("matches the schema of `not`".into());
    }
    Ok(())
}

fn validate_object(
    root: &Value,
    schema: &Map<String, Value>,
    fields: &Map<String, Value>,
    path: &str,
    depth: usize,
) -> Result<(), String> {
    if let Some(Value::Array(required)) = schema.get("required") {
        for name in required.iter().filter_map(Value::as_str) {
            if !fields.contains_key(name) {
                return Err(format!("{}: the field `{name}` is missing", pointer(path)));
            }
        }
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    for (name, field) in fields {
        let at = format!("{path}/{}", escape(name));
        match properties.and_then(|p| p.get(name)) {
            Some(property) => validate(root, property, field, &at, depth + 1)?,
            None => match schema.get("additionalProperties") {
                Some(Value::Bool(false)) => {
                    return Err(format!(
                        "{}: the field `{name}` is not allowed",
                        pointer(path)
                    ));
                }
                Some(extra) => validate(root, extra, field, &at, depth + 1)?,
                None => {}
            },
        }
    }
    Ok(())
}

fn validate_array(
    root: &Value,
    schema: &Map<String, Value>,
    items: &[Value],
    path: &str,
    depth: usize,
) -> Result<(), String> {
    let count = items.len() as u64;
    if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
        && count < min
    {
        return Err(format!(
            "{}: should have at least {min} items, has {count}",
            pointer(path)
        ));
    }
    if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
        && count > max
    {
        return Err(format!(
            "{}: should have at most {max} items, has {count}",
            pointer(path)
        ));
    }
    let prefix: &[Value] = schema
        .get("prefixItems")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    for (i, item) in items.iter().enumerate() {
        let at = format!("{path}/{i}");
        if let Some(item_schema) = prefix.get(i).or_else(|| schema.get("items")) {
            validate(root, item_schema, item, &at, depth + 1)?;
        }
    }
    Ok(())
}

fn validate_string(schema: &Map<String, Value>, text: &str, path: &str) -> Result<(), String> {
    let length = text.chars().count() as u64;
    if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
        && length < min
    {
        return Err(format!(
            "{}: should be at least {min} characters long",
            pointer(path)
        ));
    }
    if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
        && length > max
    {
        return Err(format!(
            "{}: should be at most {max} characters long",
            pointer(path)
        ));
    }
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str)
        && let Ok(regex) = regex::Regex::new(pattern)
        && !regex.is_match(text)
    {
        return Err(format!(
            "{}: should match the pattern {pattern}",
            pointer(path)
        ));
    }
    Ok(())
}

fn validate_number(schema: &Map<String, Value>, value: &Value, path: &str) -> Result<(), String> {
    let Some(n) = value.as_f64() else {
        return Ok(());
    };
    let bound = |keyword: &str| schema.get(keyword).and_then(Value::as_f64);
    let fail = |relation: &str, limit: f64| {
        Err(format!(
            "{}: should be {relation} {limit}, is {value}",
            pointer(path)
        ))
    };
    if let Some(min) = bound("minimum")
        && n < min
    {
        return fail("at least", min);
    }
    if let Some(max) = bound("maximum")
        && n > max
    {
        return fail("at most", max);
    }
    if let Some(min) = bound("exclusiveMinimum")
        && n <= min
    {
        return fail("more than", min);
    }
    if let Some(max) = bound("exclusiveMaximum")
        && n >= max
    {
        return fail("less than", max);
    }
    Ok(())
}

fn matches_type(types: &Value, value: &Value) -> bool {
    let one = |name: &Value| match name.as_str() {
        Some("null") => value.is_null(),
        Some("boolean") => value.is_boolean(),
        Some("object") => value.is_object(),
        Some("array") => value.is_array(),
        Some("number") => value.is_number(),
        Some("integer") => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        Some("string") => value.is_string(),
        _ => false,
    };
    match types {
        Value::Array(names) => names.iter().any(one),
        name => one(name),
    }
}

fn type_names(types: &Value) -> String {
    let article = |name: &str| match name {
        "null" => "null".to_owned(),
        "array" | "object" | "integer" => format!("an {name}"),
        other => format!("a {other}"),
    };
    match types {
        Value::Array(names) => names
            .iter()
            .filter_map(Value::as_str)
            .map(article)
            .collect::<Vec<_>>()
            .join(" or "),
        name => article(name.as_str().unwrap_or_default()),
    }
}

/// The schema `#/a/b` points to in `root`.
fn resolve<'a>(root: &'a Value, target: &str) -> Option<&'a Value> {
    let pointer = target.strip_prefix('#')?;
    root.pointer(pointer)
}

/// A field name as a JSON pointer token.
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}
