//! Procedural macros of [`brute`](https://docs.rs/brute).
//!
//! Do not depend on this crate directly: `brute` re-exports everything here, and the
//! generated code only works through `brute`'s hidden `__private` module. This file holds
//! thin entry points; parsing, validation and expansion live in the modules below it.

mod agent;
mod derive;
mod errors;
mod tool;

use proc_macro::TokenStream;

/// Expands a `brute_agent!` invocation. `brute::brute_agent!` forwards here with its
/// `$crate` path in brackets in front of the user's tokens.
#[doc(hidden)]
#[proc_macro]
pub fn __brute_agent(input: TokenStream) -> TokenStream {
    debug(
        "brute_agent!",
        agent::expand(input.into(), agent::Flavor::Agent),
    )
    .into()
}

/// Expands a `brute::pipeline!` invocation: the same grammar as `brute_agent!`, but the
/// result is the bare stack (a handler over any env type) instead of an `Agent`.
#[doc(hidden)]
#[proc_macro]
pub fn __brute_pipeline(input: TokenStream) -> TokenStream {
    debug(
        "pipeline!",
        agent::expand(input.into(), agent::Flavor::Pipeline),
    )
    .into()
}

/// Derives `brute::Middleware` for a struct that holds its inner app and its options.
/// See the documentation of `brute::Middleware` for the attributes.
#[proc_macro_derive(Middleware, attributes(middleware))]
pub fn derive_middleware(input: TokenStream) -> TokenStream {
    debug("derive(Middleware)", derive::expand(input.into())).into()
}

/// Turns an async fn into a tool. See the documentation of `brute::tool`.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, input: TokenStream) -> TokenStream {
    debug("#[tool]", tool::expand(args.into(), input.into())).into()
}

/// With `BRUTE_MACROS_DEBUG=1` in the environment of the compiler, prints every
/// expansion to stderr.
fn debug(what: &str, tokens: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    if std::env::var_os("BRUTE_MACROS_DEBUG").is_some() {
        eprintln!("--- {what} ---\n{tokens}");
    }
    tokens
}
