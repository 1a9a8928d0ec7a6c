//! Defining tools: `#[tool]`, static sets (tuples, `tools!`), the dynamic registry,
//! argument validation.
#![allow(clippy::unwrap_used)]

use brute::tools::{
    DynTool, PreparedCall, Read, Registry, Shell, ToolContext, ToolError, ToolOutput, ToolSet,
};
use brute::{ToolCall, model::ToolSpec, tool, tools::Tool};
use serde_json::json;

/// Adds two numbers.
#[tool]
async fn add(
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
) -> Result<String, ToolError> {
    Ok((a + b).to_string())
}

/// Repeats a word.
#[tool(name = "say_again", description = "Repeats a word n times.")]
async fn repeat(
    word: String,
    #[serde(default = "one")] times: usize,
    cx: &ToolContext,
) -> Result<serde_json::Value, String> {
    if word.is_empty() {
        return Err("the word is empty".to_string());
    }
    let _ = cx.sandbox().root();
    Ok(json!({ "said": vec![word; times].join(" ") }))
}

fn one() -> usize {
    1
}

fn specs(set: &impl ToolSet) -> Vec<ToolSpec> {
    let mut out = Vec::new();
    set.specs(&mut out);
    out
}

fn context() -> (tempfile::TempDir, ToolContext) {
    let dir = tempfile::tempdir().unwrap();
    let cx = ToolContext::new(dir.path()).unwrap();
    (dir, cx)
}

async fn run(
    set: &impl ToolSet,
    cx: &ToolContext,
    name: &str,
    args: serde_json::Value,
) -> Result<ToolOutput, ToolError> {
    let call = ToolCall::new("c", name, args);
    // One lookup: the prepared call holds the tool and runs it.
    let prepared = set.prepare(&call).expect("the tool is in the set")?;
    prepared.run(cx).await
}

#[test]
fn tool_attribute_generates_name_description_and_schema() {
    assert_eq!(Add.name(), "add");
    assert_eq!(Add.description(), "Adds two numbers.");
    let schema = Add.parameters();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["a", "b"]));
    assert_eq!(
        schema["properties"]["a"]["description"],
        "The first number."
    );
    assert_eq!(schema["properties"]["a"]["type"], "integer");
    assert!(schema.get("$schema").is_none() && schema.get("title").is_none());

    assert_eq!(Repeat.name(), "say_again");
    assert_eq!(Repeat.description(), "Repeats a word n times.");
    let schema = Repeat.parameters();
    assert_eq!(schema["required"], json!(["word"]));
    assert!(
        schema["properties"].get("cx").is_none(),
        "the context is not an argument"
    );
}

