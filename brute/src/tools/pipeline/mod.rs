//! `DefaultToolPipeline`, the agent middleware that advertises tools and runs the
//! model's calls through the per-call pipeline ([`stages`]: validate → snapshot →
//! execute) under its approval policy and timeouts ([`approval`]).

mod approval;
mod deadline;
mod failure;
mod pause;
mod results;
pub(crate) mod resume;
mod retry;
mod stages;

use std::borrow::Cow;
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use futures_util::{FutureExt, StreamExt};

use crate::trace::traced;
use failure::{error_text, panic_message};
use results::append_result;

pub use approval::{AllowAll, Approval, ApprovalPolicy, Decision, Timeouts};
pub use retry::{ToolAttempts, ToolRetry};
pub use stages::{
    Execute, Snapshot, StandardCallPipeline, ToolCallEnv, ToolSnapshot, ToolValidation, Validate,
    standard_call_pipeline,
};

use super::client::ClientTools;
use super::context::ToolContext;
use super::error::ToolError;
use super::network::NetworkPolicy;
use super::sandbox::RootDir;
use super::secrets::{Redactions, Secrets};
use super::set::ToolSet;
use super::tool::ToolOutput;
use super::truncate::{OutputDir, RETENTION, truncate_owned};
use crate::env::Env;
use crate::error::Error;
use crate::event::{Event, EventKind};
use crate::handler::Handler;
use crate::message::ToolCall;
use crate::middleware::CallQuota;
use crate::model::ModelSecrets;
use crate::stop::ApprovalDecision;
use crate::tool::ToolSpec;

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
/// - each call has a timeout (`timeout`, per tool `timeouts`), started when the call
///   first waits (a call that finishes without waiting touches no timer); dropping the
///   turn's future cancels running calls and kills their processes. A timeout is a
///   Tokio timer, so it needs a runtime with timers (`enable_time()` or
///   `enable_all()`; `#[tokio::main]` has them): see the `timeout` option;
/// - an unknown tool, arguments that are not JSON or do not match the schema, a tool
///   error, a timeout, a panic and a denial by the `approval` policy each become an
///   error result naming the tool and the problem, and the turn goes on;
/// - a [`ToolRetry`] stage in `pipeline` runs a call again when its tool reports a
///   failure it marked retryable ([`ToolError::retryable`]), with backoff and jitter;
/// - a call over a limit of [`CallLimit`](crate::middleware::CallLimit) in
///   [`CallLimitMode::Continue`](crate::middleware::CallLimitMode::Continue) is not run:
///   its result is an error saying the limit was reached (the approval policy is not
///   asked about it);
/// - every result, error results included, longer than 2,000 lines or 50 KiB is cut,
///   with a note saying how many lines and bytes were dropped; when `output_dir` is
///   set the full text is saved there and named in the result (saved outputs older
///   than `output_retention` are deleted when the pipeline first runs). By default
///   nothing is saved: the pipeline writes no file outside the folders it is given;
/// - secrets (from the environment unless `env_secrets` is off, the values of
///   `secrets` and `redact`, and the API key of the agent's model, which its terminal
///   hands over through the env: [`Model::secrets`](crate::Model::secrets)) are
///   replaced by placeholders in every result. The model's key is known from the first
///   model call of the process on: a turn that resumes an approved call from a stored
///   session before this agent called its model in this process hides the configured secrets
///   only (put the key in `secrets` too if such a call may print it), and a `delegate`
///   sub-agent hides its own model's key and the configured secrets, not the caller's
///   model key (its answer is a result of the caller's pipeline, which hides it).
///
/// Nothing is read from the process or its environment except where an option's
/// default says so: `root` (the working directory) and `env_secrets` (the
/// environment's secrets), and [`OutputDir::user_data`](super::OutputDir::user_data)
/// when chosen; each is read once, on the first call.
///
/// ```
/// use brute::{Message, ToolCall, brute_agent, middleware::Loop, providers::ScriptedModel};
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
///
/// # Options
///
/// | option | type | default | what it is |
/// |---|---|---|---|
/// | `tools` | any [`ToolSet`]: [`Tools::ALL`](super::Tools::ALL), [`Tools::READ_ONLY`](super::Tools::READ_ONLY), a tool, a tuple, [`tools!`](crate::tools!), a [`Registry`](super::Registry) | none: required | the tools advertised and run |
/// | `pipeline` | a [`pipeline!`](crate::pipeline!) over [`ToolCallEnv`] | [`StandardCallPipeline`] (validate, snapshot, execute) | the per-call stages |
/// | `root` | `impl Into<`[`RootDir`]`>` (a path) | the working directory | the folder file tools are confined to |
/// | `concurrency` | `usize` | `8` | calls run at once |
/// | `timeout` | `impl Into<Option<Duration>>` | 10 minutes | one call's limit; `None` for none |
/// | `timeouts` | `impl Into<`[`Timeouts`]`>` | none | per-tool limits: `[("shell", Duration::from_secs(60))]` |
/// | `approval` | any [`ApprovalPolicy`]: [`Approval`], or a type of your own | [`AllowAll`]: every call runs, and no approval code is compiled in | decides before each call: allow, deny, rewrite, ask a person |
/// | `network` | [`NetworkPolicy`] | public addresses, 1 MiB, 5 redirects | what `fetch` may reach |
/// | `output_dir` | `impl Into<`[`OutputDir`]`>` (a path, or [`OutputDir::user_data`]) | none: not saved | where cut outputs are saved in full |
/// | `output_retention` | `Option<Duration>` | a week | saved outputs in `output_dir` older than this are deleted |
/// | `env_secrets` | `bool` | `true` | hide the environment's secrets from results |
/// | `secrets` | [`Secrets`] | none | more secrets to hide |
/// | `redact` | `impl Into<`[`Redactions`]`>` | none | values to hide, given in code |
///
/// Placement: inside a loop, below `Loop::ToolResult` (which needs it), never inside
/// `Retry`; checked at compile time.
#[derive(crate::Middleware)]
#[middleware(crate = crate, provides = crate::kind::ToolPipeline)]
pub struct DefaultToolPipeline<A, T, P, Ap> {
    app: A,
    /// The tools: [`Tools::ALL`](super::Tools::ALL), a tuple of tools, a
    /// [`tools!`](crate::tools!) list or a [`Registry`](super::Registry).
    tools: T,
    /// The per-call pipeline, built with [`pipeline!`](crate::pipeline!) over
    /// [`ToolCallEnv`] (default: [`StandardCallPipeline`], validate → snapshot →
    /// execute). Add stages of your own between them:
    /// `pipeline: brute::pipeline! { use Validate; use MyAudit; use Snapshot; run Execute; }`.
    #[middleware(default_type = StandardCallPipeline, default = standard_call_pipeline())]
    pipeline: P,
    /// The directory filesystem tools are confined to (default:
    /// [`RootDir::WorkingDir`](super::RootDir), the process's working directory when
    /// the pipeline first runs).
    #[middleware(into)]
    root: RootDir,
    /// How many calls run at once (default 8).
    #[middleware(default = 8)]
    concurrency: usize,
    /// How long one call may take, from its first wait, before it is cancelled
    /// (default 10 minutes); `None` for no limit.
    ///
    /// A timeout is a Tokio timer, so it needs a runtime built with timers
    /// (`enable_time()` or `enable_all()`). Tokio cannot be asked whether a runtime has
    /// them (tokio-rs/tokio#8361), so the pipeline does not guess: on a runtime without
    /// them, the first call that waits panics inside Tokio ("timers are disabled. Call
    /// `enable_time` on the runtime builder"), which the call's panic guard turns into
    /// that call's error result (under `panic = "abort"` the process stops with that
    /// message). With `timeout: None` and no `timeouts`, the pipeline itself needs no
    /// timers (tools that sleep or time out, such as `shell`, still do).
    #[middleware(into, default = Duration::from_secs(600))]
    timeout: Option<Duration>,
    /// Timeouts of single tools, overriding `timeout`: `[("shell", Duration::from_secs(60))]`.
    #[middleware(into)]
    timeouts: Timeouts,
    /// Decides before each call: allow, deny with a reason, rewrite the arguments or
    /// ask a person (default: [`AllowAll`], which is zero-sized and compiles to no
    /// approval code at all); [`Approval`] for a policy given by a function.
    #[middleware(default_type = AllowAll, default = AllowAll, bound = ApprovalPolicy)]
    approval: Ap,
    /// What `fetch` may reach (default: public addresses only, 1 MiB, 5 redirects).
    network: NetworkPolicy,
    /// Where truncated outputs are saved in full (default: nowhere; a path, or
    /// [`OutputDir::user_data`](super::OutputDir::user_data)).
    #[middleware(into)]
    output_dir: OutputDir,
    /// Saved outputs (`tool_*.txt`) in `output_dir` older than this are deleted when
    /// the pipeline first runs (default: a week; `None` deletes nothing; without an
    /// `output_dir` there is nothing to delete).
    #[middleware(default = Some(RETENTION))]
    output_retention: Option<Duration>,
    /// Whether the secrets of the process environment are hidden from tool results
    /// ([`Secrets::from_env`], read when the pipeline first runs; default true).
    #[middleware(default = true)]
    env_secrets: bool,
    /// Secrets to hide from tool results beside those (default: none).
    secrets: Secrets,
    /// Values to hide from tool results, given in code: `redact: ["db-password"]`.
    #[middleware(into)]
    redact: Redactions,
    #[middleware(state)]
    shared: OnceLock<Shared>,
}

