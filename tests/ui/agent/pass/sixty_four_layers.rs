// 64 layers compile under the default recursion_limit: `brute_agent!` puts a boxing
// boundary every 16 layers.
use brute::{Env, Error, Handler, Message, Middleware, brute_agent, middleware::Loop};

#[derive(Middleware)]
struct Pass<A> {
    app: A,
}

impl<A: Handler<Env>> Handler<Env> for Pass<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        let seen = env.metadata.get("layers").and_then(|v| v.as_u64()).unwrap_or(0);
        env.metadata.insert("layers".into(), (seen + 1).into());
        self.app.call(env).await
    }
}

fn main() {
    let agent = brute_agent! {
        use Loop::While { condition: |env| env.iteration < 2 };
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        use Pass;
        run |_env| async { Ok(Message::assistant("deep")) };
    };
    // The agent future is Send even with boxing boundaries inside.
    fn assert_send<T: Send>(_: &T) {}
    let turn = agent.start("go");
    assert_send(&turn);
    let outcome = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(turn)
        .expect("turn");
    assert_eq!(outcome.text(), Some("deep"));
    assert_eq!(outcome.env.metadata["layers"], 63 * 2);
}