#[tokio::test]
async fn tool_attribute_runs_the_body_with_the_context() {
    let (_dir, cx) = context();
    let out = run(&Add, &cx, "add", json!({"a": 2, "b": 40}))
        .await
        .unwrap();
    assert_eq!(out.content, "42");
    let out = run(&Repeat, &cx, "say_again", json!({"word": "hi", "times": 3}))
        .await
        .unwrap();
    assert_eq!(out.content, r#"{"said":"hi hi hi"}"#);
    let out = run(&Repeat, &cx, "say_again", json!({"word": "hi"}))
        .await
        .unwrap();
    assert_eq!(out.content, r#"{"said":"hi"}"#);
    let err = run(&Repeat, &cx, "say_again", json!({"word": ""}))
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "the word is empty");
}

#[test]
fn validation_names_the_field_and_what_was_expected() {
    let err = Add.dyn_prepare(&json!({"a": "two", "b": 1})).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("`a`") && text.contains("expected i64"),
        "{text}"
    );
    assert!(matches!(err, ToolError::InvalidArguments { ref field, .. } if field == "a"));

    let err = Add.dyn_prepare(&json!({"a": 1})).unwrap_err().to_string();
    assert!(err.contains("missing field `b`"), "{err}");

    let err = Add.dyn_prepare(&json!("{not json")).unwrap_err();
    assert!(matches!(err, ToolError::InvalidJson(_)), "{err}");
    // The JSON string form providers sometimes send is accepted.
    assert!(Add.dyn_prepare(&json!(r#"{"a": 1, "b": 2}"#)).is_ok());
    let err = Add.dyn_prepare(&json!(42)).unwrap_err().to_string();
    assert!(err.contains("invalid type"), "{err}");
}

#[tokio::test]
async fn tuples_and_the_tools_macro_dispatch_by_name() {
    let (_dir, cx) = context();
    let tuple = (Add, Repeat, Read);
    let list = brute::tools![Add, Repeat, Read, Shell];
    for names in [specs(&tuple), specs(&list)] {
        let names: Vec<&str> = names.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(&names[..3], ["add", "say_again", "read"]);
    }
    assert!(list.contains("shell") && !tuple.contains("shell"));
    assert_eq!(
        run(&tuple, &cx, "add", json!({"a": 1, "b": 1}))
            .await
            .unwrap()
            .content,
        "2"
    );
    assert_eq!(
        run(&list, &cx, "add", json!({"a": 1, "b": 2}))
            .await
            .unwrap()
            .content,
        "3"
    );
    assert!(
        tuple
            .prepare(&ToolCall::new("c", "nope", json!({})))
            .is_none()
    );
    assert!(
        brute::tools![]
            .prepare(&ToolCall::new("c", "add", json!({})))
            .is_none()
    );
}

#[tokio::test]
async fn the_registry_holds_tools_known_at_run_time() {
    let (_dir, cx) = context();
    let mut registry = Registry::new();
    registry.register(Add).register(Repeat);
    assert_eq!(registry.len(), 2);
    assert_eq!(specs(&registry).len(), 2);
    assert_eq!(
        run(&registry, &cx, "add", json!({"a": 5, "b": 5}))
            .await
            .unwrap()
            .content,
        "10"
    );
    assert!(
        registry
            .prepare(&ToolCall::new("c", "missing", json!({})))
            .is_none()
    );
    // Registering a tool of the same name replaces it.
    registry.register(Add);
    assert_eq!(registry.len(), 2);
}

#[test]
fn builtin_specs_have_schemas() {
    let set = brute::tools::Tools::ALL;
    let all = specs(&set);
    let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "read",
            "write",
            "patch",
            "remove",
            "fs_search",
            "undo",
            "shell",
            "fetch",
            "todo_read",
            "todo_write",
            "question",
            "delegate"
        ]
    );
    for spec in &all {
        assert_eq!(spec.parameters["type"], "object", "{}", spec.name);
        assert!(spec.parameters.get("properties").is_some(), "{}", spec.name);
        assert!(!spec.description.is_empty());
    }
    let todo = all.iter().find(|s| s.name == "todo_write").unwrap();
    let status = &todo.parameters["properties"]["todos"]["items"]["properties"]["status"];
    assert!(status.to_string().contains("in_progress"), "{status}");
}

mod renamed_crate {
    //! `#[tool(crate = path)]`: the generated code reaches the runtime only through
    //! the given path.
    use brute as renamed;
    use renamed::tools::ToolError;

    /// Echoes its input.
    #[renamed::tool(crate = renamed)]
    pub(crate) async fn echo(text: String) -> Result<String, ToolError> {
        Ok(text)
    }

    #[tokio::test]
    async fn a_tool_under_a_renamed_crate_works() {
        let dir = tempfile::tempdir().unwrap();
        let cx = super::ToolContext::new(dir.path()).unwrap();
        let out = super::run(&Echo, &cx, "echo", serde_json::json!({"text": "hi"}))
            .await
            .unwrap();
        assert_eq!(out.content, "hi");
    }
}

/// A tool with state: counts its calls and adds to a running total. Calls may run at
/// the same time, so the state is atomic.
#[derive(Default)]
struct Tally {
    calls: std::sync::atomic::AtomicU64,
    total: std::sync::atomic::AtomicI64,
}

#[tool]
impl Tally {
    /// Adds a number to the running total and returns the total.
    async fn tally(
        &self,
        /// The number to add.
        add: i64,
        cx: &ToolContext,
    ) -> Result<String, ToolError> {
        use std::sync::atomic::Ordering;
        let _ = cx.sandbox().root();
        self.calls.fetch_add(1, Ordering::Relaxed);
        let total = self.total.fetch_add(add, Ordering::Relaxed) + add;
        Ok(total.to_string())
    }
}

/// The schema `lookup` advertises, word for word.
fn lookup_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": { "key": { "type": "string", "enum": ["a", "b"] } },
        "required": ["key"],
        "additionalProperties": false
    })
}

/// Looks a key up.
#[tool(schema = lookup_schema())]
async fn lookup(key: String) -> Result<String, ToolError> {
    Ok(format!("value of {key}"))
}

#[tokio::test]
async fn a_tool_on_a_method_keeps_its_state_across_calls() {
    use std::sync::atomic::Ordering;
    let tally = Tally::default();
    let spec = &specs(&tally)[0];
    assert_eq!(spec.name, "tally");
    assert_eq!(
        spec.description,
        "Adds a number to the running total and returns the total."
    );
    assert_eq!(spec.parameters["required"], json!(["add"]));
    assert_eq!(
        spec.parameters["properties"]["add"]["description"],
        "The number to add."
    );
    let (_dir, cx) = context();
    let first = run(&tally, &cx, "tally", json!({"add": 2})).await.unwrap();
    let second = run(&tally, &cx, "tally", json!({"add": 5})).await.unwrap();
    assert_eq!(
        (first.content.as_str(), second.content.as_str()),
        ("2", "7")
    );
    assert_eq!(tally.calls.load(Ordering::Relaxed), 2);
    // The method is still an ordinary method of the struct.
    assert_eq!(tally.tally(1, &cx).await.unwrap(), "8");
    // Its arguments are checked like any tool's.
    let err = run(&tally, &cx, "tally", json!({"add": "x"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("add"), "{err}");
}

#[tokio::test]
async fn a_tool_given_an_exact_schema_advertises_it_and_still_checks_arguments() {
    let spec = &specs(&Lookup)[0];
    assert_eq!(spec.parameters.as_ref(), &lookup_schema());
    let (_dir, cx) = context();
    let out = run(&Lookup, &cx, "lookup", json!({"key": "a"}))
        .await
        .unwrap();
    assert_eq!(out.content, "value of a");
    let err = run(&Lookup, &cx, "lookup", json!({"key": 3}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("key"), "{err}");
}
