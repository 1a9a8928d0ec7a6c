//! Models: the terminal of an agent stack, doing one completion per pass.

use std::future::Future;

use serde::{Deserialize, Serialize};
use tracing::Span;

use crate::trace::{in_span, traced};

use crate::env::Env;
use crate::error::Error;
use crate::event::Event;
use crate::handler::Handler;
use crate::message::Message;

/// Tokens one model call used, as the provider reported them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's cache.
    pub cached_tokens: u64,
}

/// What one model call returns: the assistant message and, when known, its usage.
#[derive(Clone, Debug, PartialEq)]
pub struct Completion {
    /// The assistant message (text, reasoning, tool calls).
    pub message: Message,
    /// Tokens used, if the provider said.
    pub usage: Option<Usage>,
}

impl From<Message> for Completion {
    fn from(message: Message) -> Self {
        Completion {
            message,
            usage: None,
        }
    }
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

/// A language model: one completion from the env's messages and advertised tools.
///
/// Providers implement it; so does every closure `Fn(&Env) -> impl Future<Output =
/// Result<impl Reply, Error>>`, which is what `run |env| ..` in
/// `brute_agent!` uses. A closure's future must not borrow the env: read what you need
/// before the `async` block.
///
/// ```
/// use brute::{Completion, Env, Error, Message, Model};
///
/// /// Echoes the last user message.
/// struct Echo;
///
/// impl Model for Echo {
///     async fn complete(&self, env: &Env) -> Result<Completion, Error> {
///         let last = env.messages.last().map(|m| m.content.as_str()).unwrap_or("");
///         Ok(Message::assistant(format!("you said: {last}")).into())
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the terminal of `brute_agent!`: it is not a model",
    label = "`run` needs a model here",
    note = "`run` takes a value implementing `brute::Model` (a provider, `ScriptedModel`) or a closure `|env| ..` returning a future of `Result<Message, Error>`"
)]
pub trait Model: Send + Sync {
    /// One completion for the conversation in `env`.
    fn complete(&self, env: &Env) -> impl Future<Output = Result<Completion, Error>> + Send;

    /// The model's name, for events and tracing.
    fn name(&self) -> &str {
        "model"
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
/// env and adds its usage to `metadata["usage"]`.
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
        let span = call_span(self.model.name(), env);
        in_span(&span, || before_call(env))?;
        let Completion { message, usage } = traced!(self.model.complete(env), span.clone())?;
        let _entered = (!span.is_disabled()).then(|| span.enter());
        after_call(env, message, usage, &span)
    }
}

/// The terminal `run |env| ..` builds: the same as [`Terminal`] over a closure, but
/// calling the closure directly rather than through [`Model::complete`], which saves
/// one level of future per pass.
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
        in_span(&span, || before_call(env))?;
        let (message, usage) = traced!((self.f)(env), span.clone())?.into_parts();
        let _entered = (!span.is_disabled()).then(|| span.enter());
        after_call(env, message, usage, &span)
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
        brute.iteration = env.iteration,
        brute.messages = env.messages.len(),
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
    );
    if !span.is_disabled() {
        span.record("otel.name", format!("chat {model}"));
    }
    span
}

/// What every terminal does before the model call: make everything so far durable
/// (see [`Env::checkpoint`]) and report the request.
#[inline]
fn before_call(env: &mut Env) -> Result<(), Error> {
    env.checkpoint()?;
    env.emit(Event::ModelRequest {
        messages: env.messages.len(),
        tools: env.tools.len(),
    });
    Ok(())
}

/// What every terminal does with the model's answer: count usage, append the message,
/// make it durable before any tool runs, report it.
#[inline]
fn after_call(
    env: &mut Env,
    message: Message,
    usage: Option<Usage>,
    span: &Span,
) -> Result<(), Error> {
    if let Some(usage) = &usage {
        add_usage(env, usage);
        env.extensions.insert(crate::compaction::ReportedUsage {
            prompt_messages: env.messages.len(),
            tokens: usize::try_from(usage.input_tokens + usage.output_tokens).unwrap_or(usize::MAX),
        });
        if !span.is_disabled() {
            span.record("gen_ai.usage.input_tokens", usage.input_tokens);
            span.record("gen_ai.usage.output_tokens", usage.output_tokens);
        }
    }
    if capture_content() {
        tracing::debug!(
            gen_ai.output.content = %message.content,
            gen_ai.output.tool_calls = message.tool_calls.len(),
            "gen_ai.choice"
        );
    }
    env.messages.push(message);
    env.checkpoint()?;
    if let Some(message) = env.messages.last() {
        env.emit(Event::ModelResponse {
            message,
            usage: usage.as_ref(),
        });
    }
    Ok(())
}

/// Whether traces may carry message content: off unless the OpenTelemetry variable
/// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` is `true`. Read once.
#[inline]
pub(crate) fn capture_content() -> bool {
    static CAPTURE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *CAPTURE.get_or_init(|| {
        std::env::var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
            .is_ok_and(|v| v.eq_ignore_ascii_case("true"))
    })
}

/// Adds one call's usage to the running totals in `env.metadata["usage"]`.
pub fn add_usage(env: &mut Env, usage: &Usage) {
    let entry = env
        .metadata
        .entry("usage")
        .or_insert_with(|| serde_json::json!({}));
    if !entry.is_object() {
        *entry = serde_json::json!({});
    }
    if let Some(totals) = entry.as_object_mut() {
        for (key, value) in [
            ("input_tokens", usage.input_tokens),
            ("output_tokens", usage.output_tokens),
            ("cached_tokens", usage.cached_tokens),
        ] {
            let sum = totals.get(key).and_then(|v| v.as_u64()).unwrap_or(0) + value;
            totals.insert(key.into(), sum.into());
        }
    }
}
