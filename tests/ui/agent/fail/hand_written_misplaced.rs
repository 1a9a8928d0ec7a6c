// A middleware written by hand against the public contract, with its own placement
// rule, misplaced: the same message as a derived middleware's (see user_rule_inside).
use brute::kind::Loops;
use brute::{Middleware, stack::{Layer, NoApp, Placement}};
use brute::{Env, Error, Handler, Message, brute_agent};

struct Audit<A> {
    app: A,
}

struct AuditLayer;

impl<A> Layer<A> for AuditLayer {
    type Output = Audit<A>;
    fn layer(self, app: A) -> Audit<A> {
        Audit { app }
    }
}

impl Middleware for Audit<NoApp> {
    type Options = AuditLayer;
    const PLACEMENT: Placement = Placement::new("Audit", module_path!()).inside::<Loops>();
    fn options() -> AuditLayer {
        AuditLayer
    }
}

impl<A: Handler<Env>> Handler<Env> for Audit<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        self.app.call(env).await
    }
}

async fn run_agent() {
    let _agent = brute_agent! {
        use Audit;
        run |_env| async { Ok(Message::assistant("hi")) };
    };
}

fn main() {
    drop(run_agent());
}
