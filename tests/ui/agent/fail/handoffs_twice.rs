// A stack hands off through one `Handoffs` line: two would both advertise and follow
// transfers, so `Handoffs` is unique.
use brute::{Message, brute_agent, middleware::{Handoff, Handoffs}};

fn main() {
    let billing = brute_agent! { run |_env| async { Ok(Message::assistant("billing")) }; };
    let refunds = brute_agent! { run |_env| async { Ok(Message::assistant("refunds")) }; };
    let _agent = brute_agent! {
        use Handoffs { to: Handoff::new("billing", billing) };
        use Handoffs { to: Handoff::new("refunds", refunds) };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}
