use brute::{brute_agent, Loop, Message};

fn main() {
    let _agent = brute_agent! {
        run |_env| async { Ok(Message::assistant("hi")) };
        use Loop::While;
    };
}
