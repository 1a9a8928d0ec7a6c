//! Models: the terminal of an agent stack, doing one completion per pass.

use std::future::Future;

use tracing::Span;

use crate::trace::{in_span, otel_int, traced};

use crate::cost::{Cost, Prices};
use crate::env::Env;
use crate::error::Error;
use crate::event::Event;
use crate::handler::Handler;
use crate::message::Message;
pub use crate::tool::ToolSpec;
pub use crate::usage::LastCall;
use crate::usage::Usage;

mod call_ids;
pub(crate) mod contract;
mod fallback;

pub use contract::Answerer;
#[doc(hidden)]
pub use contract::RunLine;
pub(crate) use contract::{Completion, Model};
pub use fallback::{AnsweredBy, Fallback, FallbackChain, FallbackOn, First, Or};

/// The body of a terminal's pass around `$reply` (a future of `Result<impl Reply,
/// Error>` that reads `$env`): the durability step, the request event, the call, the
/// answer appended, the durability step again, the response event. Every `run` line
/// (a model, `|env| ..`, `async |env| ..`) builds a terminal on it, so the model or
/// closure never sees an env whose changes are not stored, and its reply is stored
/// before any tool runs: one of the framework's durability points (`env/persist.rs`). A macro rather than
/// an `async fn`, so that the steps are awaited in place in the terminal's own future
/// (a nested future per step cost measurably per model call), and the durability step
/// is not entered at all without a persistence layer.
macro_rules! model_pass {
    ($env:ident, $span:ident, $model:expr, $reply:expr) => {{
        $env.mark_terminal();
        if $env.persists() {
            traced!($env.persist(), ref $span)?;
        }
        before_call($env);
        let (message, usage) = match traced!($reply, ref $span)
            .and_then(|reply| call_ids::within_cap(reply.into_parts()))
        {
            Ok(reply) => reply,
            Err(error) => {
                crate::trace::record_error(&$span, &error);
                return Err(error);
            }
        };
        let model = $model;
        let cost = after_call($env, model, message, usage, &$span);
        if $env.persists() {
            traced!($env.persist(), ref $span)?;
        }
        respond($env, usage, cost);
        Ok(())
    }};
}

/// What a `run |env| ..` closure may answer with: a bare [`Message`], or a
/// [`Completion`] that also carries usage.
pub trait Reply: Send {
    /// The assistant message and the usage, if any.
    fn into_parts(self) -> (Message, Option<Usage>);
}

impl Reply for Message {
    #[inline]
    fn into_parts(self) -> (Message, Option<Usage>) {
        (self, None)
    }
}

impl Reply for Completion {
    #[inline]
    fn into_parts(self) -> (Message, Option<Usage>) {
        (self.message, self.usage)
    }
}

#[diagnostic::do_not_recommend]
impl<F, Fut, R> Model for F
where
    F: Fn(&Env) -> Fut + Send + Sync,
    Fut: Future<Output = Result<R, Error>> + Send,
    R: Reply,
{
    async fn complete(&self, env: &Env) -> Result<Completion, Error> {
        let (message, usage) = self(env).await?.into_parts();
        Ok(Completion { message, usage })
    }
}

/// The terminal layer of an agent: calls the model once, appends its message to the
/// env and adds its usage to [`Env::usage`].
#[derive(Clone, Debug)]
pub struct Terminal<M> {
    model: M,
}

impl<M> Terminal<M> {
    /// A terminal calling `model`.
    pub fn new(model: M) -> Self {
        Terminal { model }
    }

    /// The model.
    pub fn model(&self) -> &M {
        &self.model
    }
}

impl<M: Model> Handler<Env> for Terminal<M> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        #[cfg(feature = "tools")]
        hand_over_secrets(env, self.model.secrets());
        let span = call_span(self.model.name(), env);
        let answered = Answerer::new();
        model_pass!(
            env,
            span,
            match answered.get() {
                None => self.model.name(),
                Some((model, attempt)) => answered_by(env, &span, model, attempt),
            },
            self.model.complete_noting(env, &answered)
        )
    }
}

