// `run async move |env| ..` whose body borrows what the closure moved in: its future
// would borrow the closure, so it is not a `Fn` and cannot be called once per pass.
// The fix the docs give: capture a reference, or `async |env| ..` without `move`.
use brute::{Message, brute_agent};

fn main() {
    let greeting = String::from("hi");
    let _agent = brute_agent! {
        run async move |env| Ok(Message::assistant(format!("{greeting} {}", env.messages.len())));
    };
}
