// A closure layer with a placement of its own, misplaced: the same message as any
// layer's, naming it as the `use` line writes it.
use brute::kind::Loops;
use brute::stack::{MiddlewareFn, NoFn, PlaceFn, Placement};
use brute::{Message, brute_agent};

/// Inside a loop.
struct PerPass;

impl PlaceFn for PerPass {
    const PLACEMENT: Placement = Placement::new("Audit", module_path!()).inside::<Loops>();
}

type Audit = MiddlewareFn<NoFn, PerPass>;

async fn run_agent() {
    let agent = brute_agent! {
        use Audit { call: async |env, next| next.run(env).await };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
    let _turn = agent.start("go");
}

fn main() {
    drop(run_agent());
}
