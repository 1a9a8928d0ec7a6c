//! The brute rows: the default stack, the default stack with each tool-pipeline
//! feature a user can switch off today switched off, and two minimal tool layers of
//! our own. One function per row; the tool is the only other brute-specific code.

use std::path::PathBuf;
use std::sync::OnceLock;

use brute::tools::{
    Approval, Decision, Execute, PreparedCall, ToolContext, ToolError, ToolOutput, ToolSet,
    Truncation, Validate,
};
use brute::{
    Agent, Env, Error, Handler, Middleware, brute_agent,
    middleware::{Loop, MaxIterations, SystemPrompt},
    model::ToolSpec,
    providers::ScriptedModel,
    tools::{DefaultToolPipeline, Tool},
};

use super::scenario::{
    DESCRIPTION, Noop, NoopArgs, PROMPT, TOOL, USER, advertise, run_calls, spec,
};

/// The no-op tool as a brute `Tool` written by hand, for the rows that switch its
/// truncation off (`#[tool]` has no option for it) and the rows that compare the
/// pipelines with it.
#[derive(Clone, Debug)]
pub struct NoopTool {
    body: Noop,
    truncation: Truncation,
}

impl NoopTool {
    /// The tool with brute's default truncation (keep the head of a long output).
    pub fn new(body: Noop) -> Self {
        NoopTool {
            body,
            truncation: Truncation::Head,
        }
    }

    /// The tool with truncation switched off (`Tool::truncation` is `None`).
    pub fn untruncated(body: Noop) -> Self {
        NoopTool {
            body,
            truncation: Truncation::None,
        }
    }
}

impl Tool for NoopTool {
    type Args = NoopArgs;

    fn name(&self) -> &str {
        TOOL
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    async fn call(&self, args: NoopArgs, _cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::from(self.body.run(args).await))
    }

    fn truncation(&self) -> Truncation {
        self.truncation
    }
}

/// A brute agent and the tool body it runs.
pub struct BruteRow<H> {
    agent: Agent<H>,
}

impl<H: Handler<Env>> BruteRow<H> {
    /// One turn.
    pub async fn turn(&self) -> Result<Env, Error> {
        Ok(self.agent.start(USER).await?.env)
    }
}

/// The no-op tool as a user writes it: `#[tool]` on a method, so that it holds the
/// run counter, with the scenario's schema given exactly (the other rows advertise
/// `scenario::spec()`, whose argument type documents itself differently from the one
/// `#[tool]` generates). In a module of its own: `#[tool]` names its arguments
/// `NoopArgs`, as the scenario does.
mod as_method {
    use brute::tools::ToolError;

    use super::super::scenario::{self, Noop, spec};

    /// The tool: the body with its run counter.
    pub struct NoopMethod {
        pub body: Noop,
    }

    #[brute::tool(schema = (*spec().parameters).clone())]
    impl NoopMethod {
        /// Does nothing and says so.
        async fn noop(&self, n: u64) -> Result<String, ToolError> {
            Ok(self.body.run(scenario::NoopArgs { n }).await)
        }
    }
}

use as_method::NoopMethod;

/// brute's default stack.
pub fn default_stack(
    model: ScriptedModel,
    tool: Noop,
    root: PathBuf,
) -> BruteRow<impl Handler<Env>> {
    let agent = brute_agent! {
        use SystemPrompt { prompt: PROMPT };
        use Loop::ToolResult;
        use MaxIterations;
        use DefaultToolPipeline { tools: (NoopMethod { body: tool },), root: root };
        run model;
    };
    BruteRow { agent }
}

/// The default stack with the per-call pipeline's `Snapshot` stage (file locks and
/// undo snapshots) left out: `Validate` → `Execute`.
pub fn no_snapshot(model: ScriptedModel, tool: Noop, root: PathBuf) -> BruteRow<impl Handler<Env>> {
    let per_call = brute::pipeline! {
        use Validate;
        run Execute;
    };
    let agent = brute_agent! {
        use SystemPrompt { prompt: PROMPT };
        use Loop::ToolResult;
        use MaxIterations;
        use DefaultToolPipeline { tools: (NoopTool::new(tool),), root: root, pipeline: per_call };
        run model;
    };
    BruteRow { agent }
}

/// The default stack with a tool that switches truncation off.
pub fn no_truncation(
    model: ScriptedModel,
    tool: Noop,
    root: PathBuf,
) -> BruteRow<impl Handler<Env>> {
    let agent = brute_agent! {
        use SystemPrompt { prompt: PROMPT };
        use Loop::ToolResult;
        use MaxIterations;
        use DefaultToolPipeline { tools: (NoopTool::untruncated(tool),), root: root };
        run model;
    };
    BruteRow { agent }
}

/// The default stack with everything a user can switch off switched off.
pub fn all_off(model: ScriptedModel, tool: Noop, root: PathBuf) -> BruteRow<impl Handler<Env>> {
    let per_call = brute::pipeline! {
        use Validate;
        run Execute;
    };
    let agent = brute_agent! {
        use SystemPrompt { prompt: PROMPT };
        use Loop::ToolResult;
        use MaxIterations;
        use DefaultToolPipeline { tools: (NoopTool::untruncated(tool),), root: root, pipeline: per_call };
        run model;
    };
    BruteRow { agent }
}

/// The default stack with an approval policy given by a function (`Approval`), which
/// allows every call: what the `approval` option costs over the default, `AllowAll`,
/// which compiles to no approval code.
pub fn with_approval(
    model: ScriptedModel,
    tool: Noop,
    root: PathBuf,
) -> BruteRow<impl Handler<Env>> {
    let policy = Approval::new(|_call| Decision::Allow);
    let agent = brute_agent! {
        use SystemPrompt { prompt: PROMPT };
        use Loop::ToolResult;
        use MaxIterations;
        use DefaultToolPipeline { tools: (NoopMethod { body: tool },), root: root, approval: policy };
        run model;
    };
    BruteRow { agent }
}

