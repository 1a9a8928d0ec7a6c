//! `SystemPrompt`: prepends the system message each turn.

use std::fmt;
use std::sync::Arc;

use crate::env::Env;
use crate::error::Error;
use crate::handler::Handler;
use crate::message::{Message, Role};
use crate::trace::traced;

/// The text of a system prompt, or a builder that writes it from the env (model name,
/// working directory, date, custom rules in `metadata`).
#[derive(Clone)]
pub enum Prompt {
    /// Fixed text.
    Text(Arc<str>),
    /// Built each turn from the env.
    Builder(Arc<dyn Fn(&Env) -> String + Send + Sync>),
}

impl Prompt {
    /// A prompt built each turn by `f`.
    ///
    /// ```
    /// use brute::Prompt;
    /// let prompt = Prompt::build(|env| format!("You are on pass {}.", env.iteration));
    /// # let _ = prompt;
    /// ```
    pub fn build(f: impl Fn(&Env) -> String + Send + Sync + 'static) -> Self {
        Prompt::Builder(Arc::new(f))
    }

    /// The prompt's text for `env`.
    #[inline]
    pub fn render(&self, env: &Env) -> String {
        match self {
            Prompt::Text(text) => String::from(&**text),
            Prompt::Builder(f) => f(env),
        }
    }
}

impl Default for Prompt {
    fn default() -> Self {
        Prompt::Text(Arc::from(DEFAULT_PROMPT))
    }
}

/// The prompt `SystemPrompt` uses when given none.
pub const DEFAULT_PROMPT: &str = "You are a capable assistant working in the user's project. \
Use the tools you are given when they help, check your work, and answer concisely.";

impl From<&str> for Prompt {
    fn from(text: &str) -> Self {
        Prompt::Text(Arc::from(text))
    }
}

impl From<String> for Prompt {
    fn from(text: String) -> Self {
        Prompt::Text(Arc::from(text))
    }
}

impl fmt::Debug for Prompt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Prompt::Text(text) => f.debug_tuple("Text").field(text).finish(),
            Prompt::Builder(_) => f.write_str("Builder(..)"),
        }
    }
}

/// Prepends the system message on the way in, unless the conversation already starts
/// with one. An empty prompt adds nothing.
///
/// ```
/// use brute::{brute_agent, Message, Role};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let agent = brute_agent! {
///     use brute::SystemPrompt { prompt: "You are terse." };
///     run |_env| async { Ok(Message::assistant("ok")) };
/// };
/// let outcome = agent.start("hi").await?;
/// assert_eq!(outcome.env.messages[0], Message::system("You are terse."));
/// # Ok::<(), brute::Error>(()) }).unwrap();
/// ```
#[derive(crate::Middleware, Debug, Clone)]
#[middleware(crate = crate)]
pub struct SystemPrompt<A> {
    app: A,
    /// The prompt: text (`"You are terse."`) or [`Prompt::build`].
    #[middleware(into)]
    prompt: Prompt,
}

impl<A: Handler<Env>> Handler<Env> for SystemPrompt<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        let span = tracing::info_span!(
            "brute.system_prompt",
            brute.layer = "SystemPrompt",
            brute.system_prompt.added = tracing::field::Empty,
        );
        let _entered = span.enter();
        if env.messages.first().is_none_or(|m| m.role != Role::System) {
            let text = self.prompt.render(env);
            if !text.is_empty() {
                env.messages.insert(0, Message::system(text));
                if !span.is_disabled() {
                    span.record("brute.system_prompt.added", true);
                }
            }
        }
        drop(_entered);
        traced!(self.app.call(env), span)
    }
}
