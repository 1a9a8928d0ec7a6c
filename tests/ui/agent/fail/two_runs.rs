use brute::{Message, brute_agent};

fn main() {
    let _agent = brute_agent! {
        run |_env| async { Ok(Message::assistant("one")) };
        run |_env| async { Ok(Message::assistant("two")) };
    };
}
