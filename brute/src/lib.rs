//! # brute
//!
//! LLM agents as Rack-style middleware stacks.
//!
//! An agent turn is a request. An [`Env`] (the conversation, the advertised tools,
//! metadata) flows **down** through middleware to one terminal model call, and the
//! result flows back **up** through the same layers. Everything agentic is ordinary
//! middleware: the system prompt, the tool loop, the iteration guard, tool execution,
//! session persistence, compaction. Use what you want, in the order you want.
//!
//! ```text
//! agent.start(prompt)
//!   │  env flows down ─────────────────────────▶
//!   │  SystemPrompt      prepend the system message
//!   │  Loop::While       ┐ re-invoke while the condition holds
//!   │  MaxIterations     ┘ guard the loop
//!   │  run model         ← one completion per pass
//!   ▼  results flow back up ◀───────────────────
//! ```
//!
//! [`brute_agent!`] turns a block of `use` lines into one statically typed nested value,
//! first `use` outermost. Each layer is a struct holding the next and calls it directly,
//! so a turn is one monomorphised future with no trait object between layers (boxed
//! below every 16th layer: see [Deep stacks](#deep-stacks)). Inside a layer, what varies
//! at run time is dynamic: a session's writes go through the env's `Box<dyn Persist>`,
//! one boxed future per save.
//!
//! ```
//! use brute::{Message, brute_agent, middleware::{Loop, MaxIterations, SystemPrompt}};
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let agent = brute_agent! {
//!     use SystemPrompt { prompt: "You are terse." };
//!     use Loop::While { condition: |env| env.iteration < 2 };
//!     use MaxIterations { max: 25 };
//!     run async |env| Ok(Message::assistant(format!("pass {}", env.iteration)));
//! };
//! let outcome = agent.start("Hello").await?;
//! assert_eq!(outcome.text(), Some("pass 2"));
//! # Ok::<(), brute::Error>(()) }).unwrap();
//! ```
//!
//! ## Order encodes policy
//!
//! Middleware order is where behaviour lives, so it is **checked at compile time**.
//! Each middleware declares where it may sit (`#[middleware(inside = Loops)]`, ...) and
//! `brute_agent!` checks every `use` line against the lines around it. A misplaced
//! layer is a compile error at its `use` line naming the layer, the rule and the fix:
//!
//! ```compile_fail
//! # use brute::{Message, brute_agent, middleware::MaxIterations};
//! let agent = brute_agent! {
//!     use MaxIterations { max: 3 };   // error: `MaxIterations` must sit inside a
//!                                     // layer that provides `Loops` ...
//!     run |_env| async { Ok(Message::assistant("hi")) };
//! };
//! ```
//!
//! The built-in rules are listed in [`kind`](mod@kind). Your own middleware declares rules with
//! the same attributes and gets the same diagnostics.
//!
//! ## Writing middleware
//!
//! A middleware is a plain struct with its inner app and its options, and an impl of
//! [`Handler`] that calls the app once:
//!
//! ```
//! use brute::{Env, Error, Handler, Message, Middleware, brute_agent};
//!
//! /// Tags every assistant reply.
//! #[derive(Middleware)]
//! pub struct Tag<A> {
//!     app: A,
//!     #[middleware(into, default = "[bot] ")]
//!     prefix: String,
//! }
//!
//! impl<A: Handler<Env>> Handler<Env> for Tag<A> {
//!     async fn call(&self, env: &mut Env) -> Result<(), Error> {
//!         self.app.call(env).await?;                 // down, then back up
//!         if let Some(last) = env.messages.last_mut() {
//!             last.content.insert_str(0, &self.prefix);
//!         }
//!         Ok(())
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let agent = brute_agent! {
//!     use Tag { prefix: "> " };
//!     run |_env| async { Ok(Message::assistant("hi")) };
//! };
//! assert_eq!(agent.start("hello").await?.text(), Some("> hi"));
//! # Ok::<(), brute::Error>(()) }).unwrap();
//! ```
//!
//! ## Models and providers
//!
//! `run` takes any [`Model`]: a closure, [`ScriptedModel`](providers::ScriptedModel) (a
//! script, for tests and offline use), [`Replay`](providers::Replay) (recorded provider
//! responses), or a real provider from
//! [`providers`]: `OpenAi` for the OpenAI-compatible Chat Completions API (OpenAI,
//! Ollama, vLLM, llama.cpp, OpenRouter; feature `openai`) and `Anthropic` for the
//! Messages API (feature `anthropic`). Both stream when asked, emitting
//! [`Event::ContentDelta`] and [`Event::ReasoningDelta`], and fail with a
//! [`ModelError`] typed by cause, which `Retry` uses. Without these features brute has no
//! HTTP stack.
//!
#![cfg_attr(
    all(feature = "tools", feature = "openai", feature = "anthropic"),
    doc = "## Guides

[`guides`] holds the longer pages, each with compiled examples:
[getting started](guides::getting_started),
[writing middleware](guides::writing_middleware) (with placement rules),
[writing tools](guides::writing_tools), [providers](guides::providers) (a model from
one string: [`providers::from_spec`]),
[sessions and compaction](guides::sessions_and_compaction) and
[testing agents](guides::testing) with the scripted and replay models.
"
)]
//!
//! ## Deep stacks
//!
//! rustc computes the layout of nested async blocks recursively and fails at about 26
//! of them under the default `recursion_limit`. `brute_agent!` therefore boxes the
//! future of the stack below every 16th layer (counted from the terminal), erasing its
//! type there: stacks of up to 16 layers have no allocation at all, and a 64-layer
//! stack has three boxes. The check that names a layer which returned without calling
//! the one below it adds no future of its own: it counts the calls.

