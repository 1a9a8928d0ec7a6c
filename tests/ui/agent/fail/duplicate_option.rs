use brute::{Message, brute_agent, middleware::{Loop, MaxIterations}};

async fn run_agent() {
    let _agent = brute_agent! {
        use Loop::While;
        use MaxIterations { max: 3, max: 4 };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn main() {
    drop(run_agent());
}
