// `CallLimit` sits inside a loop layer: it counts the loop's passes.
use brute::{Message, brute_agent, middleware::CallLimit};

async fn run_agent() {
    let _agent = brute_agent! {
        use CallLimit { model_calls: 3 };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn main() {
    drop(run_agent());
}
