// At most one `CallLimit` per stack: its turn and session limits share one count,
// so set them all on the one line.
use brute::{Message, brute_agent, middleware::{CallLimit, Loop}};

async fn run_agent() {
    let _agent = brute_agent! {
        use Loop::While { condition: |_env| true };
        use CallLimit { model_calls: 10 };
        use CallLimit { session_tool_calls: 50 };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn main() {
    drop(run_agent());
}
