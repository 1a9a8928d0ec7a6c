// A 6-layer agent: built-in and user layers, options with and without values.
use brute::{Env, Error, Handler, Message, Middleware, brute_agent, middleware::{Loop, MaxIterations, SystemPrompt}};

#[derive(Middleware)]
struct Note<A> {
    app: A,
    #[middleware(into, default = "note")]
    text: String,
}

impl<A: Handler<Env>> Handler<Env> for Note<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        env.metadata.insert(self.text.clone(), true.into());
        self.app.call(env).await
    }
}

fn main() {
    let agent = brute_agent! {
        use Note { text: "outer" };
        use SystemPrompt { prompt: "You are terse." };
        use Loop::While { condition: |env| env.iteration < 2 };
        use MaxIterations { max: 5 };
        use Note;
        use Note { text: "inner" };
        run |_env| async { Ok(Message::assistant("done")) };
    };
    let outcome = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(agent.start("go"))
        .expect("turn");
    assert_eq!(outcome.text(), Some("done"));
    assert_eq!(outcome.env.iteration, 2);
    for key in ["outer", "note", "inner"] {
        assert!(outcome.env.metadata.contains_key(key), "{key}");
    }
}
