//! `TypedAgent`: `start_typed::<T>` on any agent, and the schema of a type.

use std::future::Future;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::OutputSchema;
use super::layer::{Answer, StructuredError, answer};
use crate::agent::{Agent, Outcome};
use crate::env::Env;
use crate::error::Error;
use crate::handler::Handler;
use crate::message::Message;

impl OutputSchema {
    /// The schema of `T` (schemars, draft-07 with subschemas inlined), named after the
    /// type, with a check that the answer deserialises as a `T`: its error, with the
    /// path of the offending field, is what the model is told.
    ///
    /// ```
    /// use brute::structured::OutputSchema;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Verdict { guilty: bool, reason: Option<String> }
    ///
    /// let output = OutputSchema::of::<Verdict>();
    /// assert_eq!(output.name(), "Verdict");
    /// assert_eq!(output.schema()["required"], serde_json::json!(["guilty", "reason"]));
    /// let wrong = brute::Message::assistant(r#"{"guilty": "yes", "reason": null}"#);
    /// assert!(output.validate(&wrong).unwrap_err().contains("guilty"));
    /// ```
    pub fn of<T: JsonSchema + DeserializeOwned>() -> Self {
        OutputSchema::new(T::schema_name(), schema_of::<T>())
            .check(|value| deserialize::<T>(value).map(drop))
    }
}

/// The JSON Schema of `T` as the providers want it: draft-07, subschemas inlined, no
/// `$schema` or `title`.
fn schema_of<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft07()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut value: Value = generator.into_root_schema_for::<T>().into();
    if let Some(map) = value.as_object_mut() {
        map.remove("title");
        map.remove("$schema");
    }
    value
}

/// `value` as a `T`, the error naming the path of the field that is wrong.
fn deserialize<T: DeserializeOwned>(value: &Value) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            e.inner().to_string()
        } else {
            format!("at `{path}`: {}", e.inner())
        }
    })
}

/// The answer of a typed turn, with the turn's outcome.
#[derive(Debug)]
#[non_exhaustive]
pub struct Typed<T> {
    /// The answer.
    pub value: T,
    /// The turn: its stop reason and its env (the whole conversation).
    pub outcome: Outcome,
}

/// Typed turns on any agent: the answer is a `T`.
///
/// The turn runs with [`OutputSchema::of::<T>`](OutputSchema::of) in its env (or the
/// `OutputSchema` already there, for other settings such as `strict(false)`), and
/// its answer is read as a `T`. With a [`Structured`](super::Structured) layer in the
/// stack, an invalid answer is sent back to the model first; without one, an invalid
/// answer fails the turn at once. Either way the error is an [`Error::Layer`] of
/// `"Structured"` carrying a [`StructuredError`].
pub trait TypedAgent {
    /// Runs one turn for `prompt` whose answer is a `T`.
    fn start_typed<T>(
        &self,
        prompt: impl Into<String> + Send,
    ) -> impl Future<Output = Result<Typed<T>, Error>> + Send
    where
        T: JsonSchema + DeserializeOwned + Send;

    /// Runs one turn on a prepared env whose answer is a `T`.
    fn turn_typed<T>(&self, env: Env) -> impl Future<Output = Result<Typed<T>, Error>> + Send
    where
        T: JsonSchema + DeserializeOwned + Send;
}

impl<S: Handler<Env> + Sync> TypedAgent for Agent<S> {
    async fn start_typed<T>(&self, prompt: impl Into<String> + Send) -> Result<Typed<T>, Error>
    where
        T: JsonSchema + DeserializeOwned + Send,
    {
        let mut env = self.env();
        env.messages.push(Message::user(prompt));
        self.turn_typed(env).await
    }

    async fn turn_typed<T>(&self, mut env: Env) -> Result<Typed<T>, Error>
    where
        T: JsonSchema + DeserializeOwned + Send,
    {
        if env.extensions.get::<OutputSchema>().is_none() {
            env.extensions.insert(OutputSchema::of::<T>());
        }
        let mut outcome = self.turn(env).await?;
        let value = match outcome.env.extensions.remove::<Answer>() {
            Some(Answer(value)) => value,
            // No `Structured` layer checked it: check it here, once.
            None => check(&outcome.env)?,
        };
        let output_name = || {
            outcome
                .env
                .extensions
                .get::<OutputSchema>()
                .map_or_else(String::new, |o| o.name().to_owned())
        };
        match deserialize::<T>(&value) {
            Ok(value) => Ok(Typed { value, outcome }),
            Err(error) => Err(invalid(output_name(), 1, error, value.to_string())),
        }
    }
}

/// The answer of a turn no `Structured` layer checked.
fn check(env: &Env) -> Result<Value, Error> {
    let Some(output) = env.extensions.get::<OutputSchema>() else {
        return Err(Error::from_layer(
            "Structured",
            StructuredError::NoAnswer {
                schema: String::new(),
                why: "a layer removed the output schema".into(),
            },
        ));
    };
    let Some(message) = answer(env) else {
        let why = match &env.should_exit {
            Some(reason) => format!("it exited: {reason:?}"),
            None => "its last message is not an answer".into(),
        };
        return Err(Error::from_layer(
            "Structured",
            StructuredError::NoAnswer {
                schema: output.name().to_owned(),
                why,
            },
        ));
    };
    output
        .validate(message)
        .map_err(|error| invalid(output.name().to_owned(), 1, error, message.content.clone()))
}

fn invalid(schema: String, attempts: u32, error: String, reply: String) -> Error {
    Error::from_layer(
        "Structured",
        StructuredError::Invalid {
            schema,
            attempts,
            error,
            reply,
        },
    )
}
