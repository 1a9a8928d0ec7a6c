// Rule 6: user middleware declares its own rules and gets the same diagnostics.
use brute::{Env, Error, Handler, Message, Middleware, brute_agent};

brute::kind! {
    /// Layers that authenticate the caller.
    pub Auth;
}

#[derive(Middleware)]
#[middleware(inside = Auth)]
struct Audit<A> {
    app: A,
}

impl<A: Handler<Env>> Handler<Env> for Audit<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        self.app.call(env).await
    }
}

async fn run_agent() {
    let _agent = brute_agent! {
        use Audit;
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn main() {
    drop(run_agent());
}
