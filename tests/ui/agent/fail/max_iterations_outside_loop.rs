// Rule 2: `MaxIterations` sits inside a loop layer.
use brute::{Message, brute_agent, middleware::MaxIterations};

async fn run_agent() {
    let _agent = brute_agent! {
        use MaxIterations { max: 3 };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn main() {
    drop(run_agent());
}
