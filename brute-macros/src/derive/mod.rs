//! `#[derive(Middleware)]`: [`parse`] the struct's attributes, [`validate`] them into a
//! model, [`expand`] the model into impls of brute's public contract (the options type,
//! its `Layer` impl, `Middleware` with the placement, `Wraps`), all inside one
//! `const _` scope.
//!
//! On errors, every error found is reported, beside [`expand::fallback`]: what
//! `brute_agent!` reaches through `use Name { .. }`, so that one mistake gives one
//! error and not a cascade.

mod expand;
mod parse;
mod validate;

use proc_macro2::TokenStream;

use crate::errors::Errors;

pub(crate) fn expand(input: TokenStream) -> TokenStream {
    let ast = match syn::parse2::<syn::DeriveInput>(input) {
        Ok(ast) => ast,
        Err(err) => return err.to_compile_error(),
    };
    let mut errors = Errors::default();
    let input = parse::parse(&ast, &mut errors);
    let model = validate::validate(&input, &mut errors);
    match errors.into_error() {
        None => expand::expand(&model),
        Some(err) => {
            let mut tokens = err.to_compile_error();
            if input.fields.is_some() {
                tokens.extend(expand::fallback(&model));
            }
            tokens
        }
    }
}
