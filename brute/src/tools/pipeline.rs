//! Running tool calls: the per-call pipeline (validate → snapshot → execute) and
//! `DefaultToolPipeline`, the agent middleware that advertises tools and runs the
//! model's calls.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use futures_util::{FutureExt, StreamExt};

use crate::trace::traced;

use super::ToolOutput;
use super::context::{
    Approval, Decision, DelegateModel, NetworkPolicy, OutputDir, QuestionHandler, Redactions,
    RootDir, Timeouts, ToolContext,
};
use super::error::ToolError;
use super::set::{Prepared, ToolSet};
use super::truncate::{Truncation, truncate_owned};
use crate::env::Env;
use crate::error::Error;
use crate::event::Event;
use crate::handler::Handler;
use crate::message::{Message, ToolCall};
use crate::tool::ToolSpec;

/// The env of one tool call as it goes through the per-call pipeline.
///
/// Each stage reads what the one before it left: [`Validate`] sets `prepared` (and
/// `path` for calls that change a file), [`Snapshot`] locks `path` and records its
/// prior state, [`Execute`] sets `result`. A stage that fails sets `result` to the
/// error and does not call the next one.
#[derive(Debug)]
#[non_exhaustive]
pub struct ToolCallEnv<'a, T: ?Sized> {
    /// The call (after approval rewrote it, if it did).
    pub call: ToolCall,
    /// The tool set the call is dispatched in.
    pub tools: &'a T,
    /// What tools share.
    pub context: &'a ToolContext,
    /// The checked arguments, set by `Validate`.
    pub prepared: Option<Prepared>,
    /// The resolved file this call changes, set by `Validate`.
    pub path: Option<PathBuf>,
    /// Which end of a long output is kept.
    pub truncation: Truncation,
    /// The outcome, set by `Execute` or by a stage that refused the call.
    pub result: Option<Result<ToolOutput, ToolError>>,
}

impl<'a, T: ?Sized> ToolCallEnv<'a, T> {
    /// The env of `call`, before any stage ran.
    pub fn new(call: ToolCall, tools: &'a T, context: &'a ToolContext) -> Self {
        ToolCallEnv {
            call,
            tools,
            context,
            prepared: None,
            path: None,
            truncation: Truncation::Head,
            result: None,
        }
    }
}

/// Checks the call against the tool set: an unknown tool, arguments that are not
/// JSON, arguments that do not match the schema (naming the field and what was
/// expected) and paths outside the root become error results.
#[derive(crate::Middleware, Debug, Clone)]
#[middleware(crate = crate)]
pub struct Validate<A> {
    app: A,
}

impl<'a, A, T> Handler<ToolCallEnv<'a, T>> for Validate<A>
where
    A: Handler<ToolCallEnv<'a, T>>,
    T: ToolSet,
{
    async fn call(&self, env: &mut ToolCallEnv<'a, T>) -> Result<(), Error> {
        let prepared = match env.tools.prepare(&env.call) {
            None => {
                env.result = Some(Err(unknown(env.tools, &env.call.name)));
                return Ok(());
            }
            Some(Err(error)) => {
                env.result = Some(Err(error));
                return Ok(());
            }
            Some(Ok(prepared)) => prepared,
        };
        if let Some(raw) = &prepared.mutates {
            match env.context.resolve(raw) {
                Ok(path) => env.path = Some(path),
                Err(error) => {
                    env.result = Some(Err(error.into()));
                    return Ok(());
                }
            }
        }
        env.truncation = prepared.truncation;
        env.prepared = Some(prepared);
        self.app.call(env).await
    }
}

fn unknown<T: ToolSet + ?Sized>(tools: &T, name: &str) -> ToolError {
    let mut names = Vec::new();
    tools.names(&mut names);
    ToolError::UnknownTool {
        name: name.to_string(),
        available: names.join(", "),
    }
}

/// For calls that change a file: waits for the file's lock (calls on the same file run
/// one after the other, others in parallel) and records the file's prior state for
/// `undo`. A snapshot of a call that failed is dropped again.
#[derive(crate::Middleware, Debug, Clone)]
#[middleware(crate = crate)]
pub struct Snapshot<A> {
    app: A,
}

