// Issue 14 trap 3: a type that is not a middleware is reported once, at its `use`,
// as "not a middleware", with no internal names.
use brute::{Message, brute_agent, providers::OpenAi};

struct NotOne {
    _name: String,
}

fn a_struct() {
    let _agent = brute_agent! {
        use NotOne;
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn a_model() {
    let _agent = brute_agent! {
        use OpenAi;
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn main() {
    a_struct();
    a_model();
}
