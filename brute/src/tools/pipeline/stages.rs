//! The per-call pipeline: the env of one tool call and the stages it goes through,
//! validate → snapshot → execute, ordered at compile time by placement kinds.

use std::borrow::Cow;
use std::fmt;
use std::path::PathBuf;

use crate::error::Error;
use crate::handler::Handler;
use crate::message::ToolCall;
use crate::tools::ToolOutput;
use crate::tools::context::ToolContext;
use crate::tools::error::{ToolError, quoted};
use crate::tools::set::{PreparedCall, ToolSet};
use crate::tools::truncate::Truncation;

crate::kind! {
    /// Per-call stages that check a call against the tool set ([`Validate`]). Stages
    /// that rely on the prepared call or its resolved path sit inside one:
    /// `#[middleware(inside = brute::tools::ToolValidation)]`.
    pub ToolValidation;
    /// Per-call stages that lock and snapshot the file a call changes ([`Snapshot`]).
    pub ToolSnapshot;
}

/// The env of one tool call as it goes through the per-call pipeline.
///
/// Each stage reads what the one before it left: [`Validate`] sets `prepared` (the
/// call bound to its tool, so it is looked up once) and `path` for calls that change a
/// file, [`Snapshot`] locks `path` and records its prior state, [`Execute`] runs
/// `prepared` and sets `result`. A stage that fails sets `result` to the error and does
/// not call the next one.
#[non_exhaustive]
pub struct ToolCallEnv<'a, T: ToolSet> {
    /// The call (after approval rewrote it, if it did): borrowed from the model's
    /// reply, so that running a call copies nothing of it.
    pub call: Cow<'a, ToolCall>,
    /// The tool set the call is dispatched in.
    pub tools: &'a T,
    /// What tools share.
    pub context: &'a ToolContext,
    /// The checked call, bound to its tool; set by `Validate`.
    pub prepared: Option<T::Call<'a>>,
    /// The resolved file this call changes, set by `Validate`.
    pub path: Option<PathBuf>,
    /// Which end of a long output is kept.
    pub truncation: Truncation,
    /// The outcome, set by `Execute` or by a stage that refused the call.
    pub result: Option<Result<ToolOutput, ToolError>>,
}

impl<'a, T: ToolSet> ToolCallEnv<'a, T> {
    /// The env of `call`, before any stage ran.
    pub fn new(call: ToolCall, tools: &'a T, context: &'a ToolContext) -> Self {
        Self::of(Cow::Owned(call), tools, context)
    }

    /// The env of a borrowed (or owned) `call`, before any stage ran: what the tool
    /// pipeline builds for each call of a reply, without copying it.
    pub fn of(call: Cow<'a, ToolCall>, tools: &'a T, context: &'a ToolContext) -> Self {
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

    /// Looks the call's tool up, checks its arguments and resolves the file it
    /// changes; on failure sets `result` and returns false.
    pub(super) fn validate(&mut self) -> bool {
        let prepared = match self.tools.prepare(&self.call) {
            None => {
                self.result = Some(Err(unknown(self.tools, &self.call.name)));
                return false;
            }
            Some(Err(error)) => {
                self.result = Some(Err(error));
                return false;
            }
            Some(Ok(prepared)) => prepared,
        };
        if let Some(raw) = prepared.mutates() {
            match self.context.resolve(raw) {
                Ok(path) => self.path = Some(path),
                Err(error) => {
                    self.result = Some(Err(error.into()));
                    return false;
                }
            }
        }
        self.truncation = prepared.truncation();
        self.prepared = Some(prepared);
        true
    }
}

impl<T: ToolSet> fmt::Debug for ToolCallEnv<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolCallEnv")
            .field("call", &self.call)
            .field("prepared", &self.prepared.is_some())
            .field("path", &self.path)
            .field("truncation", &self.truncation)
            .field("result", &self.result)
            .finish_non_exhaustive()
    }
}

/// Checks the call against the tool set: an unknown tool, arguments that are not
/// JSON, arguments that do not match the schema (naming the field and what was
/// expected) and paths outside the root become error results. Provides
/// [`ToolValidation`].
///
/// # Options
///
/// None: a stage of the per-call [`pipeline!`](crate::pipeline!) of `DefaultToolPipeline`.
#[derive(crate::Middleware, Debug, Clone)]
#[middleware(crate = crate, provides = ToolValidation, unique)]
pub struct Validate<A> {
    app: A,
}

impl<'a, A, T> Handler<ToolCallEnv<'a, T>> for Validate<A>
where
    A: Handler<ToolCallEnv<'a, T>>,
    T: ToolSet,
{
    async fn call(&self, env: &mut ToolCallEnv<'a, T>) -> Result<(), Error> {
        if env.validate() {
            self.app.call(env).await
        } else {
            Ok(())
        }
    }
}

pub(super) fn unknown<T: ToolSet + ?Sized>(tools: &T, name: &str) -> ToolError {
    let mut names = Vec::new();
    tools.names(&mut names);
    ToolError::UnknownTool {
        name: quoted(name),
        available: names.join(", "),
    }
}

/// For calls that change a file: waits for the file's lock (calls on the same file run
/// one after the other, others in parallel) and records the file's prior state for
/// `undo`. A snapshot of a call that failed is dropped again. It needs the resolved
/// path, so it sits inside [`Validate`] (a compile error otherwise).
///
/// # Options
///
/// None: a stage of the per-call [`pipeline!`](crate::pipeline!) of `DefaultToolPipeline`.
#[derive(crate::Middleware, Debug, Clone)]
#[middleware(crate = crate, provides = ToolSnapshot, inside = ToolValidation, unique)]
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
        let wants = env.prepared.as_ref().is_some_and(|p| p.snapshots());
        let took = wants && cx.snapshots().save(cx.sandbox(), &path);
        self.app.call(env).await?;
        if took && !matches!(env.result, Some(Ok(_))) {
            cx.snapshots().pop(&path);
        }
        Ok(())
    }
}

/// Runs the prepared call: the terminal of the per-call pipeline. In a pipeline
/// without [`Validate`] it validates the call itself.
#[derive(Clone, Copy, Debug, Default)]
pub struct Execute;

impl<'a, T: ToolSet> Handler<ToolCallEnv<'a, T>> for Execute {
    async fn call(&self, env: &mut ToolCallEnv<'a, T>) -> Result<(), Error> {
        if env.prepared.is_none() && !env.validate() {
            return Ok(());
        }
        if let Some(prepared) = env.prepared.take() {
            env.result = Some(prepared.run(env.context).await);
        }
        Ok(())
    }
}

crate::pipeline! {
    /// The per-call pipeline [`DefaultToolPipeline`](super::DefaultToolPipeline) runs
    /// each call through: [`Validate`] → [`Snapshot`] → [`Execute`].
    pub type StandardCallPipeline;
    use Validate;
    use Snapshot;
    run Execute;
}

/// Builds [`StandardCallPipeline`] with the same macro as agents.
pub fn standard_call_pipeline() -> StandardCallPipeline {
    crate::pipeline! {
        use Validate;
        use Snapshot;
        run Execute;
    }
}
