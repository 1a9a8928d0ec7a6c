// `Retry` repeats what is below it: a tool pipeline there would run tools again on a
// retry, so `Retry` forbids one further in.
use brute::tools::{DefaultToolPipeline, Tools};
use brute::{Message, brute_agent, middleware::{Loop, Retry}};

async fn run_agent() {
    let _agent = brute_agent! {
        use Loop::ToolResult;
        use Retry;
        use DefaultToolPipeline { tools: Tools::READ_ONLY };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn main() {
    drop(run_agent());
}
