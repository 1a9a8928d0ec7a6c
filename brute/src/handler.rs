//! The handler trait: one async call over a mutable env, with static dispatch.

use std::future::Future;

use crate::error::Error;

/// Something that handles an env: a middleware layer, a terminal, or a whole stack.
///
/// `E` is the env type: [`Env`](crate::Env) for agent turns; sub-pipelines (tool
/// execution, compaction) use their own. A middleware holds its inner app (another
/// `Handler<E>`) and calls it once per `call`, doing "way in" work before and "way out"
/// work after; a loop layer calls it repeatedly.
///
/// The method returns `impl Future + Send` rather than being an `async fn`, so that
/// every stack can be spawned on a multi-threaded runtime. Implementations may still be
/// written as `async fn`:
///
/// ```
/// use brute::{Env, Error, Handler, Middleware};
///
/// /// Counts the passes it sees.
/// #[derive(Middleware)]
/// pub struct CountPasses<A> {
///     app: A,
/// }
///
/// impl<A: Handler<Env>> Handler<Env> for CountPasses<A> {
///     async fn call(&self, env: &mut Env) -> Result<(), Error> {
///         let n = env.metadata.get("passes").and_then(|v| v.as_u64()).unwrap_or(0);
///         env.metadata.insert("passes".into(), (n + 1).into());
///         self.app.call(env).await
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot handle `{E}`: it does not implement `Handler<{E}>`",
    label = "not a handler of `{E}`",
    note = "a middleware implements `Handler<E>` for its struct when its inner app does: `impl<A: Handler<Env>> Handler<Env> for MyLayer<A>`"
)]
pub trait Handler<E>: Send + Sync {
    /// Handles `env` once.
    fn call(&self, env: &mut E) -> impl Future<Output = Result<(), Error>> + Send;
}

impl<E, H: Handler<E> + ?Sized> Handler<E> for std::sync::Arc<H> {
    fn call(&self, env: &mut E) -> impl Future<Output = Result<(), Error>> + Send {
        (**self).call(env)
    }
}

/// A handler made from a closure that works on the env synchronously and returns a
/// future that does not borrow it. Build one with [`handler_fn`].
#[derive(Clone, Copy, Debug)]
pub struct HandlerFn<F> {
    f: F,
}

/// Makes a handler from a closure: `handler_fn(|env: &mut MyEnv| { ..; async { Ok(()) } })`.
///
/// ```
/// use brute::stack::handler_fn;
/// use brute::{Env, Handler};
///
/// let handler = handler_fn(|env: &mut Env| {
///     env.iteration += 1;
///     async { Ok(()) }
/// });
/// # let _ = handler;
/// ```
pub fn handler_fn<E, F, Fut>(f: F) -> HandlerFn<F>
where
    F: Fn(&mut E) -> Fut + Send + Sync,
    Fut: Future<Output = Result<(), Error>> + Send,
{
    HandlerFn { f }
}

impl<E: Send, F, Fut> Handler<E> for HandlerFn<F>
where
    F: Fn(&mut E) -> Fut + Send + Sync,
    Fut: Future<Output = Result<(), Error>> + Send,
{
    fn call(&self, env: &mut E) -> impl Future<Output = Result<(), Error>> + Send {
        (self.f)(env)
    }
}

/// What a stack line that failed to compile is replaced with, so that its error is
/// the only one: a handler of every env type. Programs with one never compile, so
/// its body never runs in practice.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct Fallback;

impl<E: Send> Handler<E> for Fallback {
    async fn call(&self, _env: &mut E) -> Result<(), Error> {
        Err(Error::layer("brute_agent!", "this stack failed to compile"))
    }
}

/// The layer built at one `use` line of `brute_agent!`, checked there (axum's
/// `#[debug_handler]` is the model): `(&&UseLine::new(layer)).handler_over_inner_layers()`
/// is the layer itself when it handles [`Env`](crate::Env) over the layers below it
/// ([`IsHandler`]), and otherwise one error at that line, naming the bound that
/// failed, and a [`Fallback`] in its place ([`NotAHandler`]).
#[doc(hidden)]
pub struct UseLine<H>(std::cell::Cell<Option<H>>);

impl<H> UseLine<H> {
    /// Holds `layer` for the check.
    pub fn new(layer: H) -> Self {
        UseLine(std::cell::Cell::new(Some(layer)))
    }

    fn take(&self) -> H {
        match self.0.take() {
            Some(layer) => layer,
            None => unreachable!("a `use` line is checked once"),
        }
    }
}

/// The check of a [`UseLine`] that passes.
#[doc(hidden)]
pub trait IsHandler {
    /// The layer.
    type Layer;
    /// The layer, unchanged.
    fn handler_over_inner_layers(&self) -> Self::Layer;
}

impl<H: Handler<crate::env::Env>> IsHandler for &UseLine<H> {
    type Layer = H;
    fn handler_over_inner_layers(&self) -> H {
        self.take()
    }
}

/// The check of a [`UseLine`] that fails: its bound is the error.
#[doc(hidden)]
pub trait NotAHandler<H> {
    /// A [`Fallback`], after the error.
    fn handler_over_inner_layers(&self) -> Fallback
    where
        H: Handler<crate::env::Env>;
}

impl<H> NotAHandler<H> for UseLine<H> {
    fn handler_over_inner_layers(&self) -> Fallback
    where
        H: Handler<crate::env::Env>,
    {
        Fallback
    }
}

/// A boxing boundary: the inner stack's future is boxed, so rustc does not compute
/// the layout of every nested async block at once. `brute_agent!` puts one every 16
/// layers.
#[doc(hidden)]
#[derive(Clone, Debug)]
pub struct Boxed<H>(H);

impl<H> Boxed<H> {
    /// Wraps `inner`.
    pub fn new(inner: H) -> Self {
        Boxed(inner)
    }
}

impl<E: Send, H: Handler<E>> Handler<E> for Boxed<H> {
    async fn call(&self, env: &mut E) -> Result<(), Error> {
        let future: std::pin::Pin<Box<dyn Future<Output = Result<(), Error>> + Send + '_>> =
            Box::pin(self.0.call(env));
        future.await
    }
}
