// Issue 14 trap 3: a type that is not a middleware is reported once, at its `use`,
// as "not a middleware", with no internal names. (A model: model_as_layer.rs.)
use brute::{Message, brute_agent};

struct NotOne {
    _name: String,
}

async fn a_struct() {
    let agent = brute_agent! {
        use NotOne;
        run |_env| async { Ok(Message::assistant("hi")) };
    };
    let _ = agent.start("go").await;
}

fn main() {
    drop(a_struct());
}