struct Shared {
    context: ToolContext,
    specs: Vec<ToolSpec>,
    /// The set's [`ToolSet::revision`] when `specs` were computed.
    revision: u64,
    /// The model's keys last handed over by the terminal, and the secrets hiding
    /// them: kept for a pass that resumes calls before any model call.
    model_secrets: Mutex<(Vec<String>, Secrets)>,
    /// Whether `model_secrets` ever held keys: until then a pass reads no lock.
    keys_seen: AtomicBool,
    /// The empty set, lent to passes of a model without keys.
    no_keys: Secrets,
}

impl<A, T: ToolSet, P, Ap> DefaultToolPipeline<A, T, P, Ap> {
    /// What every call shares, built on the first call. Inlined: after the first
    /// call it is one load and a branch.
    #[inline]
    fn shared(&self) -> Result<&Shared, Error> {
        match self.shared.get() {
            Some(shared) => Ok(shared),
            None => self.init_shared(),
        }
    }

    #[cold]
    fn init_shared(&self) -> Result<&Shared, Error> {
        let root = self.root.resolve().map_err(|e| {
            Error::layer(
                "DefaultToolPipeline",
                format!("cannot find the working directory: {e}"),
            )
        })?;
        let secrets = if self.env_secrets {
            Secrets::from_env().union(&self.secrets)
        } else {
            self.secrets.clone()
        };
        let context = ToolContext::new(&root)
            .map_err(|e| {
                Error::layer(
                    "DefaultToolPipeline",
                    format!("the root directory `{}` is unusable: {e}", root.display()),
                )
            })?
            .with_network(self.network.clone())
            .with_secrets(secrets.with(self.redact.clone()));
        let context = match self.output_dir.resolve() {
            Some(dir) => context.with_output_dir(dir),
            None => context,
        };
        if let (Some(retention), Some(dir)) = (self.output_retention, context.output_dir()) {
            // Best effort: saved outputs that cannot be deleted stay.
            super::truncate::cleanup(dir, retention);
        }
        let revision = self.tools.revision();
        let mut specs = Vec::new();
        self.tools.specs(&mut specs);
        Ok(self.shared.get_or_init(|| Shared {
            context,
            specs,
            revision,
            model_secrets: Mutex::default(),
            keys_seen: AtomicBool::new(false),
            no_keys: Secrets::default(),
        }))
    }