impl<'a, A, T> Handler<ToolCallEnv<'a, T>> for Snapshot<A>
where
    A: Handler<ToolCallEnv<'a, T>>,
    T: ToolSet,
{
    async fn call(&self, env: &mut ToolCallEnv<'a, T>) -> Result<(), Error> {
        let Some(path) = env.path.clone() else {
            return self.app.call(env).await;
        };
        let cx = env.context;
        let _guard = cx.locks().lock(&path).await;
        let wants = env.prepared.as_ref().is_some_and(|p| p.snapshots);
        let took = wants && cx.snapshots().save(&path);
        self.app.call(env).await?;
        if took && !matches!(env.result, Some(Ok(_))) {
            cx.snapshots().pop(&path);
        }
        Ok(())
    }
}

/// Runs the prepared call: the terminal of the per-call pipeline.
#[derive(Clone, Copy, Debug, Default)]
pub struct Execute;

impl<'a, T: ToolSet> Handler<ToolCallEnv<'a, T>> for Execute {
    async fn call(&self, env: &mut ToolCallEnv<'a, T>) -> Result<(), Error> {
        let Some(prepared) = env.prepared.take() else {
            env.result = Some(Err(ToolError::failed(
                "internal error: the call was not validated (put `Validate` before `Execute`)",
            )));
            return Ok(());
        };
        env.result = Some(
            match env.tools.run(&env.call.name, prepared, env.context).await {
                Some(result) => result,
                None => Err(unknown(env.tools, &env.call.name)),
            },
        );
        Ok(())
    }
}

crate::pipeline! {
    /// The per-call pipeline [`DefaultToolPipeline`] runs each call through:
    /// [`Validate`] → [`Snapshot`] → [`Execute`].
    pub type StandardCallPipeline;
    use Validate;
    use Snapshot;
    run Execute;
}

/// When `DefaultToolPipeline`'s `pipeline` option is not set, its slot holds
/// `MissingOption`, which runs [`StandardCallPipeline`].
impl<'a, T: ToolSet> Handler<ToolCallEnv<'a, T>> for crate::stack::MissingOption {
    async fn call(&self, env: &mut ToolCallEnv<'a, T>) -> Result<(), Error> {
        standard_call_pipeline().call(env).await
    }
}

/// Builds [`StandardCallPipeline`] with the same macro as agents.
pub fn standard_call_pipeline() -> StandardCallPipeline {
    crate::pipeline! {
        use Validate;
        use Snapshot;
        run Execute;
    }
}

