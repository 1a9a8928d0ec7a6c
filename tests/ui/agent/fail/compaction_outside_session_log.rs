// Rule 3: compaction sits inside `SessionLog` when both are present (and rule 4:
// the session log sits outside every loop).
use brute::{Env, Error, Handler, Message, Middleware, brute_agent, middleware::Loop};

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

#[derive(Middleware)]
#[middleware(provides = brute::kind::SessionLog)]
struct History<A> {
    app: A,
}

impl<A: Handler<Env>> Handler<Env> for History<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        self.app.call(env).await
    }
}

async fn run_agent() {
    let _agent = brute_agent! {
        use Loop::While;
        use Compactor;
        use History;
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn main() {
    drop(run_agent());
}
