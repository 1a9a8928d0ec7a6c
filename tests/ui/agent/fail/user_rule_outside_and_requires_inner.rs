// Rule 6: `outside` and `requires_inner` on user middleware.
use brute::{Env, Error, Handler, Message, Middleware, brute_agent};

brute::kind! {
    /// Layers that cache model answers.
    pub Cache;
}

#[derive(Middleware)]
#[middleware(provides = Cache)]
struct AnswerCache<A> {
    app: A,
}

#[derive(Middleware)]
#[middleware(outside = Cache, requires_inner = Cache)]
struct CacheStats<A> {
    app: A,
}

impl<A: Handler<Env>> Handler<Env> for AnswerCache<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        self.app.call(env).await
    }
}

impl<A: Handler<Env>> Handler<Env> for CacheStats<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        self.app.call(env).await
    }
}

async fn run_agent() {
    let _agent = brute_agent! {
        use AnswerCache;
        use CacheStats;
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn main() {
    drop(run_agent());
}
