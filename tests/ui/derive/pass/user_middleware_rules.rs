// A user middleware with its own placement rules, placed correctly, next to a user
// kind provider and a generic option.
use brute::{Env, Error, Handler, Message, Middleware, brute_agent, middleware::Loop};

brute::kind! {
    /// Layers that authenticate the caller.
    pub Auth;
}

#[derive(Middleware)]
#[middleware(provides = Auth, unique, outside = brute::kind::Loops)]
struct Authenticate<A, C> {
    app: A,
    /// Who may talk to the agent: a generic option.
    check: C,
}

#[derive(Middleware)]
#[middleware(inside = Auth, inside = brute::kind::Loops)]
struct Audit<A> {
    app: A,
}

impl<A: Handler<Env>, C: Fn(&Env) -> bool + Send + Sync> Handler<Env> for Authenticate<A, C> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        if !(self.check)(env) {
            return Err(Error::layer("Authenticate", "not allowed"));
        }
        self.app.call(env).await
    }
}

impl<A: Handler<Env>> Handler<Env> for Audit<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        env.metadata.insert("audited".into(), env.iteration.into());
        self.app.call(env).await
    }
}

fn allow_all(_env: &Env) -> bool {
    true
}

fn main() {
    let agent = brute_agent! {
        use Authenticate { check: allow_all };
        use Loop::While;
        use Audit;
        run |_env| async { Ok(Message::assistant("ok")) };
    };
    let outcome = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(agent.start("go"))
        .expect("turn");
    assert_eq!(outcome.env.metadata["audited"], 1);
}
