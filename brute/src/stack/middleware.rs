//! The [`Middleware`] trait: what a `use` line of `brute_agent!` finds. Public at the
//! crate root (`brute::Middleware`, beside its derive), its one path.

use super::placement::Placement;

/// What a `use Name { .. }` line of `brute_agent!` names: a middleware type (its app
/// slot empty, `Name<NoApp, ..>`) or its options type.
///
/// It gives the options at their defaults ([`Middleware::options`]) and where the
/// layer may sit ([`Middleware::PLACEMENT`]). `use Name { max: 3 }` is
/// `Name::options().max(3)`: each option is a method of the options. A derived
/// middleware also names its options ([`NamedOptions`](super::NamedOptions)), so an unknown option is
/// rustc's "no field" at that option listing the available ones; for one written by
/// hand it is "no method named `..`" on its options type. The options then build the
/// layer through [`Layer`](super::Layer).
///
/// `#[derive(Middleware)]` implements it; so can you (see the [module `stack`](super)).
/// By hand, implement it once, on the options type (`type Options = Self`): `use
/// Options { .. }` finds it by that name and [`Stack::layer`](super::Stack::layer) takes its values. (The
/// derive also implements it on `Name<NoApp>`, so that `use Name` names the
/// middleware itself; rustc infers the app slot from that one impl.)
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a middleware",
    label = "not a middleware: `use` takes a type implementing `brute::Middleware`",
    note = "a middleware is a struct holding its inner app, with `#[derive(brute::Middleware)]` or an impl of `brute::Middleware`; models and handlers go after `run`"
)]
pub trait Middleware {
    /// The options: a [`Layer`](super::Layer) over the inner app, with one method per option.
    type Options;
    /// Where the layer may sit in a stack.
    const PLACEMENT: Placement;
    /// The options, each at its default.
    fn options() -> Self::Options;
    /// The options a `use` line must set, because they have no default, each as
    /// `module::Name::option`: `brute_agent!` reports the first one a line leaves out
    /// as "`Name` needs `..::Name::option`". `#[derive(Middleware)]` lists its generic
    /// options without a `default_type` (each with a type of that path, which
    /// `brute_agent!` names in the error).
    #[doc(hidden)]
    const REQUIRED_OPTIONS: &'static [&'static str] = &[];
}
