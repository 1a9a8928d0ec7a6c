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

/// The option names of a middleware's options, for `brute_agent!`:
/// `#[derive(Middleware)]` implements it with a struct holding one public
/// [`OptionName`] field per option (`Name::OptionNames`, reached through the hidden
/// constant the derive names after the middleware). `use Name { typo: 1 }` reads the
/// field `typo` first, so an unknown option is rustc's "no field" error at the option,
/// listing the available ones, and nothing after it is checked again.
pub trait NamedOptions {
    /// One public [`OptionName`] field per option.
    type Names;
    /// The names.
    fn names() -> Self::Names;
}

/// One option of a middleware, as a field of its names (see [`NamedOptions`]).
#[derive(Clone, Copy, Debug)]
pub struct OptionName;

impl OptionName {
    /// The options, unchanged: the option named by this field exists, so its setter
    /// is called next.
    pub fn with<O>(self, options: O) -> O {
        options
    }
}

/// The options' type, as a value: `(&&options_probe(&options)).option_names(..)`.
pub fn options_probe<O>(_options: &O) -> TypeProbe<O> {
    TypeProbe::new()
}

/// The option names of a middleware, through the probe of its options
/// (`(&&options_probe(&options)).option_names(as_written)`): this impl applies when
/// the options name their options ([`NamedOptions`]), [`UnnamedOptions`] otherwise.
pub trait HasOptionNames {
    /// The names.
    type Names;
    /// The names; `as_written` (the options as the `use` line writes them) is not
    /// needed, the middleware knows its own.
    fn option_names<W>(&self, as_written: W) -> Self::Names;
}

impl<O: NamedOptions> HasOptionNames for &TypeProbe<O> {
    type Names = O::Names;
    fn option_names<W>(&self, _as_written: W) -> O::Names {
        O::names()
    }
}

/// What the probe of options that do not list their names (one written
/// by hand) answers: the names as the `use` line writes them, so each option goes
/// straight to its setter method, which rustc reports if it does not exist.
pub trait UnnamedOptions {
    /// `as_written`, unchanged.
    fn option_names<W>(&self, as_written: W) -> W;
}

impl<T: ?Sized> UnnamedOptions for TypeProbe<T> {
    fn option_names<W>(&self, as_written: W) -> W {
        as_written
    }
}
