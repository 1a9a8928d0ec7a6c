// Rule 3: compaction sits inside a loop layer. The rule belongs to the kind
// `Compaction`, so it binds every compactor, built-in or not.
use brute::{Env, Error, Handler, Message, Middleware, brute_agent};

#[derive(Middleware)]
#[middleware(provides = brute::kind::Compaction)]
struct Compactor<A> {
    app: A,
}

impl<A: Handler<Env>> Handler<Env> for Compactor<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        self.app.call(env).await
    }
}

async fn run_agent() {
    let _agent = brute_agent! {
        use Compactor;
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn main() {
    drop(run_agent());
}
