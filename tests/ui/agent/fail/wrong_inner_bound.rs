// A middleware whose `Handler` impl asks of its inner app what the stack below it does
// not have is one error at its `use` line, in words, with the fix: not the unmet bound
// on the types the stack is built of (`Watch<Terminal<ScriptedModel>>: Default`).
use brute::{Env, Error, Handler, Middleware, brute_agent, providers::ScriptedModel};

/// Wants an inner app it can make afresh.
#[derive(Middleware)]
struct Fresh<A> {
    app: A,
}

impl<A: Handler<Env> + Default> Handler<Env> for Fresh<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        A::default().call(env).await
    }
}

async fn run_agent() {
    let agent = brute_agent! {
        use Fresh;
        run ScriptedModel::new([]);
    };
    let _turn = agent.start("go");
}

fn main() {
    drop(run_agent());
}
