//! `#[derive(Middleware)]`: read the struct and its attributes, then generate the
//! options type, the constructor, the `Layer` impl and the placement metadata.

mod attr;
mod expand;

use proc_macro2::TokenStream;

pub(crate) fn expand(input: TokenStream) -> TokenStream {
    let input = match syn::parse2::<syn::DeriveInput>(input) {
        Ok(input) => input,
        Err(err) => return err.to_compile_error(),
    };
    match attr::read(&input).and_then(|model| expand::expand(&input, &model)) {
        Ok(tokens) => tokens,
        Err(err) => err.to_compile_error(),
    }
}
