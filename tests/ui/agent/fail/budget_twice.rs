// At most one `Budget` per stack: set both limits on the one line.
use brute::{Message, brute_agent, cost::Cost, middleware::{Budget, Loop}};

async fn run_agent() {
    let _agent = brute_agent! {
        use Loop::While { condition: |_env| true };
        use Budget { tokens: 10_000 };
        use Budget { cost: Cost::from_cents(5) };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn main() {
    drop(run_agent());
}
