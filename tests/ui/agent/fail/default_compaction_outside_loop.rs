// Rule 3, with the built-in compactor: it must sit inside a loop layer.
use brute::compaction::DefaultCompactionPipeline;
use brute::{Message, brute_agent, middleware::Loop};

async fn run_agent() {
    let _agent = brute_agent! {
        use DefaultCompactionPipeline { window: 1_000 };
        use Loop::While;
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn main() {
    drop(run_agent());
}
