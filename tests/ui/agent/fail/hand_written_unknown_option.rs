// A middleware written by hand whose options have no such method: one error at the
// option, naming the hand-written options type (no list: a hand-written middleware
// does not declare its option names to the macro).
use brute::{Middleware, stack::{Layer, NoApp, Placement}};
use brute::{Env, Error, Handler, Message, brute_agent};

struct Audit<A> {
    app: A,
    tag: &'static str,
}

struct AuditOptions {
    tag: &'static str,
}

impl AuditOptions {
    fn tag(mut self, tag: &'static str) -> Self {
        self.tag = tag;
        self
    }
}

impl<A> Layer<A> for AuditOptions {
    type Output = Audit<A>;
    fn layer(self, app: A) -> Audit<A> {
        Audit { app, tag: self.tag }
    }
}

impl Middleware for Audit<NoApp> {
    type Options = AuditOptions;
    const PLACEMENT: Placement = Placement::new("Audit", module_path!());
    fn options() -> AuditOptions {
        AuditOptions { tag: "audit" }
    }
}

impl<A: Handler<Env>> Handler<Env> for Audit<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        env.metadata.insert(self.tag.into(), true.into());
        self.app.call(env).await
    }
}

async fn run_agent() {
    let _agent = brute_agent! {
        use Audit { tag: "a", label: "b" };
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn main() {
    drop(run_agent());
}
