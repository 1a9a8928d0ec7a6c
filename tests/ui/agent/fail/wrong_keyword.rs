use brute::{Message, brute_agent, middleware::Loop};

async fn run_agent() {
    let _agent = brute_agent! {
        with Loop::While;
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn main() {
    drop(run_agent());
}
