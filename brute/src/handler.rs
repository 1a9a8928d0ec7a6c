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

    /// Whether `brute_agent!`'s run-time check watches this layer: whether, on each
    /// pass, it called its inner app (or ended the turn, or did the pass's work). brute's
    /// own layers set it to `false`: when one of them does not call inside, that is by
    /// design (a replayed keyed turn, a guard's block), and the check would only cost.
    #[doc(hidden)]
    const WATCHED: bool = true;
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
    /// [`Handles`]: the line holds.
    fn verdict(&self) -> Handles;
}

impl<H: Handler<crate::env::Env>> IsHandler for &UseLine<H> {
    type Layer = H;
    fn handler_over_inner_layers(&self) -> H {
        self.take()
    }
    fn verdict(&self) -> Handles {
        Handles
    }
}

/// The check of a [`UseLine`] that fails: a [`Fallback`] in the layer's place, so
/// that nothing further out fails again, and [`ThisLayer`] as the verdict, which
/// [`ask_use_line`] reports.
#[doc(hidden)]
pub trait NotAHandler {
    /// A [`Fallback`].
    fn handler_over_inner_layers(&self) -> Fallback;
    /// [`ThisLayer`]: the line is the error.
    fn verdict(&self) -> ThisLayer;
}

impl<H> NotAHandler for UseLine<H> {
    fn handler_over_inner_layers(&self) -> Fallback {
        Fallback
    }
    fn verdict(&self) -> ThisLayer {
        ThisLayer
    }
}

/// The verdict on a `use` line whose layer handles the env over the layers below it.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct Handles;

/// The verdict on a `use` line whose layer does not handle the env over the layers
/// below it: the error names it by this word, and the layer by the line's span
/// (the types of the stack below are the macro's, not the user's words).
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct ThisLayer;

/// What the layer of a `use` line must do: handle the env over the layers below it.
/// Asked of the line's verdict ([`ask_use_line`]); only [`Handles`] implements it.
#[diagnostic::on_unimplemented(
    message = "the layer of this `use` line cannot wrap the layers below it: its `Handler<Env>` impl asks of its inner app more than `Handler<Env>`, or the layer is not `Send + Sync`",
    label = "this layer does not handle the turn over the layers below it",
    note = "write the impl for any inner app that handles the env: `impl<A: Handler<Env>> Handler<Env> for MyLayer<A>`; a further bound on `A` (`A: Default`, `A: Clone`, ..) is not met by the layers a stack puts below it",
    note = "every field of a layer must be `Send + Sync` (an agent runs on a multi-threaded runtime): share state with `Arc<Mutex<..>>` or atomics, not `Rc` or `RefCell`"
)]
#[doc(hidden)]
pub trait HandlesTheLayersBelow {
    /// Not called: names the type for [`ask_use_line`].
    fn check(_verdict: &Self)
    where
        Self: Sized,
    {
    }
}

#[diagnostic::do_not_recommend]
impl HandlesTheLayersBelow for Handles {}

/// Asks [`HandlesTheLayersBelow`] of a `use` line's verdict:
/// `ask_use_line(&(&&line).verdict(), <_ as HandlesTheLayersBelow>::check)`.
#[doc(hidden)]
pub fn ask_use_line<V>(_verdict: &V, _question: fn(&V)) {}

/// What the options of a `use` line must be: `Send + Sync`, since every stack runs on
/// a multi-threaded runtime. Asked of the options (`ask_send(&line, <_ as
/// SendOptions>::check)` on their [`SendLine`]), so that the error is at the line and
/// names the options, not the stack below.
#[diagnostic::on_unimplemented(
    message = "the options of this `use` line cannot be sent between threads: they are not `Send + Sync`",
    label = "an option here is not `Send + Sync`",
    note = "an agent runs its turns on a multi-threaded runtime, so every option and field of a layer must be `Send + Sync`: share state with `Arc<Mutex<..>>`, `Arc<RwLock<..>>` or atomics (`AtomicU64`, `AtomicBool`), not `Rc`, `RefCell`, `Cell` or raw pointers"
)]
#[doc(hidden)]
pub trait SendOptions {
    /// Not called: names the type for [`ask_send`].
    fn check(_options: &Self)
    where
        Self: Sized,
    {
    }
}

// On the holder, not the options: a bound on the options themselves would have rustc
// suggest borrowing them (`&T` is `Send` when `T` is `Sync`) in place of the note.
#[diagnostic::do_not_recommend]
impl<O: Send + Sync> SendOptions for SendLine<O> {}

/// The options of a `use` line, checked to be `Send + Sync`:
/// `(&&SendLine::new(options)).send_options()` is the options when they are
/// ([`IsSend`]) and options that leave the inner app as it is otherwise
/// ([`NotSend`]), so that the layer built from them is not reported again.
#[doc(hidden)]
pub struct SendLine<O>(std::cell::Cell<Option<O>>);

impl<O> SendLine<O> {
    /// Holds `options` for the check.
    pub fn new(options: O) -> Self {
        SendLine(std::cell::Cell::new(Some(options)))
    }
}

/// Asks [`SendOptions`] of the [`SendLine`] `line`.
#[doc(hidden)]
pub fn ask_send<L>(_line: &L, _question: fn(&L)) {}

/// The check of a [`SendLine`] that passes.
#[doc(hidden)]
pub trait IsSend {
    /// The options.
    type Options;
    /// The options, unchanged.
    fn send_options(&self) -> Self::Options;
}

impl<O: Send + Sync> IsSend for &SendLine<O> {
    type Options = O;
    fn send_options(&self) -> O {
        match self.0.take() {
            Some(options) => options,
            None => unreachable!("a `use` line's options are checked once"),
        }
    }
}

/// The check of a [`SendLine`] that fails (the error is [`ask_send`]'s).
#[doc(hidden)]
pub trait NotSend {
    /// Options that leave the inner app as it is.
    fn send_options(&self) -> crate::stack::NotAMiddleware;
}

impl<O> NotSend for SendLine<O> {
    fn send_options(&self) -> crate::stack::NotAMiddleware {
        crate::stack::NotAMiddleware
    }
}

/// A boxing boundary: the inner stack's future is boxed, so rustc does not compute
/// the layout of every nested async block at once. `pipeline!` puts one every 16
/// layers (`brute_agent!` erases the stack's type there instead).
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
