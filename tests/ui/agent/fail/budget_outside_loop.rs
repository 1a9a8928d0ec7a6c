// `Budget` sits inside a loop layer, where every pass goes through it.
use brute::{Message, brute_agent, middleware::Budget};

async fn run_agent() {
    let _agent = brute_agent! {
        use Budget { tokens: 10_000 };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn main() {
    drop(run_agent());
}
