//! How stacks are put together and checked.
//!
//! `#[derive(Middleware)]` records where a middleware may sit, and `brute_agent!`
//! checks each `use` line of a stack against the lines above it (further out) and below
//! it (further in). A broken rule is a compile error at that line, with a message
//! naming the layer, the rule and the fix. Rules come from two places:
//!
//! - the middleware itself: `#[middleware(inside = K, outside = K, requires_inner = K,
//!   forbids_inner = K, unique)]`;
//! - the [kinds](mod@crate::kind) it provides (`#[middleware(provides = K)]`): a kind can
//!   carry rules for every layer that provides it, so a compactor of your own obeys
//!   the same placement as the built-in one.
//!
//! When a layer requires a kind further in (`requires_inner`) and a layer providing
//! that kind sits further out where its own rules forbid it, only the misplaced layer
//! is reported, with the advice to move it.
//!
//! The machinery that evaluates the rules is private to the macros.

pub(crate) mod placement;

use placement::{KindInfo, MiddlewareOptions, Sealed};

/// A middleware: a struct with `#[derive(Middleware)]`, which is how `brute_agent!`
/// finds its options from the bare path in `use Name { .. }`.
///
/// The derive implements it on the middleware with its app slot empty; you do not
/// implement it by hand (it is sealed). When a `use` line names a type without it,
/// `brute_agent!` reports "`Name` is not a middleware" at that line.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a middleware",
    label = "not a middleware: `use` takes a type with `#[derive(Middleware)]`",
    note = "a middleware is a struct holding its inner app (`app: A`) with `#[derive(brute::Middleware)]`; models and handlers go after `run`"
)]
pub trait Middleware: Sealed {
    /// The options type, as it is before any option is set.
    type Options: MiddlewareOptions;
}

/// A placement kind: a role a layer can provide (`Loop`, `SessionLog`, ..), with rules
/// that bind every layer providing it. Declare your own with [`kind!`](crate::kind!);
/// it is sealed, so `kind!` is the only way.
pub trait Kind: Sealed {
    /// The kind and its rules.
    #[doc(hidden)]
    const INFO: KindInfo;
}
