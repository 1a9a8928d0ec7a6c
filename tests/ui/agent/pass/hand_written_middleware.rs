// A middleware written by hand against the public contract (no derive, no
// `__private`): its own options type with a builder method, its own placement rule,
// used in `brute_agent!` and in `Stack`, its inner app reached with `Wraps`; and a
// derived middleware with a `new` of its own.
use brute::stack::Stack;
use brute::kind::Loops;
use brute::middleware::Loop as LoopLayer;
use brute::{Middleware, stack::{Layer, NoApp, Placement, Wraps}};
use brute::{Env, Error, Handler, Message, brute_agent, providers::ScriptedModel};

/// Counts the passes of a turn in `env.metadata[key]`.
struct CountPasses<A> {
    app: A,
    key: &'static str,
}

/// The options of `CountPasses`.
struct CountPassesLayer {
    key: &'static str,
}

impl CountPassesLayer {
    fn key(mut self, key: &'static str) -> Self {
        self.key = key;
        self
    }
}

const PLACEMENT: Placement = Placement::new("CountPasses", module_path!())
    .inside::<Loops>()
    .unique();

impl<A> Layer<A> for CountPassesLayer {
    type Output = CountPasses<A>;
    fn layer(self, app: A) -> CountPasses<A> {
        CountPasses { app, key: self.key }
    }
}

impl Middleware for CountPasses<NoApp> {
    type Options = CountPassesLayer;
    const PLACEMENT: Placement = PLACEMENT;
    fn options() -> CountPassesLayer {
        CountPassesLayer { key: "passes" }
    }
}

/// What `Stack::layer` takes.
impl Middleware for CountPassesLayer {
    type Options = CountPassesLayer;
    const PLACEMENT: Placement = PLACEMENT;
    fn options() -> CountPassesLayer {
        CountPasses::options()
    }
}

impl<A: Handler<Env>> Handler<Env> for CountPasses<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        env.metadata.insert(self.key.into(), env.iteration.into());
        self.app.call(env).await
    }
}

/// A derived middleware may have a `new` of its own: the derive writes nothing into
/// this module.
#[derive(brute::Middleware)]
struct Tag<A> {
    app: A,
    #[middleware(default = "[bot] ")]
    prefix: &'static str,
}

impl<A> Tag<A> {
    #[allow(dead_code)]
    fn new(app: A) -> Self {
        Tag { app, prefix: "" }
    }
}

impl<A: Handler<Env>> Handler<Env> for Tag<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        self.app.call(env).await?;
        if let Some(last) = env.messages.last_mut() {
            last.content.insert_str(0, self.prefix);
        }
        Ok(())
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let agent = brute_agent! {
        use Tag { prefix: "> " };
        use LoopLayer::While { condition: |env| env.iteration < 3 };
        use CountPasses { key: "n" };
        run |_env| async { Ok(Message::assistant("pass")) };
    };
    // The inner app of a middleware, reached from outside: `Tag`'s is the loop.
    let _loop: &LoopLayer::While<_, _> = agent.stack().get_ref();
    let outcome = runtime.block_on(agent.start("go")).expect("turn");
    assert_eq!(outcome.env.metadata["n"], 3);
    assert_eq!(outcome.text(), Some("> pass"));

    let agent = Stack::new()
        .layer(LoopLayer::While::options().condition(|env| env.iteration < 2))
        .layer(CountPasses::options().key("k"))
        .run(ScriptedModel::new([
            Message::assistant("one"),
            Message::assistant("two"),
        ]));
    let outcome = runtime.block_on(agent.start("go")).expect("turn");
    assert_eq!(outcome.env.metadata["k"], 2);
    assert_eq!(outcome.text(), Some("two"));
}


#[test]
fn wraps_reaches_the_inner_app() {
    let mut tag = Tag::options().prefix("x").layer(7u8);
    *tag.get_mut() += 1;
    assert_eq!(*tag.get_ref(), 8);
    assert_eq!(tag.into_inner(), 8);
}
