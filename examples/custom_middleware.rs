//! A custom middleware with its own placement rule: `ToolBudget` ends a turn once the
//! model has made `max_calls` tool calls. Counting calls only makes sense inside the
//! tool loop and above the tool pipeline, so it says so, and `brute_agent!` checks it
//! like any built-in rule:
//!
//! ```text
//! #[middleware(inside = Loops, requires_inner = ToolPipeline, unique)]
//! ```
//!
//! Put `use ToolBudget { .. };` above `use Loop::ToolResult;` and the build fails at
//! that line: "`ToolBudget` must sit inside a layer that provides `Loops`, ... Move
//! `use ToolBudget` below such a layer."
//!
//! ```text
//! cargo run --example custom_middleware
//! BRUTE_MODEL=openai:gpt-4o-mini cargo run --example custom_middleware
//! ```

mod common;

use std::path::Path;

use brute::kind::{Loops, ToolPipeline};
use brute::providers::{AnyModel, ScriptedModel};
use brute::tools::{DefaultToolPipeline, Tools};
use brute::{
    Env, Error, ExitReason, Handler, Message, Middleware, Role, StopReason, ToolCall, brute_agent,
    middleware::{Loop, MaxIterations, SystemPrompt},
};
use serde_json::json;

/// Ends the turn once the model has made `max_calls` tool calls in it. The calls of
/// the pass that reaches the budget still run; no further model call is made.
#[derive(Middleware)]
#[middleware(inside = Loops, requires_inner = ToolPipeline, unique)]
pub struct ToolBudget<A> {
    app: A,
    /// Tool calls allowed per turn (default 5).
    #[middleware(default = 5)]
    max_calls: usize,
}

impl<A: Handler<Env>> Handler<Env> for ToolBudget<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        self.app.call(env).await?; // the model answers, its calls run
        let turn_start = env
            .messages
            .iter()
            .rposition(|m| m.role == Role::User)
            .unwrap_or(0);
        let calls: usize = env.messages[turn_start..]
            .iter()
            .map(|m| m.tool_calls.len())
            .sum();
        if calls >= self.max_calls {
            env.exit(ExitReason::Requested {
                by: "ToolBudget".into(),
                reason: format!("{calls} tool calls made, the budget is {}", self.max_calls),
            });
        }
        Ok(())
    }
}

/// The offline model: lists the folder again and again, and would never stop.
pub(crate) fn script(env: &Env) -> Message {
    let n = common::results_this_turn(env).len();
    Message::tool_calls(
        format!("Looking again ({}).", n + 1),
        vec![ToolCall::new(
            format!("ls{n}"),
            "shell",
            json!({"command": "ls"}),
        )],
    )
}

pub(crate) async fn run(model: AnyModel, root: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let mut agent = brute_agent! {
        use SystemPrompt { prompt: "You explore a folder with the shell." };
        use Loop::ToolResult;
        use MaxIterations { max: 20 };
        use ToolBudget { max_calls: 3 };
        use DefaultToolPipeline { tools: Tools::ALL, root: root.to_path_buf() };
        run model;
    };
    common::print_turns(&mut agent);
    let task = "Explore this folder as thoroughly as you can.";
    println!("user: {task}");
    let outcome = agent.start(task).await?;
    println!("(stopped: {:?})", outcome.stop);
    let calls: usize = outcome
        .env
        .messages
        .iter()
        .map(|m| m.tool_calls.len())
        .sum();
    match outcome.stop {
        // A real model may finish before the budget; the scripted one never does.
        StopReason::Completed => Ok(()),
        StopReason::Exited(ExitReason::Requested { ref by, .. })
            if by == "ToolBudget" && calls == 3 =>
        {
            Ok(())
        }
        other => Err(format!(
            "expected the budget to end the turn at 3 calls, got {other:?} after {calls}"
        )
        .into()),
    }
}

#[tokio::main]
async fn main() -> Result<(), common::Report> {
    let model = common::model(ScriptedModel::from_fn(script).named("scripted"));
    let root = common::fs::tempdir()?;
    common::fs::write(root.path().join("a.txt"), "a\n")?;
    Ok(run(model, root.path()).await?)
}
