//! Parsing of the `brute_agent!` block.
//!
//! Grammar (after the `[$crate]` prefix the facade macro adds):
//!
//! ```text
//! block   := header? line*
//! header  := attr* vis `type` Ident generics? `;`
//! line    := `use` path options? `;`  |  `run` tokens (`;` | end)
//! options := `{` (ident (`:` expr)?),* `}`
//! ```
//!
//! The `run` line is not parsed as an expression: its tokens are passed through, so a
//! long closure costs nothing here and rustc reports its errors at their own spans.

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{Attribute, Expr, Generics, Ident, Path, Token, Visibility, braced, token};

syn::custom_keyword!(run);

/// A parsed block, before its syntax rules are checked.
pub(crate) struct Parsed {
    /// Path of the runtime crate as the facade saw it (`$crate`).
    pub(crate) krate: TokenStream,
    /// `pub type Name<..>;` when the block declares a named type.
    pub(crate) header: Option<TypeHeader>,
    /// The lines in source order.
    pub(crate) lines: Vec<Line>,
}

/// `pub type Name<..>;`
pub(crate) struct TypeHeader {
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    pub(crate) ident: Ident,
    pub(crate) generics: Generics,
}

/// One line of the block.
pub(crate) enum Line {
    Use(UseLine),
    Run(RunLine),
}

/// `use Path { field: value, .. };`
pub(crate) struct UseLine {
    pub(crate) use_token: Token![use],
    pub(crate) path: Path,
    pub(crate) options: Option<Options>,
    /// The closing `;` (absent only on a last line without `run`, itself an error).
    pub(crate) semi: Option<Token![;]>,
}

impl UseLine {
    /// Tokens spanning the whole line, from `use` to its end, for `syn::Error::new_spanned`.
    pub(crate) fn whole(&self) -> TokenStream {
        let use_token = &self.use_token;
        match (&self.semi, &self.options) {
            (Some(semi), _) => quote::quote!(#use_token #semi),
            (None, Some(options)) => {
                let close = proc_macro2::Ident::new("end", options.brace.span.close());
                quote::quote!(#use_token #close)
            }
            (None, None) => {
                let path = &self.path;
                quote::quote!(#use_token #path)
            }
        }
    }
}

/// The `{ .. }` after a `use` path.
pub(crate) struct Options {
    pub(crate) brace: token::Brace,
    pub(crate) fields: Vec<OptionField>,
}

/// `field: value` or the shorthand `field`.
pub(crate) struct OptionField {
    pub(crate) name: Ident,
    pub(crate) value: Option<Expr>,
}

/// `run tokens;`
pub(crate) struct RunLine {
    pub(crate) span: Span,
    pub(crate) tokens: TokenStream,
}

pub(crate) fn parse(input: TokenStream, flavor: Flavor) -> syn::Result<Parsed> {
    let mut iter = input.into_iter();
    let krate = match iter.next() {
        Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Bracket => g.stream(),
        _ => {
            return Err(syn::Error::new(
                Span::call_site(),
                "brute-macros must be called through `brute::brute_agent!`; add `brute` to your dependencies",
            ));
        }
    };
    let rest: TokenStream = iter.collect();
    let parser = |input: ParseStream<'_>| parse_block(input, krate.clone(), flavor);
    parser.parse2(rest)
}

fn parse_block(input: ParseStream<'_>, krate: TokenStream, flavor: Flavor) -> syn::Result<Parsed> {
    let header = if input.peek(Token![#]) || input.peek(Token![pub]) || input.peek(Token![type]) {
        Some(parse_header(input)?)
    } else {
        None
    };
    let mut lines = Vec::new();
    while !input.is_empty() {
        let lookahead = input.lookahead1();
        if lookahead.peek(Token![use]) {
            lines.push(Line::Use(parse_use(input)?));
        } else if lookahead.peek(run) {
            lines.push(Line::Run(parse_run(input)?));
        } else {
            let span = lookahead.error().span();
            return Err(syn::Error::new(
                span,
                format!(
                    "expected `use` or `run`: each line of `{}` is `use Middleware;`, `use Middleware {{ option: value }};` or `run terminal;`",
                    flavor.macro_name()
                ),
            ));
        }
    }
    Ok(Parsed {
        krate,
        header,
        lines,
    })
}

fn parse_header(input: ParseStream<'_>) -> syn::Result<TypeHeader> {
    let attrs = input.call(Attribute::parse_outer)?;
    let vis: Visibility = input.parse()?;
    input.parse::<Token![type]>()?;
    let ident: Ident = input.parse()?;
    let generics: Generics = input.parse()?;
    input.parse::<Token![;]>()?;
    Ok(TypeHeader {
        attrs,
        vis,
        ident,
        generics,
    })
}

fn parse_use(input: ParseStream<'_>) -> syn::Result<UseLine> {
    let use_token: Token![use] = input.parse()?;
    let path: Path = input.parse()?;
    let options = if input.peek(token::Brace) {
        let content;
        let brace = braced!(content in input);
        let fields = Punctuated::<OptionField, Token![,]>::parse_terminated_with(
            &content,
            parse_option_field,
        )?;
        Some(Options {
            brace,
            fields: fields.into_iter().collect(),
        })
    } else {
        None
    };
    let semi = if input.is_empty() {
        None
    } else {
        let span = match &options {
            Some(options) => options.brace.span.close(),
            None => input.span(),
        };
        let what = if options.is_some() {
            "expected `;` after the options: each line ends in `;`, as in `use Name { option: value };`"
        } else {
            "expected `;` or `{ option: value }` after the middleware path"
        };
        Some(
            input
                .parse::<Token![;]>()
                .map_err(|_| syn::Error::new(span, what))?,
        )
    };
    Ok(UseLine {
        use_token,
        path,
        options,
        semi,
    })
}

fn parse_option_field(input: ParseStream<'_>) -> syn::Result<OptionField> {
    let name: Ident = input.parse()?;
    let value = if input.peek(Token![:]) {
        input.parse::<Token![:]>()?;
        Some(input.parse::<Expr>()?)
    } else {
        None
    };
    Ok(OptionField { name, value })
}

fn parse_run(input: ParseStream<'_>) -> syn::Result<RunLine> {
    let kw: run = input.parse()?;
    let tokens = input.step(|cursor| {
        let mut rest = *cursor;
        let mut tokens = TokenStream::new();
        while let Some((tt, next)) = rest.token_tree() {
            if let TokenTree::Punct(p) = &tt
                && p.as_char() == ';'
            {
                return Ok((tokens, next));
            }
            tokens.extend(std::iter::once(tt));
            rest = next;
        }
        Ok((tokens, rest))
    })?;
    if tokens.is_empty() {
        return Err(syn::Error::new(
            kw.span,
            "`run` needs a terminal: a model value, a closure `|env| ..`, or a handler",
        ));
    }
    Ok(RunLine {
        span: kw.span,
        tokens,
    })
}

/// What the block expands to.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    /// `brute_agent!`: an `Agent` over the turn env, with a model as terminal.
    Agent,
    /// `brute::pipeline!`: the bare stack, with any handler as terminal.
    Pipeline,
}

impl Flavor {
    pub(crate) fn macro_name(self) -> &'static str {
        match self {
            Flavor::Agent => "brute_agent!",
            Flavor::Pipeline => "pipeline!",
        }
    }
}