/// The default stack without the per-call timeout.
pub fn no_timeout(model: ScriptedModel, tool: Noop, root: PathBuf) -> BruteRow<impl Handler<Env>> {
    let agent = brute_agent! {
        use SystemPrompt { prompt: PROMPT };
        use Loop::ToolResult;
        use MaxIterations;
        use DefaultToolPipeline { tools: (NoopMethod { body: tool },), root: root, timeout: None };
        run model;
    };
    BruteRow { agent }
}

/// The default stack with one value to hide that never occurs in a result: what
/// scanning every result for one secret costs.
pub fn redact_one(model: ScriptedModel, tool: Noop, root: PathBuf) -> BruteRow<impl Handler<Env>> {
    let agent = brute_agent! {
        use SystemPrompt { prompt: PROMPT };
        use Loop::ToolResult;
        use MaxIterations;
        use DefaultToolPipeline {
            tools: (NoopMethod { body: tool },),
            root: root,
            redact: ["sk-bench-0123456789abcdef"],
        };
        run model;
    };
    BruteRow { agent }
}

/// The default stack without the environment's secrets (the same as the default when
/// the environment holds none that look secret, as on the bench machine).
pub fn no_env_secrets(
    model: ScriptedModel,
    tool: Noop,
    root: PathBuf,
) -> BruteRow<impl Handler<Env>> {
    let agent = brute_agent! {
        use SystemPrompt { prompt: PROMPT };
        use Loop::ToolResult;
        use MaxIterations;
        use DefaultToolPipeline { tools: (NoopMethod { body: tool },), root: root, env_secrets: false };
        run model;
    };
    BruteRow { agent }
}

/// The default stack with [`RunTools`] instead of `DefaultToolPipeline`.
pub fn minimal(model: ScriptedModel, tool: Noop, root: PathBuf) -> BruteRow<impl Handler<Env>> {
    let agent = brute_agent! {
        use SystemPrompt { prompt: PROMPT };
        use Loop::ToolResult;
        use MaxIterations;
        use RunTools { tools: (NoopTool::new(tool),), root: root };
        run model;
    };
    BruteRow { agent }
}

/// The default stack with [`DirectTools`] instead of `DefaultToolPipeline`: what
/// remains is brute's layers and terminal.
pub fn direct(model: ScriptedModel, tool: Noop) -> BruteRow<impl Handler<Env>> {
    let agent = brute_agent! {
        use SystemPrompt { prompt: PROMPT };
        use Loop::ToolResult;
        use MaxIterations;
        use DirectTools { tool: tool };
        run model;
    };
    BruteRow { agent }
}

/// A minimal tool layer over brute's tool API: advertises a `ToolSet`, and runs the
/// calls of the reply one after the other through `ToolSet::prepare` and
/// `ToolSet::run`, with no approval, timeout, panic guard, redaction, truncation or
/// snapshot.
#[derive(Middleware)]
#[middleware(provides = brute::kind::ToolPipeline)]
pub struct RunTools<A, T> {
    app: A,
    /// The tools.
    tools: T,
    /// The root the tools' context confines them to.
    #[middleware(into)]
    root: PathBuf,
    #[middleware(state)]
    shared: OnceLock<(ToolContext, Vec<ToolSpec>)>,
}

impl<A, T: ToolSet> RunTools<A, T> {
    fn shared(&self) -> Result<&(ToolContext, Vec<ToolSpec>), Error> {
        if let Some(shared) = self.shared.get() {
            return Ok(shared);
        }
        let context = ToolContext::new(&self.root).map_err(|e| {
            Error::layer("RunTools", format!("root `{}`: {e}", self.root.display()))
        })?;
        let mut specs = Vec::new();
        self.tools.specs(&mut specs);
        Ok(self.shared.get_or_init(|| (context, specs)))
    }
}

impl<A: Handler<Env>, T: ToolSet> Handler<Env> for RunTools<A, T> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        let (context, specs) = self.shared()?;
        for spec in specs {
            advertise(env, spec);
        }
        self.app.call(env).await?;
        let Some(last) = env.messages.len().checked_sub(1) else {
            return Ok(());
        };
        for i in 0..env.messages[last].tool_calls.len() {
            // One lookup: the prepared call holds the tool and its typed arguments.
            let result = match self.tools.prepare(&env.messages[last].tool_calls[i]) {
                Some(Ok(prepared)) => Some(prepared.run(context).await),
                Some(Err(error)) => Some(Err(error)),
                None => None,
            };
            let call = &env.messages[last].tool_calls[i];
            let id = call.id.clone();
            let content = match result {
                Some(Ok(output)) => output.content,
                Some(Err(error)) => format!("Error: tool `{}`: {error}", call.name),
                None => format!("Error: unknown tool `{}`", call.name),
            };
            env.messages.push(brute::Message::tool_result(id, content));
            env.persist().await?;
        }
        Ok(())
    }
}

/// The smallest tool layer: advertises the no-op tool and runs its calls by calling
/// its body directly (the hand-written loop's code), so that this row differs from
/// the hand-written one only by brute's layers and terminal.
#[derive(Middleware)]
#[middleware(provides = brute::kind::ToolPipeline)]
pub struct DirectTools<A> {
    app: A,
    /// The tool body.
    tool: Noop,
    #[middleware(state)]
    spec: OnceLock<ToolSpec>,
}

impl<A: Handler<Env>> Handler<Env> for DirectTools<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        advertise(env, self.spec.get_or_init(spec));
        self.app.call(env).await?;
        run_calls(env, &self.tool).await;
        env.persist().await
    }
}
