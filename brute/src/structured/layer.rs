//! `Structured`: sends an answer that does not match the output schema back to the
//! model, a bounded number of times.

use serde_json::Value;

use super::OutputSchema;
use crate::env::Env;
use crate::error::Error;
use crate::handler::Handler;
use crate::message::{Message, Role};

/// Checks the turn's answer against the [`OutputSchema`] in the env and lets the model
/// correct it: an answer that does not validate stays in the conversation, followed by
/// a user message saying what is wrong, and the layers below run again, at most
/// `retries` times; then the turn fails with [`StructuredError::Invalid`] (an
/// [`Error::Layer`] of `"Structured"`). A valid answer is left in the env as an
/// [`Answer`].
///
/// A turn without an `OutputSchema` passes through untouched, so one agent serves
/// typed and untyped turns. Place it inside `SessionLog` (the corrections are stored
/// with the session) and outside the tool loop (so that the model may call tools
/// before it answers, and again after a correction).
///
/// Options: `retries: u32` (default `2`), how many times an invalid answer goes back
/// to the model.
///
/// ```
/// use brute::{Message, brute_agent, providers::ScriptedModel};
/// use brute::structured::{OutputSchema, Structured, StructuredError};
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let agent = brute_agent! {
///     use Structured { retries: 1 };
///     run ScriptedModel::new([Message::assistant("no"), Message::assistant("still no")]);
/// };
/// let mut env = agent.env();
/// env.messages.push(Message::user("A number?"));
/// env.extensions.insert(OutputSchema::new("n", json!({"type": "integer"})));
/// let error = agent.turn(env).await.unwrap_err();
/// let Some(StructuredError::Invalid { attempts, .. }) = error.downcast_ref() else { panic!("{error}") };
/// assert_eq!(*attempts, 2);
/// # });
/// ```
#[derive(crate::Middleware, Debug, Clone)]
#[middleware(crate = crate, unique)]
pub struct Structured<A> {
    app: A,
    /// How many times an invalid answer goes back to the model.
    #[middleware(default = 2)]
    retries: u32,
}

/// The validated answer of a structured turn, left in
/// [`Env::extensions`](crate::Env::extensions) by [`Structured`].
#[derive(Clone, Debug, PartialEq)]
pub struct Answer(pub Value);

/// Why a structured turn has no valid answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StructuredError {
    /// The model's last answer did not validate, after `attempts` answers.
    #[error(
        "the answer does not match the output schema `{schema}` after {attempts} attempt(s): {error}"
    )]
    Invalid {
        /// The output schema's name.
        schema: String,
        /// How many answers the model gave.
        attempts: u32,
        /// What was wrong with the last one.
        error: String,
        /// The last answer's text.
        reply: String,
    },
    /// The turn ended without an answer (a guard stopped it, or its last message
    /// calls tools).
    #[error("the turn ended without an answer for the output schema `{schema}` ({why})")]
    NoAnswer {
        /// The output schema's name.
        schema: String,
        /// How the turn ended.
        why: String,
    },
}

impl<A: Handler<Env>> Handler<Env> for Structured<A> {
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        self.app.call(env).await?;
        let Some(output) = env.extensions.get::<OutputSchema>().cloned() else {
            return Ok(());
        };
        let mut attempts = 1;
        loop {
            let Some(answer) = answer(env) else {
                // No answer to check: the caller sees how the turn ended.
                return Ok(());
            };
            let error = match output.validate(answer) {
                Ok(value) => {
                    env.extensions.insert(Answer(value));
                    return Ok(());
                }
                Err(error) => error,
            };
            if attempts > self.retries {
                return Err(Error::from_layer(
                    "Structured",
                    StructuredError::Invalid {
                        schema: output.name().to_owned(),
                        attempts,
                        error,
                        reply: answer.content.clone(),
                    },
                ));
            }
            tracing::debug!(
                brute.layer = "Structured",
                brute.structured.attempt = attempts,
                error = %error,
                "the answer does not validate; asking again"
            );
            env.messages.push(correction(&output, &error));
            attempts += 1;
            self.app.call(env).await?;
        }
    }
}

/// The last message when it is an answer: an assistant message without tool calls, in
/// a turn no guard ended.
pub(super) fn answer(env: &Env) -> Option<&Message> {
    if env.should_exit.is_some() {
        return None;
    }
    env.messages
        .last()
        .filter(|m| m.role == Role::Assistant && m.tool_calls.is_empty())
}

/// The user message that sends an invalid answer back.
fn correction(output: &OutputSchema, error: &str) -> Message {
    Message::user(format!(
        "Your answer does not match the required output format `{}`: {error}. \
         Answer again with only the corrected JSON.",
        output.name()
    ))
}
