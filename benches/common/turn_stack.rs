//! The 6-layer stack of the `turn` benchmarks, as `brute_agent!` and by hand.

use brute::{
    Agent, Env, Error, Handler, Message, Middleware, Role, brute_agent,
    middleware::{Loop, MaxIterations, SystemPrompt},
};

/// A layer that only calls the next one: pure stack overhead.
#[derive(Middleware)]
struct Pass<A> {
    app: A,
}

impl<A: Handler<Env>> Handler<Env> for Pass<A> {
    fn call(&self, env: &mut Env) -> impl Future<Output = Result<(), Error>> + Send {
        self.app.call(env)
    }
}

const PROMPT: &str = "You are terse.";
const PASSES: u32 = 3;
const MAX: u32 = 25;

pub mod hand {
    //! The same six layers as nested async functions.
    use super::*;

    pub async fn turn(prompt: &str) -> Result<Env, Error> {
        let mut env = Env::new();
        env.messages.push(Message::user(prompt));
        system_prompt(&mut env).await?;
        Ok(env)
    }

    async fn system_prompt(env: &mut Env) -> Result<(), Error> {
        if env.messages.first().is_none_or(|m| m.role != Role::System) {
            env.messages.insert(0, Message::system(PROMPT));
        }
        run_loop(env).await
    }

    async fn run_loop(env: &mut Env) -> Result<(), Error> {
        loop {
            env.iteration += 1;
            max_iterations(env).await?;
            if env.should_exit.is_some() || env.iteration >= PASSES {
                return Ok(());
            }
        }
    }

    async fn max_iterations(env: &mut Env) -> Result<(), Error> {
        if env.iteration > MAX {
            env.exit(brute::ExitReason::Limit {
                by: "MaxIterations",
                limit: MAX,
            });
            return Ok(());
        }
        pass1(env).await
    }

    async fn pass1(env: &mut Env) -> Result<(), Error> {
        pass2(env).await
    }

    async fn pass2(env: &mut Env) -> Result<(), Error> {
        pass3(env).await
    }

    async fn pass3(env: &mut Env) -> Result<(), Error> {
        terminal(env).await
    }

    async fn terminal(env: &mut Env) -> Result<(), Error> {
        env.messages.push(Message::assistant("ok"));
        Ok(())
    }
}

/// The same six layers built by `brute_agent!`.
pub fn agent() -> Agent<impl Handler<Env>> {
    brute_agent! {
        use SystemPrompt { prompt: PROMPT };
        use Loop::While { condition: |env| env.iteration < PASSES };
        use MaxIterations { max: MAX };
        use Pass;
        use Pass;
        use Pass;
        run |_env| async { Ok(Message::assistant("ok")) };
    }
}
