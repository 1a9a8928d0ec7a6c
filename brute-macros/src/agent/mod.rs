//! `brute_agent!` and `brute::pipeline!`: parse the block, check its syntax rules, expand it.

mod expand;
mod parse;
mod validate;

use proc_macro2::TokenStream;

pub(crate) use parse::Flavor;

pub(crate) fn expand(input: TokenStream, flavor: Flavor) -> TokenStream {
    let input_copy = input.clone();
    let parsed = match parse::parse(input, flavor) {
        Ok(parsed) => parsed,
        Err(err) => {
            return expand::parse_error_fallback(&input_copy, flavor, err.to_compile_error());
        }
    };
    match validate::validate(&parsed, flavor) {
        Ok(stack) => expand::expand(&stack, flavor),
        Err(err) => expand::fallback(&parsed, flavor, err.to_compile_error()),
    }
}
