// Rule 6: `unique` on a user middleware.
use brute::{Env, Error, Handler, Message, Middleware, brute_agent};

#[derive(Middleware)]
#[middleware(unique)]
struct Metrics<A> {
    app: A,
}

impl<A: Handler<Env>> Handler<Env> for Metrics<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        self.app.call(env).await
    }
}

async fn run_agent() {
    let _agent = brute_agent! {
        use Metrics;
        use Metrics;
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn main() {
    drop(run_agent());
}