/// Advertises tools to the model and runs the calls it makes: the tool layer of an
/// agent, placed inside `Loop::ToolResult`.
///
/// On the way in it adds the set's specs to `env.tools` (schemas are computed once, on
/// the first call, and shared). On the way out, if the model's last message calls
/// tools, it runs every call through [`StandardCallPipeline`] and appends one tool
/// result per call, in call order:
///
/// - calls run concurrently, at most `concurrency` at once; calls that change the same
///   file run one after the other;
/// - each call has a timeout (`timeout`, per tool `timeouts`); dropping the turn's
///   future cancels running calls and kills their processes;
/// - an unknown tool, arguments that are not JSON or do not match the schema, a tool
///   error, a timeout, a panic and a denial by the `approval` policy each become an
///   error result naming the tool and the problem, and the turn goes on;
/// - outputs longer than 2,000 lines or 50 KiB are cut, and the full text is saved
///   in `output_dir`, named in the result (saved outputs older than a week are deleted
///   when the pipeline first runs);
/// - secrets from the environment (and the values of `redact`) are replaced by
///   placeholders in every result.
///
/// ```
/// use brute::{brute_agent, Loop, Message, ScriptedModel, ToolCall};
/// use brute::tools::{DefaultToolPipeline, Tools};
/// # let dir = tempfile::tempdir().unwrap();
/// # std::fs::write(dir.path().join("notes.txt"), "hello\n").unwrap();
/// # let root = dir.path().to_path_buf();
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let model = ScriptedModel::per_turn([
///     Message::tool_calls("", vec![ToolCall::new("c1", "read", serde_json::json!({"file_path": "notes.txt"}))]),
///     Message::assistant("It says hello."),
/// ]);
/// let agent = brute_agent! {
///     use Loop::ToolResult;
///     use DefaultToolPipeline { tools: Tools::ALL, root: root.clone() };
///     run model;
/// };
/// let outcome = agent.start("What is in notes.txt?").await?;
/// assert_eq!(outcome.env.messages[2].content, "1\thello");
/// # Ok::<(), brute::Error>(()) }).unwrap();
/// ```
#[derive(crate::Middleware)]
#[middleware(crate = crate, provides = crate::kind::ToolPipeline)]
pub struct DefaultToolPipeline<A, T, P> {
    app: A,
    /// The tools: [`Tools::ALL`](super::Tools::ALL), a tuple of tools, a
    /// [`tools!`](crate::tools!) list or a [`Registry`](super::Registry).
    tools: T,
    /// The per-call pipeline, built with [`pipeline!`](crate::pipeline!) over
    /// [`ToolCallEnv`] (default: [`StandardCallPipeline`], validate → snapshot →
    /// execute). Add stages of your own between them:
    /// `pipeline: brute::pipeline! { use Validate; use MyAudit; use Snapshot; run Execute; }`.
    pipeline: P,
    /// The directory filesystem tools are confined to (default: the working directory
    /// when the pipeline first runs).
    #[middleware(into)]
    root: RootDir,
    /// How many calls run at once (default 8).
    #[middleware(default = 8)]
    concurrency: usize,
    /// How long one call may take before it is cancelled (default 10 minutes).
    #[middleware(default = Duration::from_secs(600))]
    timeout: Duration,
    /// Timeouts of single tools, overriding `timeout`: `[("shell", Duration::from_secs(60))]`.
    #[middleware(into)]
    timeouts: Timeouts,
    /// Decides before each call: allow, deny with a reason, or rewrite the arguments.
    #[middleware(into)]
    approval: Approval,
    /// Answers the `question` tool (default: none; `question` then reports that no
    /// one can be asked).
    #[middleware(into)]
    questions: QuestionHandler,
    /// The model `delegate` runs its sub-agents on (default: none).
    #[middleware(into)]
    delegate: DelegateModel,
    /// What `fetch` may reach (default: public addresses only, 1 MiB, 5 redirects).
    network: NetworkPolicy,
    /// Where truncated outputs are saved in full.
    #[middleware(into)]
    output_dir: OutputDir,
    /// Values to hide from tool results, beside the secrets found in the environment
    /// (see [`ToolContext::redact`]).
    #[middleware(into)]
    redact: Redactions,
    #[middleware(state)]
    shared: OnceLock<Shared>,
}

struct Shared {
    context: ToolContext,
    specs: Vec<ToolSpec>,
}

impl<A, T: ToolSet, P> DefaultToolPipeline<A, T, P> {
    fn shared(&self) -> Result<&Shared, Error> {
        if let Some(shared) = self.shared.get() {
            return Ok(shared);
        }
        let root = self.root.resolve().map_err(|e| {
            Error::layer(
                "DefaultToolPipeline",
                format!("cannot find the working directory: {e}"),
            )
        })?;
        let context = ToolContext::new(&root)
            .map_err(|e| {
                Error::layer(
                    "DefaultToolPipeline",
                    format!("the root directory `{}` is unusable: {e}", root.display()),
                )
            })?
            .with_questions(self.questions.clone())
            .with_delegate(self.delegate.clone())
            .with_network(self.network.clone())
            .with_output_dir(self.output_dir.resolve())
            .with_redactions(self.redact.clone());
        // Saved outputs of earlier runs older than a week are deleted (best effort).
        super::truncate::cleanup(context.output_dir(), super::truncate::RETENTION);
        let mut specs = Vec::new();
        self.tools.specs(&mut specs);
        Ok(self.shared.get_or_init(|| Shared { context, specs }))
    }

    /// The tools' specs, as advertised (computed on the first call).
    pub fn specs(&self) -> Result<&[ToolSpec], Error> {
        self.shared().map(|s| s.specs.as_slice())
    }

    /// The context tools run with (built on the first call).
    pub fn context(&self) -> Result<&ToolContext, Error> {
        self.shared().map(|s| &s.context)
    }
}

impl<A, T, P> DefaultToolPipeline<A, T, P>
where
    T: ToolSet,
    P: for<'a> Handler<ToolCallEnv<'a, T>>,
{
    /// Runs one call through approval, the per-call pipeline, the timeout and the
    /// panic guard; returns the result text and whether it is an error.
    async fn run_one(&self, context: &ToolContext, call: ToolCall) -> (String, bool) {
        // One span per tool call, named after the OpenTelemetry GenAI conventions.
        let span = tracing::info_span!(
            "execute_tool",
            otel.kind = "internal",
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = %call.name,
            gen_ai.tool.call.id = %call.id,
        );
        traced!(self.run_one_in_span(context, call), span)
    }

    async fn run_one_in_span(&self, context: &ToolContext, mut call: ToolCall) -> (String, bool) {
        match self.approval.decide(&call) {
            Decision::Allow => {}
            Decision::Deny(reason) => return error_text(&call.name, &ToolError::Denied(reason)),
            Decision::Rewrite(arguments) => call.arguments = arguments,
        }
        let name = call.name.clone();
        let limit = self.timeouts.get(&name).unwrap_or(self.timeout);
        let mut env = ToolCallEnv::new(call, &self.tools, context);
        let run = tokio::time::timeout(limit, self.pipeline.call(&mut env));
        let outcome = AssertUnwindSafe(run).catch_unwind().await;
        let result = match outcome {
            Err(panic) => Err(ToolError::Panicked(panic_message(&*panic))),
            Ok(Err(_elapsed)) => Err(ToolError::Timeout(limit)),
            Ok(Ok(Err(error))) => Err(ToolError::failed(error.to_string())),
            Ok(Ok(Ok(()))) => env.result.take().unwrap_or_else(|| {
                Err(ToolError::failed(
                    "internal error: the pipeline produced no result",
                ))
            }),
        };
        let (text, is_error) = match result {
            Ok(output) => (output.content, false),
            Err(error) => error_text(&name, &error),
        };
        let text = context.redact_owned(text);
        (
            truncate_owned(text, env.truncation, context.output_dir()),
            is_error,
        )
    }
}

fn error_text(name: &str, error: &ToolError) -> (String, bool) {
    (format!("Error: tool `{name}`: {error}"), true)
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_string()
    }
}

impl<A, T, P> Handler<Env> for DefaultToolPipeline<A, T, P>
where
    A: Handler<Env>,
    T: ToolSet,
    P: for<'a> Handler<ToolCallEnv<'a, T>>,
{
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        let span = tracing::info_span!(
            "brute.tool_pipeline",
            brute.layer = "DefaultToolPipeline",
            brute.iteration = env.iteration,
        );
        traced!(self.handle(env), span)
    }
}

