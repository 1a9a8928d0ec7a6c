//! [`middleware_fn`]: a layer from an async closure (axum's `middleware::from_fn`,
//! tower's `layer_fn`), with a placement declared on it.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;

use crate::env::Env;
use crate::error::Error;
use crate::handler::Handler;
use crate::stack::{Layer, Middleware, Placement};

/// The layers below a [`middleware_fn`] layer: `next.run(env).await` calls them once.
pub struct Next<'a> {
    app: &'a dyn DynHandler,
}

impl<'a> Next<'a> {
    /// Runs the layers below on `env` (one boxed future).
    pub fn run<'e>(self, env: &'e mut Env) -> impl Future<Output = Result<(), Error>> + Send + 'e
    where
        'a: 'e,
    {
        self.app.call_dyn(env)
    }
}

impl fmt::Debug for Next<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Next")
    }
}

type DynFuture<'a> = Pin<Box<dyn Future<Output = Result<(), Error>> + Send + 'a>>;

/// A handler of the env behind a reference, so that [`Next`] names no type.
trait DynHandler: Send + Sync {
    fn call_dyn<'a>(&'a self, env: &'a mut Env) -> DynFuture<'a>;
}

impl<A: Handler<Env>> DynHandler for A {
    fn call_dyn<'a>(&'a self, env: &'a mut Env) -> DynFuture<'a> {
        Box::pin(self.call(env))
    }
}

/// What a [`middleware_fn`] closure is: `async |env, next| { ..; next.run(env).await }`,
/// whose future may borrow the env and `next`. Every `Fn(&'a mut Env, Next<'a>) ->
/// impl Future` is one; an async closure is one when it does not move its captures
/// into itself (`async |env, next| ..`, not `async move |env, next| ..`).
pub trait LayerCall<'a>: Send + Sync {
    /// The future of one call.
    type Future: Future<Output = Result<(), Error>> + Send;
    /// Calls the closure.
    fn call_layer(&'a self, env: &'a mut Env, next: Next<'a>) -> Self::Future;
}

impl<'a, F, Fut> LayerCall<'a> for F
where
    F: Fn(&'a mut Env, Next<'a>) -> Fut + Send + Sync,
    Fut: Future<Output = Result<(), Error>> + Send,
{
    type Future = Fut;
    fn call_layer(&'a self, env: &'a mut Env, next: Next<'a>) -> Fut {
        self(env, next)
    }
}

/// Where a [`middleware_fn`] layer may sit, declared on a type of yours:
///
/// ```
/// use brute::kind::Loops;
/// use brute::stack::{PlaceFn, Placement};
///
/// /// `Audit` runs inside a loop, once per pass.
/// struct Audit;
///
/// impl PlaceFn for Audit {
///     const PLACEMENT: Placement = Placement::new("Audit", module_path!()).inside::<Loops>();
/// }
/// ```
pub trait PlaceFn {
    /// The placement, with the name errors give the layer.
    const PLACEMENT: Placement;
}

/// The placement of a [`middleware_fn`] layer that declares none: anywhere, named
/// `middleware_fn`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Anywhere;

impl PlaceFn for Anywhere {
    const PLACEMENT: Placement = Placement::new("middleware_fn", module_path!());
}

/// The closure slot of a [`MiddlewareFn`] not given one yet (`use FnLayer { call: .. }`
/// gives it).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoFn;

/// The options of a layer made from a closure: its closure `F` and its placement `P`.
/// Build one with [`middleware_fn`], or in `brute_agent!` with `use FnLayer { call: .. }`
/// (`FnLayer` is this type with no closure yet and placed [`Anywhere`]; name your own
/// alias, `type Audit = MiddlewareFn<NoFn, AuditPlace>;`, for a placement of yours).
///
/// ```
/// use brute::kind::Loops;
/// use brute::middleware::{Loop, MaxIterations};
/// use brute::stack::{MiddlewareFn, NoFn, PlaceFn, Placement, Stack, middleware_fn};
/// use brute::{Message, Middleware, brute_agent};
///
/// /// Counts passes, inside a loop.
/// struct CountPlace;
/// impl PlaceFn for CountPlace {
///     const PLACEMENT: Placement = Placement::new("Count", module_path!()).inside::<Loops>();
/// }
/// type Count = MiddlewareFn<NoFn, CountPlace>;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let agent = brute_agent! {
///     use brute::stack::FnLayer { call: async |env, next| {
///         env.metadata.insert("seen".into(), true.into());
///         next.run(env).await
///     } };
///     use Loop::While { condition: |env| env.iteration < 3 };
///     use Count { call: async |env, next| {
///         env.metadata.insert("passes".into(), env.iteration.into());
///         next.run(env).await
///     } };
///     run |_env| async { Ok(Message::assistant("pass")) };
/// };
/// let outcome = agent.start("go").await?;
/// assert_eq!(outcome.env.metadata["passes"], 3);
/// assert_eq!(outcome.env.metadata["seen"], true);
///
/// // The same closure layer with `Stack`, its placement declared with `placed`.
/// let agent = Stack::new()
///     .layer(Loop::While::options().condition(|env| env.iteration < 2))
///     .layer(MaxIterations::options().max(5))
///     .layer(
///         middleware_fn(async |env, next| {
///             env.metadata.insert("passes".into(), env.iteration.into());
///             next.run(env).await
///         })
///         .placed::<CountPlace>(),
///     )
///     .run(brute::providers::ScriptedModel::new([
///         Message::assistant("one"),
///         Message::assistant("two"),
///     ]));
/// assert_eq!(agent.start("go").await?.env.metadata["passes"], 2);
/// # Ok::<(), brute::Error>(()) }).unwrap();
/// ```
pub struct MiddlewareFn<F, P = Anywhere> {
    f: F,
    place: PhantomData<fn() -> P>,
}

