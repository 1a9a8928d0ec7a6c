// An unknown option is one error at the option, listing the valid ones.
use brute::{Message, brute_agent, middleware::{Loop, MaxIterations}};

async fn run_agent() {
    let _agent = brute_agent! {
        use Loop::While;
        use MaxIterations { max_iterations: 3 };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn main() {
    drop(run_agent());
}
