//! `Agent`: a stack over the turn env, with event handlers, that runs turns; and
//! [`Stack`], which builds one without the macro.

mod builder;
mod from_fn;
mod watch;

pub use builder::{Build, Stack};
pub use from_fn::{Anywhere, FnLayer, LayerCall, MiddlewareFn, Next, NoFn, PlaceFn, middleware_fn};
#[doc(hidden)]
pub use watch::Watch;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::cost::{Cost, Prices, Spend};
use crate::env::{Env, EventHandler, Listeners};
use crate::error::Error;
use crate::event::{Event, EventKind};
use crate::handler::Handler;
use crate::message::{Message, Role};
use crate::stop::StopReason;
use crate::trace::traced;

/// An agent: a middleware stack (usually built by [`brute_agent!`](crate::brute_agent!))
/// plus the event handlers registered on it.
///
/// An agent is `Send + Sync` when its layers are; share it in an `Arc` and run many
/// turns at once, each on its own [`Env`].
///
/// ```
/// use brute::{Message, StopReason, brute_agent};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let agent = brute_agent! {
///     run |env| {
///         let heard = env.messages.last().map(|m| m.content.clone()).unwrap_or_default();
///         async move { Ok(Message::assistant(format!("heard: {heard}"))) }
///     };
/// };
/// let outcome = agent.start("ping").await?;
/// assert_eq!(outcome.text(), Some("heard: ping"));
/// assert_eq!(outcome.stop, StopReason::Completed);
/// # Ok::<(), brute::Error>(()) }).unwrap();
/// ```
pub struct Agent<S> {
    stack: S,
    events: Option<Arc<Listeners>>,
    capture_content: bool,
    /// The price table every turn's env carries, when set with [`Agent::prices`].
    prices: Option<Prices>,
    /// The `use` lines' names, outermost first, when `brute_agent!` or [`Stack`] built
    /// the stack: then the stack ends in a model, and a turn that never reached it is
    /// an error naming them.
    layers: Option<&'static [&'static str]>,
    /// Whether every layer below the first calls the stack below it through a
    /// [`Watch`], which names a layer that returned without calling inside: then the
    /// agent asks the same of the first layer, by name.
    watched: bool,
}

/// The result of a turn: why it stopped, and the env as the stack left it.
#[derive(Debug)]
#[non_exhaustive]
pub struct Outcome {
    /// Why the turn stopped.
    pub stop: StopReason,
    /// The env after the turn: the whole conversation, metadata and extensions.
    pub env: Env,
}

impl Outcome {
    /// The outcome of a turn that stopped for `stop` and left `env` (what a test of
    /// code that takes an outcome builds).
    pub fn new(stop: StopReason, env: Env) -> Self {
        Outcome { stop, env }
    }

    /// The last assistant message of the turn, if the model said anything.
    pub fn message(&self) -> Option<&Message> {
        self.env
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant)
    }

    /// The text of the last assistant message.
    pub fn text(&self) -> Option<&str> {
        self.message().map(|m| m.content.as_str())
    }

    /// What the turn's model calls cost: `None` when any call's cost is unknown (a
    /// model without a price, a call that reported no usage). See [`Env::cost`].
    pub fn cost(&self) -> Option<Cost> {
        self.env.cost()
    }

    /// The tokens and money of the turn's calls ([`Env::spend`]).
    pub fn spend(&self) -> Spend {
        self.env.spend()
    }
}

impl<S> Agent<S> {
    /// An agent running `stack`.
    pub fn new(stack: S) -> Self {
        Agent {
            stack,
            events: None,
            capture_content: false,
            prices: None,
            layers: None,
            watched: false,
        }
    }

