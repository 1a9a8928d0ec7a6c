//! The generated code reaches the runtime only through `$crate` (and `crate = ..` for
//! the derive), so it works when `brute` is renamed in Cargo.toml.
#![allow(missing_docs)]

use renamed_brute::middleware::Loop;
use renamed_brute::{Env, Error, Handler, Middleware};

renamed_brute::kind! {
    /// Layers that weigh the turn.
    pub Weighing;
}

#[derive(Middleware)]
#[middleware(crate = renamed_brute, inside = renamed_brute::kind::Loops, provides = Weighing)]
struct Guarded<A> {
    app: A,
    #[middleware(default = 1)]
    weight: u32,
}

impl<A: Handler<Env>> Handler<Env> for Guarded<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        env.metadata.insert("weight".into(), self.weight.into());
        self.app.call(env).await
    }
}

renamed_brute::brute_agent! {
    type Named<M>;
    use Loop::While;
    use Guarded;
    run M;
}

#[cfg(test)]
mod tests {
    use super::*;
    use renamed_brute::middleware::MaxIterations;
    use renamed_brute::{Message, brute_agent};

    #[test]
    fn renamed_crate_builds_and_runs() {
        let agent = brute_agent! {
            use Loop::While;
            use MaxIterations { max: 3 };
            use Guarded { weight: 7 };
            run |_env| async { Ok(Message::assistant("renamed")) };
        };
        let named: Named<renamed_brute::providers::ScriptedModel> = brute_agent! {
            use Loop::While;
            use Guarded;
            run renamed_brute::providers::ScriptedModel::per_turn([Message::assistant("typed")]);
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let outcome = rt.block_on(agent.start("go")).expect("turn");
        assert_eq!(outcome.text(), Some("renamed"));
        assert_eq!(outcome.env.metadata["weight"], 7);
        assert_eq!(
            rt.block_on(named.start("go")).expect("turn").text(),
            Some("typed")
        );
    }
}
