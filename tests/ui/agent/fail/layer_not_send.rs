// A layer that is not `Send` (an option holding an `Rc`) is one error at its `use`
// line: every stack must run on a multi-threaded runtime.
use std::fmt::Display;
use std::rc::Rc;

use brute::{Env, Error, Handler, Message, Middleware, brute_agent};

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

fn main() {
    let agent = brute_agent! {
        use Prefix { prefix: Rc::new("> ") };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
    let _turn = agent.start("go");
}
