//! The hand-written loop on brute's own types (`Env`, `Message`, `ScriptedModel`): what
//! brute's data model costs without its layers. Row `hand-on-brute`; the limit is the
//! independent `hand` row (`independent/hand.rs`).

use brute::{Env, Error, ExitReason, model::ToolSpec, providers::ScriptedModel};

use super::scenario::{
    MAX, Noop, PROMPT, add_system_prompt, advertise, complete, last_is_tool_result, run_calls,
    spec, user_env,
};

/// The hand-written loop: system prompt, tool loop, iteration guard and tool execution
/// inlined into one async fn.
pub struct Hand {
    model: ScriptedModel,
    tool: Noop,
    spec: ToolSpec,
}

impl Hand {
    /// The loop over `model`, running `tool`.
    pub fn new(model: ScriptedModel, tool: Noop) -> Self {
        Hand {
            model,
            tool,
            spec: spec(),
        }
    }

    /// One turn.
    pub async fn turn(&self) -> Result<Env, Error> {
        let mut env = user_env();
        add_system_prompt(&mut env, PROMPT);
        advertise(&mut env, &self.spec);
        loop {
            env.iteration += 1;
            if env.iteration > MAX {
                env.exit(ExitReason::Limit {
                    by: "MaxIterations",
                    limit: MAX,
                });
                return Ok(env);
            }
            complete(&mut env, &self.model).await?;
            run_calls(&mut env, &self.tool).await;
            if !last_is_tool_result(&env) {
                return Ok(env);
            }
        }
    }
}
