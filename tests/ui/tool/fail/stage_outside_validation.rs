// A per-call stage of one's own that reads checked calls declares
// `inside = ToolValidation`, and is held to it like the built-in stages.
use brute::tools::{Execute, Snapshot, ToolCallEnv, ToolSet, Validate};
use brute::{Error, Handler, Middleware};

#[derive(Middleware)]
#[middleware(inside = brute::tools::ToolValidation)]
struct Audit<A> {
    app: A,
}

impl<'a, A, T> Handler<ToolCallEnv<'a, T>> for Audit<A>
where
    A: Handler<ToolCallEnv<'a, T>>,
    T: ToolSet,
{
    async fn call(&self, env: &mut ToolCallEnv<'a, T>) -> Result<(), Error> {
        self.app.call(env).await
    }
}

async fn run_agent() {
    let _per_call = brute::pipeline! {
        use Audit;
        use Validate;
        use Snapshot;
        run Execute;
    };
}

fn main() {
    drop(run_agent());
}
