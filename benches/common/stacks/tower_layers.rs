//! The four layers on tower's `ServiceBuilder` on brute's own types, row
//! `tower-on-brute`: a `Layer` and a `Service` per layer, brute's whole `Env` passed by
//! value through every layer (the independent `tower` row passes its own small
//! conversation), shared state
//! behind an `Arc`, a named future where the layer only forwards or short-circuits
//! (`SystemPromptService`, `IterationGuard`) and a boxed future where it awaits.

use std::future::{Future, Ready, ready};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use brute::{Env, ExitReason, model::ToolSpec, providers::ScriptedModel};
use tower::{BoxError, Layer, Service, ServiceBuilder, ServiceExt};

use super::scenario::{
    MAX, Noop, PROMPT, add_system_prompt, advertise, complete, last_is_tool_result, run_calls,
    spec, user_env,
};

/// The future of a layer that awaits.
pub type BoxFuture = Pin<Box<dyn Future<Output = Result<Env, BoxError>> + Send>>;

/// Prepends the system prompt.
#[derive(Clone)]
pub struct SystemPromptLayer {
    prompt: Arc<str>,
}

impl<S> Layer<S> for SystemPromptLayer {
    type Service = SystemPromptService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        SystemPromptService {
            inner,
            prompt: Arc::clone(&self.prompt),
        }
    }
}

/// The service of [`SystemPromptLayer`].
#[derive(Clone)]
pub struct SystemPromptService<S> {
    inner: S,
    prompt: Arc<str>,
}

impl<S: Service<Env>> Service<Env> for SystemPromptService<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut env: Env) -> Self::Future {
        add_system_prompt(&mut env, &self.prompt);
        self.inner.call(env)
    }
}

/// Calls the inner service again while the last message is a tool result.
#[derive(Clone)]
pub struct ToolLoopLayer;

impl<S> Layer<S> for ToolLoopLayer {
    type Service = ToolLoop<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ToolLoop { inner }
    }
}

/// The service of [`ToolLoopLayer`].
#[derive(Clone)]
pub struct ToolLoop<S> {
    inner: S,
}

impl<S> Service<Env> for ToolLoop<S>
where
    S: Service<Env, Response = Env, Error = BoxError> + Clone + Send + 'static,
    S::Future: Send,
{
    type Response = Env;
    type Error = BoxError;
    type Future = BoxFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut env: Env) -> BoxFuture {
        // The tower idiom for a service called from a future: take the one that was
        // driven to readiness, leave a clone in its place.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(async move {
            loop {
                env.iteration += 1;
                env = inner.ready().await?.call(env).await?;
                if env.should_exit.is_some() || !last_is_tool_result(&env) {
                    return Ok(env);
                }
            }
        })
    }
}

/// Ends the turn once the loop went past `max` passes.
#[derive(Clone)]
pub struct IterationGuardLayer {
    max: u32,
}

impl<S> Layer<S> for IterationGuardLayer {
    type Service = IterationGuard<S>;

    fn layer(&self, inner: S) -> Self::Service {
        IterationGuard {
            inner,
            max: self.max,
        }
    }
}

/// The service of [`IterationGuardLayer`].
#[derive(Clone)]
pub struct IterationGuard<S> {
    inner: S,
    max: u32,
}

pin_project_lite::pin_project! {
    /// The future of [`IterationGuard`]: the turn ended here, or the inner service's.
    #[project = GuardProjection]
    pub enum GuardFuture<F> {
        /// The guard ended the turn.
        Stopped { #[pin] env: Ready<Result<Env, BoxError>> },
        /// The inner service runs.
        Inner { #[pin] inner: F },
    }
}

impl<F: Future<Output = Result<Env, BoxError>>> Future for GuardFuture<F> {
    type Output = Result<Env, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            GuardProjection::Stopped { env } => env.poll(cx),
            GuardProjection::Inner { inner } => inner.poll(cx),
        }
    }
}

impl<S> Service<Env> for IterationGuard<S>
where
    S: Service<Env, Response = Env, Error = BoxError>,
{
    type Response = Env;
    type Error = BoxError;
    type Future = GuardFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut env: Env) -> Self::Future {
        if env.iteration > self.max {
            env.exit(ExitReason::Limit {
                by: "MaxIterations",
                limit: self.max,
            });
            return GuardFuture::Stopped {
                env: ready(Ok(env)),
            };
        }
        GuardFuture::Inner {
            inner: self.inner.call(env),
        }
    }
}

/// What the tool layer shares between its services and their futures.
pub struct ToolState {
    tool: Noop,
    spec: ToolSpec,
}

/// Advertises the tool, calls the inner service, runs the calls of its reply.
#[derive(Clone)]
pub struct ToolExecutionLayer {
    shared: Arc<ToolState>,
}

impl<S> Layer<S> for ToolExecutionLayer {
    type Service = ToolExecution<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ToolExecution {
            inner,
            shared: Arc::clone(&self.shared),
        }
    }
}

/// The service of [`ToolExecutionLayer`].
#[derive(Clone)]
pub struct ToolExecution<S> {
    inner: S,
    shared: Arc<ToolState>,
}

impl<S> Service<Env> for ToolExecution<S>
where
    S: Service<Env, Response = Env, Error = BoxError>,
    S::Future: Send + 'static,
{
    type Response = Env;
    type Error = BoxError;
    type Future = BoxFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut env: Env) -> BoxFuture {
        advertise(&mut env, &self.shared.spec);
        let response = self.inner.call(env);
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            let mut env = response.await?;
            run_calls(&mut env, &shared.tool).await;
            Ok(env)
        })
    }
}

/// The terminal: one model call.
#[derive(Clone)]
pub struct ModelService {
    model: Arc<ScriptedModel>,
}

impl Service<Env> for ModelService {
    type Response = Env;
    type Error = BoxError;
    type Future = BoxFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut env: Env) -> BoxFuture {
        let model = Arc::clone(&self.model);
        Box::pin(async move {
            complete(&mut env, &model).await?;
            Ok(env)
        })
    }
}

/// The tower stack.
pub struct Towered {
    stack: SystemPromptService<ToolLoop<IterationGuard<ToolExecution<ModelService>>>>,
}

impl Towered {
    /// System prompt → tool loop → guard → tool execution → model.
    pub fn new(model: ScriptedModel, tool: Noop) -> Self {
        let stack = ServiceBuilder::new()
            .layer(SystemPromptLayer {
                prompt: Arc::from(PROMPT),
            })
            .layer(ToolLoopLayer)
            .layer(IterationGuardLayer { max: MAX })
            .layer(ToolExecutionLayer {
                shared: Arc::new(ToolState { tool, spec: spec() }),
            })
            .service(ModelService {
                model: Arc::new(model),
            });
        Towered { stack }
    }

    /// One turn.
    pub async fn turn(&mut self) -> Result<Env, BoxError> {
        self.stack.ready().await?.call(user_env()).await
    }
}
