//! The model contract: [`Model`] and the [`Completion`] it returns (public at the crate
//! root, their one path), the [`Answerer`] a delegating model notes in, and the
//! [`RunLine`] whose check `brute_agent!` asks the `Model` trait for.

use std::future::Future;
use std::sync::OnceLock;

use crate::env::Env;
use crate::error::Error;
use crate::message::Message;
use crate::usage::Usage;

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

/// A language model: one completion from the env's messages and advertised tools.
///
/// Providers implement it; so does every closure `Fn(&Env) -> impl Future<Output =
/// Result<impl Reply, Error>>`, which is what `run |env| ..` in
/// `brute_agent!` uses for a plain closure; `run async |env| ..` takes a closure whose
/// future may borrow the env.
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
    note = "`run` takes a value implementing `brute::Model` (a provider, `ScriptedModel`) or a closure `|env| ..` returning a future of `Result<Message, Error>`; a model named by a string is built first: `let model = brute::providers::from_spec(\"openai:gpt-4o-mini\")?;`, then `run model;`"
)]
pub trait Model: Send + Sync {
    /// One completion for the conversation in `env`.
    fn complete(&self, env: &Env) -> impl Future<Output = Result<Completion, Error>> + Send;

    /// The model's name, for events and tracing.
    fn name(&self) -> &str {
        "model"
    }

    /// The secrets the model holds (an HTTP provider's API key; none by default). The
    /// agent's terminal hands them to the tool pipeline through the env, which hides
    /// them from every tool result: a wrapper around a model forwards them.
    fn secrets(&self) -> Vec<&str> {
        Vec::new()
    }

    /// Not called: `brute_agent!` names it (`<_ as Model>::check_run_line`) to ask
    /// whether the `run` value is a model, so that the error is this trait's, at the
    /// value, with no helper in its notes.
    #[doc(hidden)]
    fn check_run_line(_line: &RunLine<Self>)
    where
        Self: Sized,
    {
    }

    /// One completion, as [`complete`](Model::complete), noting in `answered` which
    /// model gave it when that may not be this one's [`name`](Model::name): what the
    /// agent's terminal calls, to record the answering model ([`AnsweredBy`](super::AnsweredBy)) and price
    /// the call by its name. The default is `complete` and notes nothing; a model that
    /// delegates to one of several ([`Fallback`](super::Fallback)) overrides it.
    fn complete_noting<'m>(
        &'m self,
        env: &Env,
        answered: &Answerer<'m>,
    ) -> impl Future<Output = Result<Completion, Error>> + Send {
        let _ = answered;
        self.complete(env)
    }
}

/// Where a model that delegates to one of several notes which one answered, for the
/// agent's terminal (see [`Model::complete_noting`]). Set at most once per call.
#[derive(Debug, Default)]
pub struct Answerer<'m>(OnceLock<(&'m str, u32)>);

impl<'m> Answerer<'m> {
    /// An empty note.
    pub fn new() -> Self {
        Answerer(OnceLock::new())
    }

    /// Notes that `model`, the `attempt`-th tried, answered; a second note is ignored.
    pub fn note(&self, model: &'m str, attempt: u32) {
        let _ = self.0.set((model, attempt));
    }

    /// The model noted, and its attempt.
    pub fn get(&self) -> Option<(&'m str, u32)> {
        self.0.get().copied()
    }
}

/// The value of a `run` line of `brute_agent!`, checked there:
/// `(&&RunLine::new(value)).terminal()` is its [`Terminal`](super::Terminal) when it is a [`Model`]
/// ([`IsModel`](super::IsModel)), and otherwise one error at that line and a
/// [`Fallback`](crate::handler::Fallback) in its place ([`NotAModel`](super::NotAModel)).
#[doc(hidden)]
pub struct RunLine<M>(pub(super) std::cell::Cell<Option<M>>);

impl<M> RunLine<M> {
    /// Holds `value` for the check.
    pub fn new(value: M) -> Self {
        RunLine(std::cell::Cell::new(Some(value)))
    }
}