/// Records that `model`, the `attempt`-th of a [`Fallback`], answered: in the env as
/// [`AnsweredBy`] and on the call's span. Answers the name to price the call by.
#[cold]
fn answered_by<'m>(env: &mut Env, span: &Span, model: &'m str, attempt: u32) -> &'m str {
    span.record("gen_ai.response.model", model);
    match env.extensions.get_mut::<AnsweredBy>() {
        Some(known) if known.model == model => known.attempt = attempt,
        _ => {
            env.extensions.insert(AnsweredBy::new(model, attempt));
        }
    }
    model
}

/// The API keys of the model an agent runs, left in the env by its terminal for the
/// tool pipeline, which hides them from tool results (read in `tools::pipeline`).
#[cfg(feature = "tools")]
pub(crate) struct ModelSecrets(pub(crate) Vec<String>);

/// Leaves `keys` in `env` for the tool pipeline unless they are there already: a model
/// without keys costs a branch, one with a key a lookup and a comparison per pass.
#[cfg(feature = "tools")]
#[inline]
fn hand_over_secrets(env: &mut Env, keys: Vec<&str>) {
    if keys.is_empty() {
        return;
    }
    if env
        .extensions
        .get::<ModelSecrets>()
        .is_none_or(|known| !known.0.iter().map(String::as_str).eq(keys.iter().copied()))
    {
        let keys = keys.into_iter().map(str::to_string).collect();
        env.extensions.insert(ModelSecrets(keys));
    }
}

/// The terminal `run |env| ..` builds: the same as [`Terminal`] over a closure, but
/// calling the closure directly rather than through [`Model::complete`], which saves
/// one level of future per pass. Named only by the code `brute_agent!` writes.
#[doc(hidden)]
#[derive(Clone, Debug)]
pub struct FnTerminal<F> {
    f: F,
}

impl<F> FnTerminal<F> {
    /// A terminal calling `f` once per pass.
    pub fn new(f: F) -> Self {
        FnTerminal { f }
    }
}

impl<F, Fut, R> Handler<Env> for FnTerminal<F>
where
    F: Fn(&Env) -> Fut + Send + Sync,
    Fut: Future<Output = Result<R, Error>> + Send,
    R: Reply,
{
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        let span = call_span("closure", env);
        model_pass!(env, span, "closure", (self.f)(env))
    }
}

/// One span per model call, named after the OpenTelemetry GenAI conventions. A
/// disabled span evaluates no field and allocates nothing.
#[inline]
fn call_span(model: &str, env: &Env) -> Span {
    let span = tracing::info_span!(
        "chat",
        otel.name = tracing::field::Empty,
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.request.model = model,
        gen_ai.response.model = tracing::field::Empty,
        brute.iteration = env.iteration,
        brute.messages = env.messages.len(),
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
        gen_ai.usage.cost = tracing::field::Empty,
        brute.cost_usd = tracing::field::Empty,
        error.type = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
        otel.status_description = tracing::field::Empty,
    );
    if !span.is_disabled() {
        span.record("otel.name", format!("chat {model}"));
    }
    span
}

/// What every terminal does before the model call, after the durability step
/// ([`Env::persist`]) made everything so far durable: report the request.
#[inline]
fn before_call(env: &Env) {
    env.emit(Event::ModelRequest {
        messages: env.messages.len(),
        tools: env.tools.len(),
    });
}