/// `use FnLayer { call: async |env, next| .. }`: a closure layer placed [`Anywhere`].
pub type FnLayer = MiddlewareFn<NoFn, Anywhere>;

impl<F: Clone, P> Clone for MiddlewareFn<F, P> {
    fn clone(&self) -> Self {
        MiddlewareFn {
            f: self.f.clone(),
            place: PhantomData,
        }
    }
}

impl<F, P> fmt::Debug for MiddlewareFn<F, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MiddlewareFn")
    }
}

/// A layer from an async closure `async |env, next| { ..; next.run(env).await }`, which
/// may work on the env before and after the layers below, or end the turn without
/// them (`env.exit(..)`). Placed [`Anywhere`] until [`placed`](MiddlewareFn::placed).
/// See [`MiddlewareFn`] for it in `brute_agent!` and with [`Stack`](crate::stack::Stack).
pub fn middleware_fn<F>(f: F) -> MiddlewareFn<F, Anywhere>
where
    F: AsyncFn(&mut Env, Next<'_>) -> Result<(), Error> + for<'a> LayerCall<'a>,
{
    MiddlewareFn {
        f,
        place: PhantomData,
    }
}

impl<P> MiddlewareFn<NoFn, P> {
    /// The closure (option `call` of `use FnLayer { call: .. }`).
    pub fn call<F>(self, f: F) -> MiddlewareFn<F, P>
    where
        F: AsyncFn(&mut Env, Next<'_>) -> Result<(), Error> + for<'a> LayerCall<'a>,
    {
        MiddlewareFn {
            f,
            place: PhantomData,
        }
    }
}

impl<F, P> MiddlewareFn<F, P> {
    /// The same layer placed by `Q` (see [`PlaceFn`]).
    pub fn placed<Q: PlaceFn>(self) -> MiddlewareFn<F, Q> {
        MiddlewareFn {
            f: self.f,
            place: PhantomData,
        }
    }
}

impl<F, P: PlaceFn> Middleware for MiddlewareFn<F, P> {
    type Options = MiddlewareFn<NoFn, P>;
    const PLACEMENT: Placement = P::PLACEMENT;
    fn options() -> MiddlewareFn<NoFn, P> {
        MiddlewareFn {
            f: NoFn,
            place: PhantomData,
        }
    }
}

impl<F, P, A> Layer<A> for MiddlewareFn<F, P> {
    type Output = LayerFn<F, A>;
    fn layer(self, app: A) -> LayerFn<F, A> {
        LayerFn { f: self.f, app }
    }
}

/// The layer a [`MiddlewareFn`] builds around the layers below it.
#[derive(Clone)]
pub struct LayerFn<F, A> {
    f: F,
    app: A,
}

impl<F, A: fmt::Debug> fmt::Debug for LayerFn<F, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LayerFn")
            .field("app", &self.app)
            .finish_non_exhaustive()
    }
}

impl<F, A> Handler<Env> for LayerFn<F, A>
where
    F: for<'a> LayerCall<'a>,
    A: Handler<Env>,
{
    async fn call(&self, env: &mut Env) -> Result<(), Error> {
        self.f.call_layer(env, Next { app: &self.app }).await
    }
}

impl<F, A> crate::stack::Wraps for LayerFn<F, A> {
    type Inner = A;
    fn get_ref(&self) -> &A {
        &self.app
    }
    fn get_mut(&mut self) -> &mut A {
        &mut self.app
    }
    fn into_inner(self) -> A {
        self.app
    }
}
