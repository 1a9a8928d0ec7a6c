// `Handoffs` must see the model's reply before the tool pipeline does, or the pipeline
// would answer a `transfer_to_..` call as an unknown tool: it forbids a tool pipeline
// further in.
use brute::tools::{DefaultToolPipeline, Tools};
use brute::{Message, brute_agent, middleware::{Handoff, Handoffs, Loop}};

async fn run_agent() {
    let billing = brute_agent! { run |_env| async { Ok(Message::assistant("billing")) }; };
    let _agent = brute_agent! {
        use Loop::ToolResult;
        use Handoffs { to: Handoff::new("billing", billing) };
        use DefaultToolPipeline { tools: Tools::READ_ONLY };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn main() {
    drop(run_agent());
}