    /// The secrets hiding the model's keys on this pass: those the terminal left in
    /// `env`, or, on a pass that resumes calls before any model call, the last ones
    /// this pipeline saw (none when this process has not called the model yet).
    fn model_secrets<'s>(shared: &'s Shared, env: &Env) -> Cow<'s, Secrets> {
        let handed = env.extensions.get::<ModelSecrets>();
        // A model without keys (the terminal hands none over) and none seen before:
        // nothing to hide, and no lock to take on every pass.
        if handed.is_none() && !shared.keys_seen.load(Ordering::Acquire) {
            return Cow::Borrowed(&shared.no_keys);
        }
        let mut seen = shared
            .model_secrets
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(ModelSecrets(keys)) = handed
            && seen.0 != *keys
        {
            let secrets = Secrets::default().with_keys(keys.iter().map(String::as_str));
            *seen = (keys.clone(), secrets);
            shared.keys_seen.store(true, Ordering::Release);
        }
        Cow::Owned(seen.1.clone())
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

impl<A, T, P, Ap> DefaultToolPipeline<A, T, P, Ap>
where
    T: ToolSet,
    P: for<'a> Handler<ToolCallEnv<'a, T>>,
{
    /// Runs one call as the approval policy `decided` (allowed, rewritten or denied;
    /// a call the policy asks a person about never comes here) through the per-call
    /// pipeline, the timeout and the panic guard; returns the result and whether
    /// it is an error. The call is borrowed: it is copied only when its arguments are
    /// rewritten.
    async fn run_one(
        &self,
        context: &ToolContext,
        model: &Secrets,
        call: &ToolCall,
        decided: Decision,
    ) -> (ToolOutput, bool) {
        let span = call_span(call);
        let result = traced!(
            self.run_one_in_span(context, model, call, decided),
            ref span
        );
        if result.1 {
            crate::trace::record_tool_error(&span);
        }
        result
    }

    /// [`run_one`](Self::run_one) for a call the policy allowed as it is: what a
    /// pipeline whose policy never decides otherwise ([`AllowAll`]) compiles to.
    async fn run_allowed_traced(
        &self,
        context: &ToolContext,
        model: &Secrets,
        call: &ToolCall,
    ) -> (ToolOutput, bool) {
        let span = call_span(call);
        let result = traced!(
            self.run_allowed(context, model, Cow::Borrowed(call)),
            ref span
        );
        if result.1 {
            crate::trace::record_tool_error(&span);
        }
        result
    }

    async fn run_one_in_span(
        &self,
        context: &ToolContext,
        model: &Secrets,
        call: &ToolCall,
        decided: Decision,
    ) -> (ToolOutput, bool) {
        let call = match decided {
            Decision::Allow => Cow::Borrowed(call),
            Decision::Deny(reason) => return error_text(&call.name, &ToolError::Denied(reason)),
            Decision::Rewrite(arguments) => Cow::Owned(ToolCall {
                arguments,
                ..call.clone()
            }),
            Decision::Ask => {
                let reason = "it waits for a person's approval".to_string();
                return error_text(&call.name, &ToolError::Denied(reason));
            }
        };
        self.run_allowed(context, model, call).await
    }

    /// Runs a call the policy allowed (as it is, or rewritten) through the per-call
    /// pipeline, the timeout and the panic guard, then redacts and truncates its text.
    async fn run_allowed(
        &self,
        context: &ToolContext,
        model: &Secrets,
        call: Cow<'_, ToolCall>,
    ) -> (ToolOutput, bool) {
        let name = call.name.as_str();
        let limit = if self.timeouts.is_empty() {
            self.timeout
        } else {
            self.timeouts.get(name).or(self.timeout)
        };
        let mut env = ToolCallEnv::of(Cow::Borrowed(&*call), &self.tools, context);
        // Without a timeout no timer is touched, so a runtime without timers works;
        // with one, a call that finishes without waiting touches none either.
        let outcome = {
            // Built in place and borrowed pinned: the per-call future is not moved.
            let call_future = pin!(self.pipeline.call(&mut env));
            AssertUnwindSafe(deadline::within(limit, call_future))
                .catch_unwind()
                .await
        };
        let result = match outcome {
            Err(panic) => Err(ToolError::Panicked(panic_message(&*panic))),
            Ok(Err(limit)) => Err(ToolError::Timeout(limit)),
            Ok(Ok(Err(error))) => Err(ToolError::failed(error.to_string())),
            Ok(Ok(Ok(()))) => env.result.take().unwrap_or_else(|| {
                Err(ToolError::failed(
                    "internal error: the pipeline produced no result",
                ))
            }),
        };
        let (output, is_error) = match result {
            Ok(output) => (output, false),
            Err(error) => error_text(name, &error),
        };
        // The text is redacted and cut; images and documents go to the model as the
        // tool made them.
        let ToolOutput { content, parts } = output;
        let text = model.redact_owned(context.secrets().redact_owned(content));
        let content = truncate_owned(text, env.truncation, is_error, context.output_dir());
        (ToolOutput { content, parts }, is_error)
    }
}

