// Rule 4: at most one session log.
use brute::{Env, Error, Handler, Message, Middleware, brute_agent};

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

#[derive(Middleware)]
#[middleware(provides = brute::kind::SessionLog)]
struct Archive<A> {
    app: A,
}

impl<A: Handler<Env>> Handler<Env> for Archive<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        self.app.call(env).await
    }
}

async fn run_agent() {
    let _agent = brute_agent! {
        use History;
        use Archive;
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn main() {
    drop(run_agent());
}
