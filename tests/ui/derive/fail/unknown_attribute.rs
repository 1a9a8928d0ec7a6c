// Every attribute error is reported, each at its key (two typos, two errors), and the
// fallback expansion keeps the rest of the code compiling: the `Handler` impl,
// `Layer::options()` and `use Layer { .. }` give no follow-on errors.
use brute::{Env, Error, Handler, Message, Middleware, brute_agent, middleware::Loop};

#[derive(Middleware)]
#[middleware(inside_of = brute::kind::Loops, uniqe)]
struct Layer<A> {
    app: A,
    #[middleware(defualt = 3)]
    max: u32,
}

impl<A: Handler<Env>> Handler<Env> for Layer<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        self.app.call(env).await
    }
}

fn options() {
    let _ = Layer::options().max(3);
}

fn main() {
    let _ = options();
    let _agent = brute_agent! {
        use Loop::While;
        use Layer { max: 3 };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}