    /// An agent running `stack`, which ends in a model and whose layers are `layers`
    /// (outermost first): what `brute_agent!` and [`Stack`] build.
    pub(crate) fn named(stack: S, layers: &'static [&'static str]) -> Self {
        Agent {
            layers: Some(layers),
            ..Agent::new(stack)
        }
    }

    /// An agent running `stack`, built by `brute_agent!`: a model at the end, the
    /// `use` lines `layers` (outermost first), each but the first one under a
    /// [`Watch`].
    pub(crate) fn watched(stack: S, layers: &'static [&'static str]) -> Self {
        Agent {
            watched: true,
            ..Agent::named(stack, layers)
        }
    }

    /// The stack.
    pub fn stack(&self) -> &S {
        &self.stack
    }

    /// Calls `handler` for every event of `kind` that any layer emits during a turn.
    /// Register handlers before sharing the agent.
    pub fn on(
        &mut self,
        kind: EventKind,
        handler: impl Fn(&Env, &Event<'_>) + Send + Sync + 'static,
    ) -> &mut Self {
        let handler: EventHandler = Arc::new(handler);
        let mut handlers = self.events.as_deref().cloned().unwrap_or_default();
        handlers.add(kind, handler);
        self.events = Some(Arc::new(handlers));
        self
    }

    /// Lets traces carry message content (the model's output text in a `gen_ai.choice`
    /// event of each model call's span). Off by default: content may be private.
    pub fn capture_content(&mut self, capture: bool) -> &mut Self {
        self.capture_content = capture;
        self
    }

    /// [`Agent::capture_content`] as the OpenTelemetry GenAI conventions configure it:
    /// reads the process environment variable
    /// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` (`true` turns it on).
    pub fn capture_content_from_env(&mut self) -> &mut Self {
        let on = std::env::var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
            .is_ok_and(|v| v.eq_ignore_ascii_case("true"));
        self.capture_content(on)
    }

    /// A fresh env whose events reach this agent's handlers. Fill it and pass it to
    /// [`Agent::turn`] to start a turn from a prepared conversation.
    #[inline]
    pub fn env(&self) -> Env {
        let mut env = Env::with_listeners(
            self.events.clone().filter(|h| !h.is_empty()),
            self.capture_content,
        );
        if let Some(prices) = &self.prices {
            env.extensions.insert(prices.clone());
        }
        env
    }

    /// Prices every model call of this agent's turns with `prices` rather than the
    /// providers' published ones ([`Prices::published`]): each turn's env carries the
    /// table in its extensions, where the terminal looks a model's price up by its
    /// name. A model the table does not know has no cost.
    ///
    /// ```
    /// use brute::{Completion, Env, Error, Message, Model, Usage, brute_agent};
    /// use brute::cost::{Cost, Price, Prices};
    ///
    /// /// A model of one's own that reports its usage.
    /// struct House;
    ///
    /// impl Model for House {
    ///     async fn complete(&self, _env: &Env) -> Result<Completion, Error> {
    ///         Ok(Completion { message: Message::assistant("hi"), usage: Some(Usage::new(1_000, 100)) })
    ///     }
    ///     fn name(&self) -> &str {
    ///         "house-model"
    ///     }
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let mut agent = brute_agent! { run House; };
    /// assert_eq!(agent.start("hello").await?.cost(), None); // no price for it
    /// let price = Price::per_million(Cost::from_cents(100), Cost::from_cents(200));
    /// agent.prices(Prices::new().with("house-model", price));
    /// let outcome = agent.start("hello").await?;
    /// assert_eq!(outcome.cost(), Some(Cost::from_micros(1_000 + 200)));
    /// assert_eq!(outcome.cost().map(|c| c.to_string()).as_deref(), Some("$0.0012"));
    /// # Ok::<(), brute::Error>(()) }).unwrap();
    /// ```
    pub fn prices(&mut self, prices: Prices) -> &mut Self {
        self.prices = Some(prices);
        self
    }
}

impl<S: Handler<Env>> Agent<S> {
    /// Runs one turn: appends `prompt` as a user message to a fresh env and runs the
    /// stack once.
    pub async fn start(&self, prompt: impl Into<String>) -> Result<Outcome, Error> {
        let mut env = self.env();
        env.messages.push(Message::user(prompt));
        // The env stays in this future and the turn borrows it: moving it into
        // `turn`'s future and out again cost two copies of it per turn.
        let stop = self.run(&mut env).await?;
        Ok(Outcome { stop, env })
    }

    /// Runs one turn on a prepared env (see [`Agent::env`]).
    ///
    /// [`Event::TurnEnd`] fires whether the turn succeeded or failed.
    pub async fn turn(&self, mut env: Env) -> Result<Outcome, Error> {
        let stop = self.run(&mut env).await?;
        Ok(Outcome { stop, env })
    }

    /// The turn itself, over a borrowed env: the stack between [`Event::TurnStart`]
    /// and [`Event::TurnEnd`].
    #[inline]
    async fn run(&self, env: &mut Env) -> Result<StopReason, Error> {
        let span = Self::begin(env);
        env.reset_terminal();
        let result = traced!(self.stack.call(env), ref span).and_then(|()| self.reached(env));
        match result {
            Ok(()) => {
                if let Some(cost) = env.cost() {
                    crate::trace::record_cost(&span, cost.picos());
                }
                Ok(Self::finish(env))
            }
            Err(error) => {
                crate::trace::record_error(&span, &error);
                env.emit(Event::TurnEnd {
                    result: Err(&error),
                });
                Err(error)
            }
        }
    }

    /// Reports the start of a turn; the turn's span.
    #[inline]
    fn begin(env: &Env) -> tracing::Span {
        env.emit(Event::TurnStart);
        tracing::info_span!(
            "invoke_agent",
            otel.kind = "internal",
            gen_ai.operation.name = "invoke_agent",
            brute.messages = env.messages.len(),
            gen_ai.usage.cost = tracing::field::Empty,
            error.type = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
            otel.status_description = tracing::field::Empty,
        )
    }

