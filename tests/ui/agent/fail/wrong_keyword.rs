use brute::{brute_agent, Loop, Message};

fn main() {
    let _agent = brute_agent! {
        with Loop::While;
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}