/// What every terminal does with the model's answer before the durability step: append
/// it, give its tool calls unique ids, count usage and price it by the model's name
/// (with the env's [`Prices`], else the published ones). The terminal then makes it
/// durable before any tool runs ([`Env::persist`]) and reports it ([`respond`]) with
/// the cost returned here.
#[inline]
fn after_call(
    env: &mut Env,
    model: &str,
    message: Message,
    usage: Option<Usage>,
    span: &Span,
) -> Option<Cost> {
    let pass = env.iteration;
    // Call ids unique across the session, before the reply is stored; appended first
    // and fixed in place: the reply is not moved again.
    call_ids::append(&mut env.messages, message, pass);
    let cost = match usage {
        Some(usage) => {
            env.record_call(env.messages.len() - 1, usage);
            let cost = match env.extensions.get::<Prices>() {
                Some(prices) => prices.cost(model, &usage),
                None => usage.cost(model),
            };
            if let Some(cost) = cost {
                env.add_cost(cost);
            }
            if !span.is_disabled() {
                // As `i64`: OpenTelemetry's integers, which exporters send a `u64` as text.
                span.record("gen_ai.usage.input_tokens", otel_int(usage.input_tokens));
                span.record("gen_ai.usage.output_tokens", otel_int(usage.output_tokens));
                if let Some(cost) = cost {
                    crate::trace::record_cost(span, cost.picos());
                    span.record(
                        "brute.cost_usd",
                        tracing::field::display(format!("{cost:.6}")),
                    );
                }
            }
            cost
        }
        None => {
            env.count_unreported_call();
            None
        }
    };
    if env.captures_content()
        && let Some(message) = env.messages.last()
    {
        in_span(span, || {
            tracing::debug!(
                gen_ai.output.content = %message.content,
                gen_ai.output.tool_calls = message.tool_calls.len(),
                "gen_ai.choice"
            );
        });
    }
    cost
}

/// Reports the model's answer, once it is durable.
#[inline]
fn respond(env: &Env, usage: Option<Usage>, cost: Option<Cost>) {
    if let Some(message) = env.messages.last() {
        env.emit(Event::ModelResponse {
            message,
            usage: usage.as_ref(),
            cost,
        });
    }
}

/// A closure over the env whose future may borrow it: what `run async |env| ..` (and
/// `run |env| async { .. }`, which `brute_agent!` writes as the former) must be. Every
/// `Fn(&'a Env) -> impl Future` is one; an async closure is one when it does not move
/// its captures into itself (`async |env| ..`, not `async move |env| ..`). Named only
/// by the code `brute_agent!` writes.
#[doc(hidden)]
pub trait EnvFn<'a>: Send + Sync {
    /// What the closure answers with.
    type Reply: Reply;
    /// The future of one call.
    type Future: Future<Output = Result<Self::Reply, Error>> + Send;

    /// Calls the closure.
    fn call_env(&'a self, env: &'a Env) -> Self::Future;
}

impl<'a, F, Fut, R> EnvFn<'a> for F
where
    F: Fn(&'a Env) -> Fut + Send + Sync,
    Fut: Future<Output = Result<R, Error>> + Send,
    R: Reply,
{
    type Reply = R;
    type Future = Fut;

    #[inline]
    fn call_env(&'a self, env: &'a Env) -> Fut {
        self(env)
    }
}

/// The terminal `run async |env| ..` builds: like [`FnTerminal`], but the closure's
/// future may borrow the env for the whole model call. Named only by the code
/// `brute_agent!` writes.
#[doc(hidden)]
#[derive(Clone, Debug)]
pub struct AsyncFnTerminal<F> {
    f: F,
}

impl<F> AsyncFnTerminal<F> {
    /// A terminal calling `f` once per pass.
    pub fn new(f: F) -> Self {
        AsyncFnTerminal { f }
    }
}

impl<F> Handler<Env> for AsyncFnTerminal<F>
where
    F: for<'a> EnvFn<'a>,
{
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        let span = call_span("closure", env);
        model_pass!(env, span, "closure", self.f.call_env(env))
    }
}

/// The check of a [`RunLine`] that passes.
#[doc(hidden)]
pub trait IsModel {
    /// The terminal.
    type Terminal;
    /// The terminal over the model.
    fn terminal(&self) -> Self::Terminal;
}

