//! How `brute_agent!` finds a middleware from the bare path of a `use` line, and
//! reports a type that is not one with a single error at that line. Hidden: the
//! macros name these through `brute::__private`.

use core::marker::PhantomData;

use super::{Layer, Middleware};

/// A type, as a value: what `Name::__brute_probe()` returns for any `Name`.
pub struct TypeProbe<T: ?Sized>(pub(super) PhantomData<fn() -> *const T>);

impl<T: ?Sized> TypeProbe<T> {
    /// The type `T` as a value.
    pub(crate) const fn new() -> Self {
        TypeProbe(PhantomData)
    }
}

/// Implemented for every type, so that `Name::__brute_probe()` resolves whatever
/// `Name` is; for a generic middleware rustc infers the app slot from its one
/// [`Middleware`] impl.
pub trait Probe {
    /// The type as a value.
    fn __brute_probe() -> TypeProbe<Self> {
        TypeProbe(PhantomData)
    }
}

impl<T: ?Sized> Probe for T {}

/// The options of a middleware, through its probe (`(&&probe).options()`): this impl
/// applies when the type is a middleware, [`NotMiddleware`] otherwise.
pub trait IsMiddleware {
    /// The options type.
    type Options;
    /// The options at their defaults.
    fn options(&self) -> Self::Options;
}

impl<M: Middleware> IsMiddleware for &TypeProbe<M> {
    type Options = M::Options;
    fn options(&self) -> M::Options {
        M::options()
    }
}

/// What the probe of a type that is not a middleware answers: options that accept
/// the inner app unchanged, so that the mistake, already reported by the placement
/// table, is not reported again where the stack is built.
pub trait NotMiddleware {
    /// See [`NotAMiddleware`].
    fn options(&self) -> NotAMiddleware;
}

impl<T: ?Sized> NotMiddleware for TypeProbe<T> {
    fn options(&self) -> NotAMiddleware {
        NotAMiddleware
    }
}

/// The options of a type that is not a middleware: a layer that leaves its app as it
/// is. The program never compiles with one, so it never runs.
#[derive(Clone, Copy, Debug)]
pub struct NotAMiddleware;

impl<A> Layer<A> for NotAMiddleware {
    type Output = A;
    fn layer(self, app: A) -> A {
        app
    }
}
