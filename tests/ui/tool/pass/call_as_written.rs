// The fn under `#[tool]` stays as written: a test calls it directly, with a context
// of its own, and the tool calls the same fn. The context is found by its type,
// whatever the parameter's name or the path to `ToolContext`; the generated items
// neither shadow nor collide with the user's names (a fn named `args` or `cx` as the
// generated `call`'s locals are, parameters named so, a type named like the arguments'
// struct).
use brute::tools::{PreparedCall, Tool, ToolContext, ToolError, ToolSet};
use brute::{ToolCall, tool};

/// Adds two numbers.
#[tool]
async fn add(a: i64, b: i64) -> Result<String, ToolError> {
    Ok((a + b).to_string())
}

/// The user's own type, named as the arguments' struct of `echo` would be.
type EchoArgs = Vec<String>;

/// Echoes its inputs, with the context first.
#[tool]
async fn echo(
    sandbox: &brute::tools::ToolContext,
    /// What to echo.
    args: EchoArgs,
    /// A separator.
    cx: String,
    value: i64,
) -> Result<String, ToolError> {
    let _ = sandbox.sandbox().root();
    Ok(format!("{}{cx}{value}", args.join(&cx)))
}

/// A tool named like the generated `call`'s arguments.
#[tool]
async fn args(value: String) -> Result<String, ToolError> {
    Ok(value)
}

/// A tool named like the generated `call`'s context.
#[tool]
async fn cx(sandbox: &ToolContext) -> Result<String, ToolError> {
    let _ = sandbox.sandbox().root();
    Ok("cx".into())
}

fn main() {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime")
        .block_on(async {
            // Called as written.
            assert_eq!(add(2, 3).await.expect("ok"), "5");
            let dir = std::env::temp_dir();
            let cx = ToolContext::new(&dir).expect("a context");
            let out = echo(&cx, vec!["a".into(), "b".into()], "-".into(), 7).await;
            assert_eq!(out.expect("ok"), "a-b-7");

            // A tool defined inside a fn works the same.
            /// Doubles a number.
            #[tool]
            async fn double(n: i64) -> Result<String, ToolError> {
                Ok((2 * n).to_string())
            }
            assert_eq!(double(4).await.expect("ok"), "8");

            // Through the tool: the same fns.
            let tools = (Add, Echo, Double, (Args, Cx));
            let mut specs = Vec::new();
            tools.specs(&mut specs);
            assert_eq!(specs[1].parameters["required"], serde_json::json!(["args", "cx", "value"]));
            for (name, args, want) in [
                ("add", serde_json::json!({"a": 2, "b": 3}), "5"),
                ("echo", serde_json::json!({"args": ["x", "y"], "cx": "+", "value": 1}), "x+y+1"),
                ("double", serde_json::json!({"n": 21}), "42"),
                ("args", serde_json::json!({"value": "v"}), "v"),
                ("cx", serde_json::json!({}), "cx"),
            ] {
                let call = ToolCall::new("c", name, args);
                let prepared = tools.prepare(&call).expect("in the set").expect("valid");
                assert_eq!(prepared.run(&cx).await.expect("ok").content, want);
            }
            assert_eq!(Echo.name(), "echo");
        });
}
