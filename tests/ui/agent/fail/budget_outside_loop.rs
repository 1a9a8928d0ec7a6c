// `Budget` sits inside a loop layer, where every pass goes through it.
use brute::{Message, brute_agent, middleware::Budget};

fn main() {
    let _agent = brute_agent! {
        use Budget { tokens: 10_000 };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}