impl<A, T, P> DefaultToolPipeline<A, T, P>
where
    A: Handler<Env>,
    T: ToolSet,
    P: for<'a> Handler<ToolCallEnv<'a, T>>,
{
    /// One pass: advertise the tools, call the inner stack, run the calls it asked for.
    async fn handle(&self, env: &mut Env) -> Result<(), Error> {
        let shared = self.shared()?;
        advertise(env, &shared.specs);
        self.app.call(env).await?;
        let calls = match env.messages.last() {
            Some(message) if message.has_tool_calls() => message.tool_calls.clone(),
            _ => return Ok(()),
        };
        for call in &calls {
            env.emit(Event::ToolCallStart { call });
        }
        if let [call] = calls.as_slice() {
            // One call: no stream to set up (the common case).
            let result = self.run_one(&shared.context, call.clone()).await;
            return append_result(env, call, result).await;
        }
        // Collected first: a lazy iterator held across the awaits below would not be
        // `Send` for every lifetime.
        let runs: Vec<_> = calls
            .iter()
            .map(|call| self.run_one(&shared.context, call.clone()))
            .collect();
        let mut results = futures_util::stream::iter(runs).buffered(self.concurrency.max(1));
        // Results arrive in call order; each is appended and made durable as soon as it
        // and every call before it are done, so a crash in the middle of a batch loses no
        // finished result.
        for call in &calls {
            let Some(result) = results.next().await else {
                break;
            };
            append_result(env, call, result).await?;
        }
        Ok(())
    }
}

/// Appends the result of `call`, makes it durable (the durability step,
/// [`Env::persist`]) and reports it.
async fn append_result(
    env: &mut Env,
    call: &ToolCall,
    (content, is_error): (String, bool),
) -> Result<(), Error> {
    env.messages
        .push(Message::tool_result(call.id.clone(), content));
    env.persist().await?;
    if let Some(result) = env.messages.last() {
        env.emit(Event::ToolResult {
            call,
            result,
            is_error,
        });
    }
    Ok(())
}

/// Adds `specs` to the tools advertised in `env`, once per turn: the specs share
/// their schemas (`Arc`), so finding the first one already there is a pointer
/// comparison, not a comparison of names on every pass.
fn advertise(env: &mut Env, specs: &[ToolSpec]) {
    let Some(first) = specs.first() else { return };
    if env
        .tools
        .iter()
        .any(|t| std::sync::Arc::ptr_eq(&t.parameters, &first.parameters))
    {
        return;
    }
    for spec in specs {
        if !env.tools.iter().any(|t| t.name == spec.name) {
            env.tools.push(spec.clone());
        }
    }
}
