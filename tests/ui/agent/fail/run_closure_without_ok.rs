// A `run` closure answers with `Ok(..)`: one that returns the message itself is one
// error at the message, naming the type it must be and the fix (wrap it in `Ok`), not
// a mismatch between two async closure bodies.
use brute::{Message, brute_agent};

async fn run_agent() {
    let agent = brute_agent! {
        run |_env| async { Message::assistant("hi") };
    };
    let _turn = agent.start("go");
}

fn main() {
    drop(run_agent());
}