impl<M: Model> IsModel for &RunLine<M> {
    type Terminal = Terminal<M>;
    fn terminal(&self) -> Terminal<M> {
        match self.0.take() {
            Some(model) => Terminal::new(model),
            None => unreachable!("a `run` line is checked once"),
        }
    }
}

/// The check of a [`RunLine`] that fails: a fallback terminal, so that nothing
/// further out fails again. The error itself is [`ask_run_line`]'s.
#[doc(hidden)]
pub trait NotAModel {
    /// A fallback terminal.
    fn terminal(&self) -> crate::handler::Fallback;
}

impl<M> NotAModel for RunLine<M> {
    fn terminal(&self) -> crate::handler::Fallback {
        crate::handler::Fallback
    }
}

/// Asks whether the value `line` holds is a [`Model`]:
/// `ask_run_line(&line, <_ as Model>::check_run_line)`.
#[doc(hidden)]
pub fn ask_run_line<M>(_line: &RunLine<M>, _question: fn(&RunLine<M>)) {}

/// `run |env| ..;` in `brute_agent!`: the closure's signature spelled out, so that
/// rustc can infer the type of `env`.
#[doc(hidden)]
pub fn terminal_fn<F, Fut, R>(f: F) -> FnTerminal<F>
where
    F: Fn(&Env) -> Fut + Send + Sync,
    Fut: Future<Output = Result<R, Error>> + Send,
    R: Reply,
{
    FnTerminal::new(f)
}

/// `run async |env| ..;` (and `run |env| async { .. }`, rewritten to it): the
/// closure's future may borrow the env. The `AsyncFn` bound gives rustc the type of
/// `env`; `EnvFn` gives the future's `Send`.
#[doc(hidden)]
pub fn terminal_async<F, R>(f: F) -> AsyncFnTerminal<F>
where
    F: AsyncFn(&Env) -> Result<R, Error> + for<'a> EnvFn<'a>,
    R: Reply,
{
    AsyncFnTerminal::new(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model that implements only `complete`, answering with `usage` (if any).
    struct Plain(Option<Usage>);

    impl Model for Plain {
        async fn complete(&self, _: &Env) -> Result<Completion, Error> {
            Ok(Completion {
                message: Message::assistant("hi"),
                usage: self.0,
            })
        }
    }

    /// A call's usage is recorded against the prompt it was sent: the messages before
    /// its reply (what compaction measures the history by).
    #[tokio::test]
    async fn a_calls_usage_covers_the_messages_before_its_reply() {
        let mut env = Env::new();
        env.messages.push(Message::user("one"));
        env.messages.push(Message::assistant("two"));
        env.messages.push(Message::user("three"));
        let done = Terminal::new(Plain(Some(Usage::new(30, 2))))
            .call(&mut env)
            .await;
        assert!(done.is_ok(), "{done:?}");
        let last = env
            .last_call()
            .map(|call| (call.prompt_messages, call.usage));
        assert_eq!(last, Some((3, Usage::new(30, 2))));
        assert_eq!(env.messages.len(), 4);
    }

    /// A model that names itself nothing and holds no key is called `model` in events
    /// and traces, and its terminal leaves the tool pipeline no secret to hide.
    #[cfg(feature = "tools")]
    #[tokio::test]
    async fn a_model_that_holds_no_key_hands_none_over() {
        let plain = Plain(None);
        assert_eq!(plain.name(), "model");
        assert!(plain.secrets().is_empty());
        let mut env = Env::new();
        env.messages.push(Message::user("hi"));
        let done = Terminal::new(plain).call(&mut env).await;
        assert!(done.is_ok(), "{done:?}");
        assert_eq!(env.messages.len(), 2);
        assert!(env.extensions.get::<ModelSecrets>().is_none());
    }
}