#![cfg_attr(docsrs, feature(doc_cfg))]
// The docs link the providers' items, which exist only with their features: a docs build
// without them (`cargo doc -p brute`) renders those links as plain text instead of
// warning. The documented build (`cargo doc -p brute --no-deps --all-features`, as
// docs.rs) has them all and denies broken links in CI.
#![cfg_attr(
    not(all(feature = "openai", feature = "anthropic")),
    allow(rustdoc::broken_intra_doc_links)
)]

mod agent;
pub mod compaction;
pub mod cost;
pub mod env;
mod error;
mod event;
#[cfg(all(feature = "tools", feature = "openai", feature = "anthropic"))]
#[cfg_attr(
    docsrs,
    doc(cfg(all(feature = "tools", feature = "openai", feature = "anthropic")))
)]
pub mod guides;
mod handler;
#[cfg(feature = "http")]
pub(crate) mod http;
pub mod kind;
pub mod message;
pub mod middleware;
pub mod model;
#[cfg(feature = "otlp")]
#[cfg_attr(docsrs, doc(cfg(feature = "otlp")))]
pub mod otlp;
pub mod providers;
mod scripted;
pub mod session;
pub mod stack;
mod stop;
pub mod stream;
pub mod structured;
mod tool;
#[cfg(feature = "tools")]
#[cfg_attr(docsrs, doc(cfg(feature = "tools")))]
pub mod tools;
mod trace;
mod usage;
// Last: rustc names an item in its messages by the first public path it finds, and the
// item's own module comes before the prelude's re-export of it.
pub mod prelude;

#[doc(hidden)]
pub mod __private;

pub use agent::{Agent, BoxAgent, Outcome};
pub use env::state::Env;
pub use error::{BoxError, Error, ModelError};
pub use event::{Event, EventKind};
pub use handler::Handler;
pub use message::chat::{Message, Role, ToolCall};
pub use model::contract::{Completion, Model};
pub use stack::middleware::Middleware;
pub use stop::{ExitReason, StopReason};
pub use usage::Usage;