    /// A stack built to end in a model whose turn ended without calling it, with no
    /// answer and no layer asking to stop: a middleware returned without calling its
    /// inner app. An error naming that layer (the first one, when the stack is
    /// [`watched`](Agent::watched), since the watches name the others), or the layers
    /// that can be it, not a silent [`StopReason::Unfinished`]. `before` is the env as
    /// the turn started.
    #[inline]
    fn reached(&self, env: &Env) -> Result<(), Error> {
        let Some(layers) = self.layers else {
            return Ok(());
        };
        if self.watched {
            watch::stopped(env, layers, S::WATCHED)?;
        }
        if env.reached_terminal() || env.should_exit.is_some() || Self::answered(env) {
            return Ok(());
        }
        let message = match layers {
            [] => "the turn ended without calling the model".to_string(),
            [one] => format!(
                "`{one}` returned without calling its inner app, so the turn never reached the model: call `self.app.call(env).await` in its `Handler` impl, or end the turn with `env.exit(..)`"
            ),
            many => format!(
                "a middleware returned without calling its inner app, so the turn never reached the model; the layers that can are `{}` (outermost first): call `self.app.call(env).await` in its `Handler` impl, or end the turn with `env.exit(..)`",
                many.join("`, `")
            ),
        };
        let layer = match layers {
            [one] => one,
            _ => "brute_agent!",
        };
        Err(Error::layer(layer, message))
    }

    /// Whether the last message is a finished answer.
    #[inline]
    fn answered(env: &Env) -> bool {
        watch::answered(env)
    }

    #[inline]
    fn finish(env: &Env) -> StopReason {
        let stop = match &env.should_exit {
            Some(reason) => StopReason::Exited(reason.clone()),
            None if Self::answered(env) => StopReason::Completed,
            None => StopReason::Unfinished,
        };
        env.emit(Event::TurnEnd { result: Ok(&stop) });
        stop
    }

    /// Erases the stack's type, so that agents built from different stacks can be
    /// stored together (`Vec<BoxAgent>`). Each turn then costs one boxed future.
    pub fn boxed(self) -> BoxAgent
    where
        S: 'static,
    {
        Agent {
            stack: BoxStack(Arc::new(self.stack)),
            events: self.events,
            capture_content: self.capture_content,
            prices: self.prices,
            layers: self.layers,
            watched: self.watched,
        }
    }
}

/// Agents are handlers too: one agent can be the inner app or the tool of another.
impl<S: Handler<Env>> Handler<Env> for Agent<S> {
    fn call(&self, env: &mut Env) -> impl Future<Output = Result<(), Error>> + Send {
        self.stack.call(env)
    }
}

impl<S> fmt::Debug for Agent<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("stack", &std::any::type_name::<S>())
            .finish_non_exhaustive()
    }
}

/// An agent whose stack type is erased: see [`Agent::boxed`].
///
/// ```
/// use brute::{BoxAgent, Message, brute_agent};
///
/// let agents: Vec<BoxAgent> = vec![
///     brute_agent! { run |_env| async { Ok(Message::assistant("a")) }; }.boxed(),
///     brute_agent! { use brute::middleware::SystemPrompt { prompt: "terse" }; run |_env| async { Ok(Message::assistant("b")) }; }
///         .boxed(),
/// ];
/// # let _ = agents;
/// ```
pub type BoxAgent = Agent<BoxStack>;

type BoxFuture<'a> = Pin<Box<dyn Future<Output = Result<(), Error>> + Send + 'a>>;

trait ErasedHandler: Send + Sync {
    fn call_boxed<'a>(&'a self, env: &'a mut Env) -> BoxFuture<'a>;
}

impl<S: Handler<Env>> ErasedHandler for S {
    fn call_boxed<'a>(&'a self, env: &'a mut Env) -> BoxFuture<'a> {
        Box::pin(self.call(env))
    }
}

/// A stack with its type erased, behind an `Arc`.
#[derive(Clone)]
pub struct BoxStack(Arc<dyn ErasedHandler>);

impl Handler<Env> for BoxStack {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        self.0.call_boxed(env).await
    }
}

/// A boxing boundary of a `brute_agent!` stack, every 16 layers: the stack below with
/// its type erased, so that neither rustc's layout of nested futures nor its proof that
/// every layer is a `Send` handler grows with the depth of the whole stack (each layer
/// and its [`Watch`] nest twice). One boxed future per pass through it.
#[doc(hidden)]
#[derive(Clone)]
pub struct Erased<'a>(Arc<dyn ErasedHandler + 'a>);

impl<'a> Erased<'a> {
    /// Erases the type of `stack`.
    pub fn new<H: Handler<Env> + 'a>(stack: H) -> Self {
        Erased(Arc::new(stack))
    }
}

impl Handler<Env> for Erased<'_> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        self.0.call_boxed(env).await
    }
}

impl fmt::Debug for Erased<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Erased")
    }
}

impl fmt::Debug for BoxStack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BoxStack")
    }
}
