//! Reading `#[tool(..)]` and the item under it, without judging the item.
//!
//! Every key of the attribute is read, and every unknown or repeated key is an error;
//! the errors are collected, so two typos give two errors. Whether the item is a tool
//! is [`validate`](super::validate)'s job.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, quote};
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Expr, Item, ItemFn, ItemImpl, LitStr, Path, Token};

use crate::errors::Errors;

const KEYS: &str = "`name`, `description`, `schema`, `crate`";

/// `#[tool(..)]`'s keys.
pub(crate) struct Options {
    /// `crate = path`: where brute is; `::brute` when not given.
    pub(crate) krate: TokenStream,
    /// `name = ".."`: the name the model calls the tool by.
    pub(crate) name: Option<LitStr>,
    /// `description = ".."`: replaces the doc comment.
    pub(crate) description: Option<LitStr>,
    /// `schema = expr`: the exact JSON Schema advertised.
    pub(crate) schema: Option<Expr>,
}

/// What `#[tool]` was put on.
pub(crate) enum Target {
    /// `#[tool] async fn name(..)`: a tool without state.
    Fn(ItemFn),
    /// `#[tool] impl Type { async fn name(&self, ..) }`: a tool with state.
    Impl(ItemImpl),
    /// Any other item: an error, emitted unchanged beside it.
    Other(Item),
    /// Tokens syn does not read as an item (rustc did): an error, and the tokens
    /// unchanged.
    Unparsed(TokenStream, Span),
}

/// Reads the attribute's keys. A key given twice or not known is an error, and the
/// keys after it are still read.
pub(crate) fn options(args: TokenStream, errors: &mut Errors) -> Options {
    let mut options = Options {
        krate: quote!(::brute),
        name: None,
        description: None,
        schema: None,
    };
    if args.is_empty() {
        return options;
    }
    let mut krate: Option<Path> = None;
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("name") {
            once(&meta, &mut options.name, errors)
        } else if meta.path.is_ident("description") {
            once(&meta, &mut options.description, errors)
        } else if meta.path.is_ident("schema") {
            once(&meta, &mut options.schema, errors)
        } else if meta.path.is_ident("crate") {
            once(&meta, &mut krate, errors)
        } else {
            errors.push(meta.error(format_args!(
                "unknown `tool` attribute; expected one of: {KEYS}"
            )));
            skip_value(&meta)
        }
    });
    if let Err(err) = syn::parse::Parser::parse2(parser, args) {
        errors.push(err);
    }
    if let Some(path) = krate {
        options.krate = path.into_token_stream();
    }
    options
}

/// Reads `key = value` into `slot`, or reports the key as repeated.
fn once<T: syn::parse::Parse>(
    meta: &ParseNestedMeta<'_>,
    slot: &mut Option<T>,
    errors: &mut Errors,
) -> syn::Result<()> {
    let value = meta.value()?.parse::<T>()?;
    if slot.is_some() {
        let key = meta.path.to_token_stream().to_string();
        errors.push(meta.error(format_args!("`{key}` is given twice")));
    } else {
        *slot = Some(value);
    }
    Ok(())
}

/// Steps over what follows an unknown key (`= expr` or `(..)`), so the keys after it
/// are still read.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<Expr>()?;
    } else if !meta.input.is_empty() && !meta.input.peek(Token![,]) {
        meta.input.parse::<TokenTree>()?;
    }
    Ok(())
}

/// Reads the item under the attribute.
pub(crate) fn target(input: TokenStream) -> Target {
    match syn::parse2::<Item>(input.clone()) {
        Ok(Item::Fn(item)) => Target::Fn(item),
        Ok(Item::Impl(item)) => Target::Impl(item),
        Ok(other) => Target::Other(other),
        Err(err) => Target::Unparsed(input, err.span()),
    }
}

impl Target {
    /// Where to report that the item is not a tool.
    pub(crate) fn span(&self) -> Span {
        match self {
            Target::Fn(item) => item.sig.ident.span(),
            Target::Impl(item) => item.self_ty.span(),
            Target::Other(item) => item.span(),
            Target::Unparsed(_, span) => *span,
        }
    }
}
