// A layer that is not `Send` (an option holding a value that must stay on its
// thread) is one error at its `use` line: every stack must run on a multi-threaded
// runtime.
use std::fmt::{self, Display};
use std::marker::PhantomData;

use brute::{Env, Error, Handler, Middleware, brute_agent, providers::ScriptedModel};

/// A prefix tied to the thread that made it (shared references are fine).
struct ThreadPrefix(PhantomData<*const ()>);

// SAFETY: it holds no data; only sending it to another thread is refused.
unsafe impl Sync for ThreadPrefix {}

impl Display for ThreadPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("> ")
    }
}

/// Prefixes every answer.
#[derive(Middleware)]
struct Prefix<A, T> {
    app: A,
    prefix: T,
}

impl<A: Handler<Env>, T: Display + Send + Sync> Handler<Env> for Prefix<A, T> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        self.app.call(env).await?;
        if let Some(last) = env.messages.last_mut() {
            last.content.insert_str(0, &self.prefix.to_string());
        }
        Ok(())
    }
}

async fn run_agent() {
    let agent = brute_agent! {
        use Prefix { prefix: ThreadPrefix(PhantomData) };
        run ScriptedModel::new([]);
    };
    let _turn = agent.start("go");
}

fn main() {
    drop(run_agent());
}
