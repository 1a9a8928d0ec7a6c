use brute::{Message, brute_agent, middleware::Loop};

fn main() {
    let _agent = brute_agent! {
        run |_env| async { Ok(Message::assistant("hi")) };
        use Loop::While;
    };
}
