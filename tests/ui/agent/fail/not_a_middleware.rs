use brute::{brute_agent, Message};

struct NotOne {
    _name: String,
}

fn main() {
    let _agent = brute_agent! {
        use NotOne;
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}
