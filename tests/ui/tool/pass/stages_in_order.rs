// The per-call stages in their order, with a stage of one's own inside `Validate`,
// build and run a call.
use brute::tools::{Execute, Snapshot, ToolCallEnv, ToolContext, ToolError, ToolSet, Validate};
use brute::{Error, Handler, Middleware, ToolCall, tool};

/// Says hello.
#[tool]
async fn hello(name: String) -> Result<String, ToolError> {
    Ok(format!("hello {name}"))
}

#[derive(Middleware)]
#[middleware(inside = brute::tools::ToolValidation)]
struct Audit<A> {
    app: A,
}

impl<'a, A, T> Handler<ToolCallEnv<'a, T>> for Audit<A>
where
    A: Handler<ToolCallEnv<'a, T>>,
    T: ToolSet,
{
    async fn call(&self, env: &mut ToolCallEnv<'a, T>) -> Result<(), Error> {
        assert!(env.prepared.is_some(), "inside Validate the call is prepared");
        self.app.call(env).await
    }
}

fn main() {
    let per_call = brute::pipeline! {
        use Validate;
        use Audit;
        use Snapshot;
        run Execute;
    };
    let dir = std::env::temp_dir();
    let cx = ToolContext::new(&dir).expect("a context");
    let tools = (Hello,);
    let call = ToolCall::new("c", "hello", serde_json::json!({"name": "you"}));
    let mut env = ToolCallEnv::new(call, &tools, &cx);
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime")
        .block_on(per_call.call(&mut env))
        .expect("no error");
    assert_eq!(env.result.expect("a result").expect("ok").content, "hello you");
}