/// Turns an async fn into a [`Tool`](tools::Tool): the fn's doc comment is the description, its
/// parameters are the arguments (their doc comments describe them in the schema), and
/// the parameter of type `&ToolContext` (under any name, written `&ToolContext` or with
/// a path such as `&brute::tools::ToolContext`) receives the
/// [`ToolContext`](tools::ToolContext).
///
/// Arguments are deserialised from the model's JSON, so they are owned: a `&str`,
/// `&[T]` or `&Path` parameter is a compile error naming the type to take instead
/// (`String`, `Vec<T>`, `PathBuf`).
///
/// `#[tool] async fn read_lines(..)` keeps the fn as written (call it, test it) and
/// generates the unit struct `ReadLines`, the tool. Its arguments' struct (deriving
/// `Deserialize` and `JsonSchema`) is `<ReadLines as Tool>::Args`, defined out of
/// the way of the user's names. The fn returns
/// `Result<T, E>` with `T: Into<ToolOutput>` (`String`, `&str`, `serde_json::Value`)
/// and `E: Into<ToolError>` (`ToolError`, `String`, `&str`).
///
/// Options: `#[tool(name = "..", description = "..", schema = expr, crate = path)]`;
/// attributes on parameters (`#[serde(default)]`, `#[schemars(..)]`) go to the
/// argument's field. `schema` advertises `expr` (a `serde_json::Value`) as the tool's
/// exact JSON Schema instead of the one derived from its parameters; the arguments are
/// still checked by deserialising them into the parameters' types.
///
/// A tool with state (a pool, a client, a counter) is a struct with `#[tool]` on an
/// `impl` block holding one `async fn name(&self, ..)`: the struct is the tool, the
/// method's name is its name and its parameters the arguments. Calls may run at
/// the same time, so state that changes sits behind an atomic or a lock:
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use brute::tools::{ToolError, ToolSet};
///
/// struct Counter {
///     count: AtomicU64,
/// }
///
/// #[brute::tool]
/// impl Counter {
///     /// Counts its calls.
///     async fn count(&self) -> Result<String, ToolError> {
///         Ok((self.count.fetch_add(1, Ordering::Relaxed) + 1).to_string())
///     }
/// }
///
/// let mut specs = Vec::new();
/// Counter { count: AtomicU64::new(0) }.specs(&mut specs);
/// assert_eq!(specs[0].name, "count");
/// ```
///
/// ```
/// use brute::tools::{ToolContext, ToolError, ToolSet};
///
/// /// Counts the words of a text.
/// #[brute::tool]
/// async fn word_count(
///     /// The text.
///     text: String,
///     /// Count only words longer than this (default 0).
///     #[serde(default)]
///     longer_than: usize,
///     cx: &ToolContext,
/// ) -> Result<String, ToolError> {
///     let _ = cx.sandbox().root();
///     Ok(text.split_whitespace().filter(|w| w.len() > longer_than).count().to_string())
/// }
///
/// let mut specs = Vec::new();
/// WordCount.specs(&mut specs);
/// assert_eq!(specs[0].name, "word_count");
/// assert_eq!(specs[0].description, "Counts the words of a text.");
/// assert_eq!(specs[0].parameters["required"], serde_json::json!(["text"]));
///
/// // The fn is still there as written: a test calls it with a context of its own.
/// let dir = std::env::temp_dir();
/// let cx = ToolContext::new(&dir).expect("a context");
/// let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
/// let count = runtime.block_on(word_count("a bb ccc".into(), 1, &cx)).expect("a count");
/// assert_eq!(count, "2");
/// ```
#[cfg(feature = "tools")]
pub use brute_macros::tool;

/// Derives [`Middleware`] for a struct holding its inner app and its options.
///
/// The struct has one field for the inner app, named `app` or marked
/// `#[middleware(app)]`, whose type is a type parameter. Every other field is an option,
/// set in `brute_agent!` with `use Name { field: value }`. The derive implements the
/// public contract of [`stack`](mod@stack), the same a hand-written middleware
/// implements, and writes no item into your module (you may write your own `Name::new`):
///
/// - an options type, reached as `Name::options()`, with one method per option and the
///   field defaults; `use Name { max: 3 }` is `Name::options().max(3)`;
/// - [`Layer`](stack::Layer) for the options, which wraps an inner app into `Name`;
/// - [`Middleware`] for `Name<NoApp, ..>` and for the options, with the placement
///   rules `brute_agent!` checks at compile time;
/// - [`Wraps`](stack::Wraps) for `Name`: `get_ref`, `get_mut` and `into_inner` of the
///   inner app.
///
/// Field attributes: `#[middleware(default = expr)]` (otherwise the type's `Default`),
/// `#[middleware(into)]` (the setter takes `impl Into<T>`), `#[middleware(state)]`
/// (internal state, not an option, built from its default), `#[middleware(app)]`.
/// A field whose type is a type parameter is a generic option: setting it changes
/// the options' type; `#[middleware(default_type = T)]` names the type it has until it
/// is set. `#[middleware(bound = Fn(&Env) -> bool)]` on a generic option makes its
/// setter require that bound, so a closure given as the option gets its parameter
/// types inferred (`use Loop::While { condition: |env| env.iteration < 3 }`).
///
/// Struct attributes: `provides = Kind`, `inside = Kind` (a layer further out provides
/// it), `outside = Kind` (none further out does), `requires_inner = Kind` (a layer
/// further in provides it), `forbids_inner = Kind` (none further in does), `unique`,
/// `name = "Shown::Name"` for messages, and `crate = path` when `brute` is renamed.
///
/// ```
/// use brute::{Env, Error, Handler, Middleware};
///
/// brute::kind! {
///     /// Layers that check permissions.
///     pub Permissions;
/// }
///
/// /// Refuses turns once `budget` model calls were made.
/// #[derive(Middleware)]
/// #[middleware(provides = Permissions, inside = brute::kind::Loops, unique)]
/// pub struct Budget<A> {
///     app: A,
///     /// Model calls allowed per turn.
///     #[middleware(default = 10)]
///     budget: u32,
/// }
///
/// impl<A: Handler<Env>> Handler<Env> for Budget<A> {
///     async fn call(&self, env: &mut Env) -> Result<(), Error> {
///         if env.iteration > self.budget {
///             return Err(Error::layer("Budget", "out of budget"));
///         }
///         self.app.call(env).await
///     }
/// }
/// ```
pub use brute_macros::Middleware;

