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
/// use brute::{Env, Handler, handler::handler_fn};
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
