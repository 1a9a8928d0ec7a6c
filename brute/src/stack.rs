//! The layer contract: how a stack is put together and where each layer may sit.
//!
//! brute's contract is tower's, over an env instead of a request:
//!
//! - [`Handler<E>`](crate::Handler) (tower's `Service`): what a built layer does with
//!   the env; a middleware holds its inner app and calls it.
//! - [`Layer<A>`] (tower's `Layer`): a value (the options) that wraps an inner app
//!   `A` into the middleware.
//! - [`Middleware`]: what `use Name { option: value }` in `brute_agent!` finds through
//!   the bare path `Name`: the options at their defaults and the layer's
//!   [`Placement`]. Each `option: value` calls the options' method `option(value)`.
//!
//! `#[derive(Middleware)]` writes all of it for a struct holding its app and options;
//! nothing it generates is needed to write a middleware by hand. A hand-written one is
//! two structs and one impl per trait: the options (`Layer`, and `Middleware` with the
//! placement, on the options type: `use` finds it by its name, and [`Stack::layer`]
//! takes it) and the layer (`Handler`). With its own placement rule:
//!
//! ```
//! use brute::kind::Loops;
//! use brute::stack::{Layer, Placement, Stack};
//! use brute::{Env, Error, Handler, Message, Middleware, brute_agent, middleware::Loop as LoopLayer};
//!
//! /// The options of a layer that counts the passes of a turn in `env.metadata[key]`.
//! pub struct CountPasses {
//!     key: String,
//! }
//!
//! impl CountPasses {
//!     /// The metadata key (option `key`).
//!     pub fn key(mut self, key: impl Into<String>) -> Self {
//!         self.key = key.into();
//!         self
//!     }
//! }
//!
//! /// What `use CountPasses { .. }` and `Stack::layer` find: the options at their
//! /// defaults, and where the layer may sit.
//! impl Middleware for CountPasses {
//!     type Options = CountPasses;
//!     const PLACEMENT: Placement = Placement::new("CountPasses", module_path!()).inside::<Loops>();
//!     fn options() -> CountPasses {
//!         CountPasses { key: "passes".into() }
//!     }
//! }
//!
//! impl<A> Layer<A> for CountPasses {
//!     type Output = CountPassesLayer<A>;
//!     fn layer(self, app: A) -> CountPassesLayer<A> {
//!         CountPassesLayer { app, key: self.key }
//!     }
//! }
//!
//! /// The layer, around the stack below it.
//! pub struct CountPassesLayer<A> {
//!     app: A,
//!     key: String,
//! }
//!
//! impl<A: Handler<Env>> Handler<Env> for CountPassesLayer<A> {
//!     async fn call(&self, env: &mut Env) -> Result<(), Error> {
//!         env.metadata.insert(self.key.clone(), env.iteration.into());
//!         self.app.call(env).await
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let agent = brute_agent! {
//!     use LoopLayer::While { condition: |env| env.iteration < 3 };
//!     use CountPasses { key: "n" };
//!     run |_env| async { Ok(Message::assistant("pass")) };
//! };
//! assert_eq!(agent.start("go").await?.env.metadata["n"], 3);
//!
//! let agent = Stack::new()
//!     .layer(LoopLayer::While::options().condition(|env| env.iteration < 2))
//!     .layer(CountPasses::options().key("k"))
//!     .run(brute::providers::ScriptedModel::new([Message::assistant("one"), Message::assistant("two")]));
//! assert_eq!(agent.start("go").await?.env.metadata["k"], 2);
//! # Ok::<(), brute::Error>(()) }).unwrap();
//! ```
//!
//! A layer that is one closure needs no struct: [`middleware_fn`] (axum's `from_fn`)
//! makes one from `async |env, next| { ..; next.run(env).await }`, with a placement
//! declared on a type of yours ([`PlaceFn`]); see [`MiddlewareFn`].
//!
//! Placement rules come from two places: the layer's own ([`Placement::inside`],
//! [`outside`](Placement::outside), [`requires_inner`](Placement::requires_inner),
//! [`forbids_inner`](Placement::forbids_inner), [`unique`](Placement::unique), or the
//! derive's `#[middleware(inside = K, ..)]`), and the [kinds](mod@crate::kind) it
//! [provides](Placement::provides): a kind can carry rules for every layer providing
//! it, so a compactor of your own obeys the same placement as the built-in one. When a
//! layer requires a kind further in and a layer providing it sits further out where
//! its own rules forbid it, only the misplaced layer is reported.
//!
//! [`Stack`] builds the same stack without the macro, for code that composes stacks
//! generically; [`handler_fn`] makes a closure a [`Handler`](crate::Handler), for the
//! terminal of a bare [`pipeline!`](crate::pipeline!).

pub(crate) mod middleware;
pub(crate) mod placement;
mod probe;
mod report;

pub use crate::agent::{
    Anywhere, BoxStack, Build, FnLayer, LayerCall, MiddlewareFn, Next, NoFn, PlaceFn, Stack,
    middleware_fn,
};
pub use crate::handler::{HandlerFn, handler_fn};
#[doc(hidden)]
pub use crate::handler::{Handles, HandlesTheLayersBelow, SendLine, SendOptions, ThisLayer};
pub(crate) use middleware::Middleware;
pub use placement::Placement;
#[doc(hidden)]
pub use placement::{Check, KindInfo, Rule, Said, Sealed};
#[doc(hidden)]
pub use probe::{
    HasOptionNames, IsMiddleware, NamedOptions, NotAMiddleware, NotMiddleware, OptionName, Probe,
    TypeProbe, UnnamedOptions, options_probe,
};
#[doc(hidden)]
pub use report::{
    AModel, AlsoHolds, AppearsOnce, CompactionInsideLoop, ForbidsInner, Holds, KindId, KindOf,
    LoopsDoNotNest, NeedsInner, OneSessionLog, OptionsUnset, SLOTS, SameLayer,
    SessionLogOutsideCompaction, SessionLogOutsideLoops, SetsOption, SitsInside, SitsOutside,
    ToolPipelineInsideLoop, UseTarget, ask, kind, kind_hash, missing_option, placement_of,
    placement_report, probe, required_of,
};

/// A value that wraps an inner app into a middleware: tower's `Layer`. The options of
/// every middleware implement it.
pub trait Layer<A> {
    /// The middleware built around `A`.
    type Output;
    /// Wraps `app`.
    fn layer(self, app: A) -> Self::Output;
}

/// The app slot of a middleware type that names no stack yet: `Name<NoApp>` is what
/// `use Name` finds (see [`Middleware`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoApp;

/// A middleware's inner app, reached from outside: tower's `get_ref`, `get_mut` and
/// `into_inner`. `#[derive(Middleware)]` implements it.
pub trait Wraps {
    /// The inner app.
    type Inner;
    /// The inner app.
    fn get_ref(&self) -> &Self::Inner;
    /// The inner app, mutably.
    fn get_mut(&mut self) -> &mut Self::Inner;
    /// The inner app, the middleware dropped.
    fn into_inner(self) -> Self::Inner;
}

/// The value of a required generic option that was not set. A middleware's `Handler`
/// impl requires of the option what it needs (`T: ToolSet`), which `MissingOption`
/// implements for nothing, so a stack that leaves the option out fails at its `use`
/// line naming `MissingOption`. Optional generic options name their default type
/// instead (`#[middleware(default_type = T)]`).
#[derive(Clone, Copy, Debug, Default)]
pub struct MissingOption;