/// Builds an agent from a block of `use` lines, outermost first, then one `run`.
///
/// ```text
/// brute_agent! {
///     use Path;                          // a middleware with default options
///     use Path { option: value, .. };    // options by name; omitted ones keep defaults
///     run model;                         // a Model value, or a closure |env| ..
/// }
/// ```
///
/// `run` takes a [`Model`] value or a closure over the env. A closure's future may
/// borrow the env when it is an async closure, `run async |env| { .. }`, or a closure
/// whose whole body is an async block, `run |env| async { .. }` (written as the
/// former). `run |env| { let n = ..; async move { .. } }` reads the env before its
/// future, and `run async move |env| ..` must not borrow what it moved in (rustc
/// says "async closure does not implement `Fn`"): capture a reference or clone inside.
/// `Loop::While { condition }` takes any `Fn(&Env) -> bool`, capturing or not.
///
/// The result is an [`Agent`] over the nested stack type. Each option is a method of the
/// middleware's options, so an unknown option or a value of the wrong type is a compile
/// error at that option. Each `use` line is checked at its own span: that it names a
/// middleware, that its placement rules hold, and that the layer it builds is a
/// [`Handler`] over the layers below it; `run` is checked to be a [`Model`]. Each
/// mistake is one error at its line. A middleware that returns without calling its
/// inner app, on any pass, and neither ended the turn nor changed the transcript in its
/// place, fails the turn with an error naming that layer alone, rather than the turn
/// ending `Ok` with no answer.
/// [`stack::Stack`] builds the same stack without the macro.
///
/// To store agents in structs, the same block can declare a named type: write
/// `pub type Name<..>;` first, generic arguments of middleware in the paths, and the
/// terminal's type after `run`:
///
/// ```
/// use brute::{Agent, Message, Model, brute_agent, middleware::{Loop, MaxIterations}};
///
/// brute_agent! {
///     pub type Bot<M>;
///     use Loop::While;
///     use MaxIterations;
///     run M;
/// }
///
/// fn bot<M: Model>(model: M) -> Bot<M> {
///     brute_agent! {
///         use Loop::While;
///         use MaxIterations { max: 5 };
///         run model;
///     }
/// }
/// ```
///
/// See the crate documentation for the model and [`kind`](mod@kind) for the rules that are checked.
#[macro_export]
macro_rules! brute_agent {
    ($($tokens:tt)*) => {
        $crate::__private::v1::__brute_agent! { [$crate] $($tokens)* }
    };
}

/// Builds a bare stack with the `brute_agent!` grammar, for sub-pipelines over env types
/// of their own (a tool pipeline, a compactor). `run` takes any [`Handler`]; a closure
/// literal becomes [`handler_fn`](stack::handler_fn).
///
/// ```
/// use brute::{Env, Handler, Message, middleware::Loop, pipeline};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let stack = pipeline! {
///     use Loop::While { condition: |env| env.iteration < 3 };
///     run |env: &mut Env| {
///         env.messages.push(Message::assistant("pass"));
///         async { Ok(()) }
///     };
/// };
/// let mut env = Env::new();
/// stack.call(&mut env).await?;
/// assert_eq!(env.messages.len(), 3);
/// # Ok::<(), brute::Error>(()) }).unwrap();
/// ```
#[macro_export]
macro_rules! pipeline {
    ($($tokens:tt)*) => {
        $crate::__private::v1::__brute_pipeline! { [$crate] $($tokens)* }
    };
}
