use brute::{Message, brute_agent, middleware::Loop};

fn main() {
    let _agent = brute_agent! {
        with Loop::While;
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}
