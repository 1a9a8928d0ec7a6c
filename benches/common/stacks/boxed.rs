//! The four layers as `Box<dyn>` trait objects on brute's own types (`Env`, `Message`,
//! `ScriptedModel`), row `boxed-on-brute`: each layer holds the next as a
//! `Box<dyn Layer>` and returns a boxed future (what `#[async_trait]` generates), the
//! design of dynamic middleware stacks.

use std::future::Future;
use std::pin::Pin;

use brute::{Env, Error, ExitReason, model::ToolSpec, providers::ScriptedModel};

use super::scenario::{
    MAX, Noop, PROMPT, add_system_prompt, advertise, complete, last_is_tool_result, run_calls,
    spec, user_env,
};

/// The future a layer returns.
pub type BoxFuture<'a> = Pin<Box<dyn Future<Output = Result<(), Error>> + Send + 'a>>;

/// A layer of the dynamic stack.
pub trait Layer: Send + Sync {
    /// Handles one pass of `env`, calling the next layer.
    fn call<'a>(&'a self, env: &'a mut Env) -> BoxFuture<'a>;
}

/// Prepends the system prompt.
pub struct SystemPrompt {
    prompt: String,
    next: Box<dyn Layer>,
}

impl Layer for SystemPrompt {
    fn call<'a>(&'a self, env: &'a mut Env) -> BoxFuture<'a> {
        Box::pin(async move {
            add_system_prompt(env, &self.prompt);
            self.next.call(env).await
        })
    }
}

/// Calls the next layer again while the last message is a tool result.
pub struct ToolLoop {
    next: Box<dyn Layer>,
}

impl Layer for ToolLoop {
    fn call<'a>(&'a self, env: &'a mut Env) -> BoxFuture<'a> {
        Box::pin(async move {
            loop {
                env.iteration += 1;
                self.next.call(env).await?;
                if env.should_exit.is_some() || !last_is_tool_result(env) {
                    return Ok(());
                }
            }
        })
    }
}

/// Ends the turn once the loop went past `max` passes.
pub struct IterationGuard {
    max: u32,
    next: Box<dyn Layer>,
}

impl Layer for IterationGuard {
    fn call<'a>(&'a self, env: &'a mut Env) -> BoxFuture<'a> {
        Box::pin(async move {
            if env.iteration > self.max {
                env.exit(ExitReason::Limit {
                    by: "MaxIterations",
                    limit: self.max,
                });
                return Ok(());
            }
            self.next.call(env).await
        })
    }
}

/// Advertises the tool, calls the next layer, runs the calls of its reply.
pub struct ToolExecution {
    tool: Noop,
    spec: ToolSpec,
    next: Box<dyn Layer>,
}

impl Layer for ToolExecution {
    fn call<'a>(&'a self, env: &'a mut Env) -> BoxFuture<'a> {
        Box::pin(async move {
            advertise(env, &self.spec);
            self.next.call(env).await?;
            run_calls(env, &self.tool).await;
            Ok(())
        })
    }
}

/// The terminal: one model call.
pub struct ModelCall {
    model: ScriptedModel,
}

impl Layer for ModelCall {
    fn call<'a>(&'a self, env: &'a mut Env) -> BoxFuture<'a> {
        Box::pin(complete(env, &self.model))
    }
}

/// The boxed stack.
pub struct Boxed {
    stack: Box<dyn Layer>,
}

impl Boxed {
    /// System prompt → tool loop → guard → tool execution → model.
    pub fn new(model: ScriptedModel, tool: Noop) -> Self {
        let stack = Box::new(SystemPrompt {
            prompt: PROMPT.to_string(),
            next: Box::new(ToolLoop {
                next: Box::new(IterationGuard {
                    max: MAX,
                    next: Box::new(ToolExecution {
                        tool,
                        spec: spec(),
                        next: Box::new(ModelCall { model }),
                    }),
                }),
            }),
        });
        Boxed { stack }
    }

    /// One turn.
    pub async fn turn(&self) -> Result<Env, Error> {
        let mut env = user_env();
        self.stack.call(&mut env).await?;
        Ok(env)
    }
}
