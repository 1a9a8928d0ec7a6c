use brute::{Message, brute_agent, middleware::{Loop, MaxIterations}};

async fn run_agent() {
    let _agent = brute_agent! {
        use Loop::While;
        use MaxIterations { max: "three" };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn main() {
    drop(run_agent());
}