/// One span per tool call, named after the OpenTelemetry GenAI conventions.
#[inline]
fn call_span(call: &ToolCall) -> tracing::Span {
    tracing::info_span!(
        "execute_tool",
        otel.kind = "internal",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %call.name,
        gen_ai.tool.call.id = %call.id,
        brute.tool.attempts = tracing::field::Empty,
        error.type = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    )
}

impl<A, T, P, Ap> Handler<Env> for DefaultToolPipeline<A, T, P, Ap>
where
    A: Handler<Env>,
    T: ToolSet,
    P: for<'a> Handler<ToolCallEnv<'a, T>>,
    Ap: ApprovalPolicy,
{
    const WATCHED: bool = false;

    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        let span = tracing::info_span!(
            "brute.tool_pipeline",
            brute.layer = "DefaultToolPipeline",
            brute.iteration = env.iteration,
        );
        traced!(self.handle(env), span)
    }
}

impl<A, T, P, Ap> DefaultToolPipeline<A, T, P, Ap>
where
    A: Handler<Env>,
    T: ToolSet,
    P: for<'a> Handler<ToolCallEnv<'a, T>>,
    Ap: ApprovalPolicy,
{
    /// One pass: advertise the tools, call the inner stack, run the calls it asked for.
    async fn handle(&self, env: &mut Env) -> Result<(), Error> {
        let shared = self.shared()?;
        if self.tools.revision() == shared.revision {
            advertise(env, &shared.specs)?;
        } else {
            // A dynamic set changed its tools since the first pass: advertise them as
            // they are now (static sets never get here).
            let mut specs = Vec::new();
            self.tools.specs(&mut specs);
            advertise(env, &specs)?;
        }
        // A paused turn resumed with a person's decision: apply it instead of a model call.
        if let Some(decision) = env.extensions.remove::<ApprovalDecision>() {
            let model = Self::model_secrets(shared, env);
            return self.resume(env, &shared.context, &model, decision).await;
        }
        self.app.call(env).await?;
        // The calls are read where they are, in the reply (the last message); results
        // are appended after it, so the reply stays at `reply`.
        let reply = match env.messages.last() {
            Some(message) if message.has_tool_calls() => env.messages.len() - 1,
            _ => return Ok(()),
        };
        let model = Self::model_secrets(shared, env);
        let calls = &env.messages[reply].tool_calls;
        // Calls of tools that run on the client pause the turn as an `Ask` does.
        let client = env.extensions.get::<ClientTools>();
        let may_ask = Ap::MAY_ASK || client.is_some();
        // Calls over a `CallLimit` in `Continue` mode are answered, not run: the
        // limit's text is their denial, and the policy is not asked about them.
        let mut refusals = env
            .extensions
            .get::<CallQuota>()
            .map(|quota| quota.refusals(calls));
        let mut refused = |index: usize| {
            refusals
                .as_mut()
                .and_then(|r| r.get_mut(index)?.take())
                .map(Decision::Deny)
        };
        // The policy is asked once per call (it may be a person's prompt or keep count).
        let decided: Vec<Decision> = if let [call] = calls.as_slice() {
            let decided = refused(0).unwrap_or_else(|| pause::decide(&self.approval, client, call));
            // With a policy that never asks and no tool run by the client, `Ask` is not
            // looked for; with `AllowAll` the decision is then a constant.
            if !(may_ask && matches!(decided, Decision::Ask)) {
                // One call: no stream to set up (the common case), and nothing is
                // appended while it runs, so it runs borrowed from the reply. The
                // event is built only when someone listens (`emit` is not inlined
                // into the stack's code; `listens` is).
                if env.listens(EventKind::ToolCallStart) {
                    env.emit(Event::ToolCallStart { call });
                }
                let result = match decided {
                    Decision::Allow => self.run_allowed_traced(&shared.context, &model, call).await,
                    decided => self.run_one(&shared.context, &model, call, decided).await,
                };
                return append_result(env, reply, 0, result).await;
            }
            vec![decided]
        } else {
            let approval = &self.approval;
            calls
                .iter()
                .enumerate()
                .map(|(i, c)| refused(i).unwrap_or_else(|| pause::decide(approval, client, c)))
                .collect()
        };
        // Calls the policy asks a person about are stored as pending and pause the
        // turn: code that a policy which never asks does not compile in (an `Ask` from
        // a policy that said it never asks runs below, where it becomes a denial).
        if may_ask {
            self.pause(env, reply, &decided).await?;
        }
        let calls = &env.messages[reply].tool_calls;
        for (call, decided) in calls.iter().zip(&decided) {
            if !(may_ask && matches!(decided, Decision::Ask)) {
                env.emit(Event::ToolCallStart { call });
            }
        }
        // Several calls: results are appended while later calls still run, so the
        // calls they borrow cannot live in the transcript; one copy of the list.
        let calls = calls.clone();
        // Collected first: a lazy iterator held across the awaits below would not be
        // `Send` for every lifetime.
        let runs: Vec<_> = calls
            .iter()
            .zip(decided)
            .enumerate()
            .filter(|(_, (_, decided))| !(may_ask && matches!(decided, Decision::Ask)))
            .map(|(index, (call, decided))| {
                let run = self.run_one(&shared.context, &model, call, decided);
                run.map(move |result| (index, result))
            })
            .collect();
        let mut results = futures_util::stream::iter(runs).buffered(self.concurrency.max(1));
        // Results arrive in call order; each is appended and made durable as soon as it
        // and every call before it are done, so a crash in the middle of a batch loses no
        // finished result.
        while let Some((index, result)) = results.next().await {
            append_result(env, reply, index, result).await?;
        }
        Ok(())
    }
}

/// Adds `specs` to the tools advertised in `env`, once per turn: the specs share
/// their schemas (`Arc`), so finding the first one already there is a pointer
/// comparison, not a comparison of names on every pass. A client tool of the same
/// name as one of `specs` refuses the turn (on its first pass).
fn advertise(env: &mut Env, specs: &[ToolSpec]) -> Result<(), Error> {
    let Some(first) = specs.first() else {
        return Ok(());
    };
    if env
        .tools
        .iter()
        .any(|t| std::sync::Arc::ptr_eq(&t.parameters, &first.parameters))
    {
        return Ok(());
    }
    pause::clash(env, specs)?;
    for spec in specs {
        if !env.tools.iter().any(|t| t.name == spec.name) {
            env.tools.push(spec.clone());
        }
    }
    Ok(())
}
