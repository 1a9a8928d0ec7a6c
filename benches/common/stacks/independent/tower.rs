//! The four layers on tower's `ServiceBuilder` over the independent types, as a tower
//! user writes them: a `Layer` and a `Service` per layer, the request a small
//! conversation (three words and a flag: the messages live on the heap) passed by
//! value, shared state behind an `Arc`, a named future where a layer only forwards or
//! short-circuits, a boxed future where it awaits.

use std::future::{Future, Ready, ready};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tower::{BoxError, Layer, Service, ServiceBuilder, ServiceExt};

use super::{
    Conv, Script, Spec, Tool, add_system_prompt, advertise, last_is_tool_result, over_limit,
    run_calls, spec,
};

/// The future of a layer that awaits.
pub type BoxFuture = Pin<Box<dyn Future<Output = Result<Conv, BoxError>> + Send>>;

/// Prepends the system prompt.
#[derive(Clone)]
struct SystemPromptLayer;

impl<S> Layer<S> for SystemPromptLayer {
    type Service = SystemPrompt<S>;

    fn layer(&self, inner: S) -> Self::Service {
        SystemPrompt { inner }
    }
}

/// The service of [`SystemPromptLayer`].
#[derive(Clone)]
pub struct SystemPrompt<S> {
    inner: S,
}

impl<S: Service<Conv>> Service<Conv> for SystemPrompt<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut conv: Conv) -> Self::Future {
        add_system_prompt(&mut conv);
        self.inner.call(conv)
    }
}

/// Calls the inner service again while the last message is a tool result.
#[derive(Clone)]
struct ToolLoopLayer;

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

impl<S> Service<Conv> for ToolLoop<S>
where
    S: Service<Conv, Response = Conv, Error = BoxError> + Clone + Send + 'static,
    S::Future: Send,
{
    type Response = Conv;
    type Error = BoxError;
    type Future = BoxFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut conv: Conv) -> BoxFuture {
        // The tower idiom for a service called from a future: take the one that was
        // driven to readiness, leave a clone in its place.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(async move {
            loop {
                conv.passes += 1;
                conv = inner.ready().await?.call(conv).await?;
                if conv.stop.is_some() || !last_is_tool_result(&conv) {
                    return Ok(conv);
                }
            }
        })
    }
}

/// Ends the turn past the limit.
#[derive(Clone)]
struct GuardLayer;

impl<S> Layer<S> for GuardLayer {
    type Service = Guard<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Guard { inner }
    }
}

/// The service of [`GuardLayer`].
#[derive(Clone)]
pub struct Guard<S> {
    inner: S,
}

pin_project_lite::pin_project! {
    /// The future of [`Guard`]: the turn ended here, or the inner service's.
    #[project = GuardProjection]
    pub enum GuardFuture<F> {
        /// The guard ended the turn.
        Stopped { #[pin] conv: Ready<Result<Conv, BoxError>> },
        /// The inner service runs.
        Inner { #[pin] inner: F },
    }
}

impl<F: Future<Output = Result<Conv, BoxError>>> Future for GuardFuture<F> {
    type Output = Result<Conv, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            GuardProjection::Stopped { conv } => conv.poll(cx),
            GuardProjection::Inner { inner } => inner.poll(cx),
        }
    }
}

impl<S> Service<Conv> for Guard<S>
where
    S: Service<Conv, Response = Conv, Error = BoxError>,
{
    type Response = Conv;
    type Error = BoxError;
    type Future = GuardFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut conv: Conv) -> Self::Future {
        if over_limit(&mut conv) {
            return GuardFuture::Stopped {
                conv: ready(Ok(conv)),
            };
        }
        GuardFuture::Inner {
            inner: self.inner.call(conv),
        }
    }
}

/// What the tool layer shares between its services and their futures.
struct ToolState {
    tool: Tool,
    spec: Spec,
}

/// Advertises the tool, calls the inner service, runs the calls of its reply.
#[derive(Clone)]
struct ToolsLayer {
    shared: Arc<ToolState>,
}

impl<S> Layer<S> for ToolsLayer {
    type Service = Tools<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Tools {
            inner,
            shared: Arc::clone(&self.shared),
        }
    }
}

/// The service of [`ToolsLayer`].
#[derive(Clone)]
pub struct Tools<S> {
    inner: S,
    shared: Arc<ToolState>,
}

impl<S> Service<Conv> for Tools<S>
where
    S: Service<Conv, Response = Conv, Error = BoxError>,
    S::Future: Send + 'static,
{
    type Response = Conv;
    type Error = BoxError;
    type Future = BoxFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut conv: Conv) -> BoxFuture {
        advertise(&mut conv, &self.shared.spec);
        let response = self.inner.call(conv);
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            let mut conv = response.await?;
            run_calls(&mut conv, &shared.tool).await;
            Ok(conv)
        })
    }
}

/// The terminal: one model call.
#[derive(Clone)]
pub struct ModelService {
    model: Arc<Script>,
}

impl Service<Conv> for ModelService {
    type Response = Conv;
    type Error = BoxError;
    type Future = BoxFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut conv: Conv) -> BoxFuture {
        let model = Arc::clone(&self.model);
        Box::pin(async move {
            let reply = model.complete(&conv).await?;
            conv.messages.push(reply);
            Ok(conv)
        })
    }
}

/// The tower stack.
pub struct Towered {
    stack: SystemPrompt<ToolLoop<Guard<Tools<ModelService>>>>,
}

impl Towered {
    /// System prompt → tool loop → guard → tools → model.
    pub fn new(model: Script, tool: Tool) -> Self {
        let stack = ServiceBuilder::new()
            .layer(SystemPromptLayer)
            .layer(ToolLoopLayer)
            .layer(GuardLayer)
            .layer(ToolsLayer {
                shared: Arc::new(ToolState { tool, spec: spec() }),
            })
            .service(ModelService {
                model: Arc::new(model),
            });
        Towered { stack }
    }

    /// One turn.
    pub async fn turn(&mut self) -> Result<Conv, BoxError> {
        self.stack.ready().await?.call(Conv::user()).await
    }
}
