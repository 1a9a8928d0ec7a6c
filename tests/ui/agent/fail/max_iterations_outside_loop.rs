// Rule 2: `MaxIterations` sits inside a loop layer.
use brute::{brute_agent, MaxIterations, Message};

fn main() {
    let _agent = brute_agent! {
        use MaxIterations { max: 3 };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}
