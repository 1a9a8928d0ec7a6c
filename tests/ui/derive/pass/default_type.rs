// An optional generic option has an explicit default type: left unset it holds that
// type's default value (no behaviour on a placeholder), and setting it changes the type.
use brute::{Env, Error, Handler, Message, Middleware, brute_agent, middleware::Loop};

/// Tags replies; the tag is any `Display`, by default the string "bot".
#[derive(Middleware)]
struct Tag<A, T> {
    app: A,
    #[middleware(default_type = &'static str, default = "bot")]
    tag: T,
}

impl<A: Handler<Env>, T: std::fmt::Display + Send + Sync> Handler<Env> for Tag<A, T> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        self.app.call(env).await?;
        let tag = format!("[{}] ", self.tag);
        if let Some(last) = env.messages.last_mut() {
            last.content.insert_str(0, &tag);
        }
        Ok(())
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    runtime.block_on(async {
        let unset = brute_agent! {
            use Loop::While { condition: |_env| false };
            use Tag;
            run |_env| async { Ok(Message::assistant("hi")) };
        };
        let outcome = unset.start("hello").await.expect("turn");
        assert_eq!(outcome.text(), Some("[bot] hi"));

        let set = brute_agent! {
            use Loop::While { condition: |_env| false };
            use Tag { tag: 7 };
            run |_env| async { Ok(Message::assistant("hi")) };
        };
        let outcome = set.start("hello").await.expect("turn");
        assert_eq!(outcome.text(), Some("[7] hi"));
    });
}
