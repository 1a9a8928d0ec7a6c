//! Structured output: a turn whose answer is a typed value.
//!
//! Three pieces, each usable alone:
//!
//! - [`OutputSchema`], left in [`Env::extensions`](crate::Env::extensions), tells the
//!   model the shape of the answer through each provider's native mechanism: OpenAI's
//!   `response_format` with a strict JSON schema, Anthropic's forced tool (turned back
//!   into a text answer by the provider). [`OutputSchema::of`] makes one from a type
//!   (schemars).
//! - [`Structured`], a middleware, checks the answer on the way up and, when it does
//!   not match, sends it back to the model with the validation error, at most
//!   `retries` times, then fails the turn with [`StructuredError::Invalid`].
//! - [`TypedAgent`] (`agent.start_typed::<T>(prompt)`), on any agent, sets the schema,
//!   runs the turn and returns the answer as a `T`. Without a `Structured` layer in the
//!   stack it still works, with no second chance for an invalid answer.
//!
//! The answer always ends up as JSON text in the last assistant message, so sessions,
//! events and compaction see an ordinary conversation, and a stack with `SessionLog`
//! stores the corrections too.
//!
//! ```
//! use brute::{Message, brute_agent, middleware::SystemPrompt, providers::ScriptedModel};
//! use brute::structured::{Structured, TypedAgent};
//!
//! /// A city and how many people live there.
//! #[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
//! struct City {
//!     name: String,
//!     population: u64,
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! // A scripted model that first gets the shape wrong, then right.
//! let model = ScriptedModel::new([
//!     Message::assistant(r#"{"name": "Zürich"}"#),
//!     Message::assistant(r#"{"name": "Zürich", "population": 443037}"#),
//! ]);
//! let agent = brute_agent! {
//!     use SystemPrompt { prompt: "Answer in JSON." };
//!     use Structured { retries: 2 };
//!     run model;
//! };
//! let city = agent.start_typed::<City>("The largest city of Switzerland?").await?;
//! assert_eq!(city.value, City { name: "Zürich".into(), population: 443037 });
//! // The invalid answer went back to the model with what was wrong.
//! let correction = &city.outcome.env.messages[3];
//! assert!(correction.content.contains("missing field `population`"), "{}", correction.content);
//! # Ok::<(), brute::Error>(()) }).unwrap();
//! ```

#[cfg(feature = "structured")]
mod layer;
mod output;
#[cfg(feature = "structured")]
mod typed;

#[cfg(feature = "structured")]
pub use layer::{Answer, Structured, StructuredError};
pub use output::{ExtractError, OutputSchema};
#[cfg(feature = "structured")]
pub use typed::{Typed, TypedAgent};

/// The crates a typed answer, or the arguments of a hand-written tool, derive their
/// traits from, for a crate that does not depend on them itself:
/// `#[derive(serde::Deserialize, schemars::JsonSchema)]` with
/// `#[serde(crate = "brute::structured::serde")]` and
/// `#[schemars(crate = "brute::structured::schemars")]`.
#[cfg(any(feature = "structured", feature = "tools"))]
pub use {schemars, serde};
