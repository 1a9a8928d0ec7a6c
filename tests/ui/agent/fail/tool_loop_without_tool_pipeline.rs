// Rule 5: `Loop::ToolResult` needs a tool pipeline inside it.
use brute::{Message, brute_agent, middleware::{Loop, MaxIterations}};

async fn run_agent() {
    let _agent = brute_agent! {
        use Loop::ToolResult;
        use MaxIterations { max: 10 };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn main() {
    drop(run_agent());
}
