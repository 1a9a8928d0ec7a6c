//! `#[tool]`: turns an async fn into a tool.
//!
//! ```text
//! /// Adds two numbers.                    // the description
//! #[tool]                                  // or #[tool(name = "..", description = "..", crate = path)]
//! async fn add(
//!     /// The first number.                // becomes the field's schema description
//!     a: i64,
//!     b: i64,
//!     cx: &ToolContext,                    // optional: the one parameter of reference type
//! ) -> Result<impl Into<ToolOutput>, impl Into<ToolError>> { .. }
//! ```
//!
//! expands to `struct Add;`, `struct AddArgs { a: i64, b: i64 }` deriving
//! `Deserialize` and `JsonSchema`, and `impl Tool for Add` whose `call` destructures
//! the arguments and runs the body. Every runtime path goes through
//! `<crate>::__private::v1`.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Attribute, Expr, FnArg, Ident, ItemFn, Lit, LitStr, Meta, Pat, Path, Type};

pub(crate) fn expand(args: TokenStream, input: TokenStream) -> TokenStream {
    let item = match syn::parse2::<ItemFn>(input) {
        Ok(item) => item,
        Err(err) => {
            return syn::Error::new(
                err.span(),
                "`#[tool]` goes on an async fn: `#[tool] async fn name(arg: Type, ..) -> Result<..> { .. }`",
            )
            .to_compile_error();
        }
    };
    match read_args(args).and_then(|options| generate(options, item.clone())) {
        Ok(tokens) => tokens,
        Err(err) => {
            // The fn as written (without the parameter attributes only a tool may
            // carry) beside the error, so that one mistake gives one error.
            let mut item = item;
            for input in item.sig.inputs.iter_mut() {
                if let FnArg::Typed(typed) = input {
                    typed.attrs.clear();
                }
            }
            let error = err.to_compile_error();
            quote! { #error #[allow(dead_code)] #item }
        }
    }
}

struct Options {
    krate: TokenStream,
    name: Option<LitStr>,
    description: Option<LitStr>,
}

fn read_args(args: TokenStream) -> syn::Result<Options> {
    let mut options = Options {
        krate: quote!(::brute),
        name: None,
        description: None,
    };
    if args.is_empty() {
        return Ok(options);
    }
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("name") {
            options.name = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("description") {
            options.description = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("crate") {
            options.krate = meta.value()?.parse::<Path>()?.into_token_stream();
        } else {
            return Err(meta.error(
                "unknown `tool` attribute; expected one of: `name`, `description`, `crate`",
            ));
        }
        Ok(())
    });
    syn::parse::Parser::parse2(parser, args)?;
    Ok(options)
}

fn doc_text(attrs: &[Attribute]) -> String {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(lit) => match &lit.lit {
                    Lit::Str(s) => Some(s.value().trim().to_string()),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        })
        .collect();
    lines.join(" ").trim().to_string()
}

fn camel(ident: &Ident) -> Ident {
    let text = ident.to_string();
    let text = text.strip_prefix("r#").unwrap_or(&text);
    let mut out = String::new();
    let mut upper = true;
    for ch in text.chars() {
        if ch == '_' {
            upper = true;
        } else if upper {
            out.extend(ch.to_uppercase());
            upper = false;
        } else {
            out.push(ch);
        }
    }
    Ident::new(&out, ident.span())
}

struct Param<'a> {
    ident: &'a Ident,
    ty: &'a Type,
    attrs: &'a [Attribute],
}

fn generate(options: Options, item: ItemFn) -> syn::Result<TokenStream> {
    let Options {
        krate,
        name,
        description,
    } = options;
    let sig = &item.sig;
    if sig.asyncness.is_none() {
        return Err(syn::Error::new(
            sig.fn_token.span(),
            "a `#[tool]` fn must be `async`: write `async fn`",
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return Err(syn::Error::new(
            sig.generics.span(),
            "a `#[tool]` fn cannot be generic: its arguments must have one JSON Schema",
        ));
    }
    if matches!(sig.output, syn::ReturnType::Default) {
        return Err(syn::Error::new(
            sig.ident.span(),
            "a `#[tool]` fn returns `Result<T, E>` with `T: Into<ToolOutput>` (String, &str, serde_json::Value) and `E: Into<ToolError>`",
        ));
    }

    let mut params = Vec::new();
    let mut context: Option<&Ident> = None;
    for input in &sig.inputs {
        let typed = match input {
            FnArg::Receiver(r) => {
                return Err(syn::Error::new(
                    r.span(),
                    "a `#[tool]` fn cannot take `self`",
                ));
            }
            FnArg::Typed(typed) => typed,
        };
        let ident = match &*typed.pat {
            Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => &p.ident,
            other => {
                return Err(syn::Error::new(
                    other.span(),
                    "`#[tool]` parameters must be plain names (`name: Type`): each becomes an argument the model fills in",
                ));
            }
        };
        if let Type::Reference(_) = &*typed.ty {
            if context.is_some() {
                return Err(syn::Error::new(
                    typed.ty.span(),
                    "only one parameter of a `#[tool]` fn may be a reference (`cx: &ToolContext`); arguments are owned values",
                ));
            }
            context = Some(ident);
            continue;
        }
        params.push(Param {
            ident,
            ty: &typed.ty,
            attrs: &typed.attrs,
        });
    }

    let fn_ident = &sig.ident;
    let tool_name = name.unwrap_or_else(|| {
        let text = fn_ident.to_string();
        LitStr::new(text.strip_prefix("r#").unwrap_or(&text), fn_ident.span())
    });
    let description = match description {
        Some(lit) => lit,
        None => {
            let text = doc_text(&item.attrs);
            if text.is_empty() {
                return Err(syn::Error::new(
                    fn_ident.span(),
                    "a tool needs a description for the model: add a doc comment (`/// What it does.`) or `#[tool(description = \"..\")]`",
                ));
            }
            LitStr::new(&text, Span::call_site())
        }
    };

    let vis = &item.vis;
    let tool_ident = camel(fn_ident);
    let args_ident = format_ident!("{}Args", tool_ident);
    let serde_path = LitStr::new(
        &format!(
            "{}::__private::v1::serde",
            krate.to_string().replace(' ', "")
        ),
        Span::call_site(),
    );
    let schemars_path = LitStr::new(
        &format!(
            "{}::__private::v1::schemars",
            krate.to_string().replace(' ', "")
        ),
        Span::call_site(),
    );
    let private = quote!(#krate::__private::v1);

    let fields = params.iter().map(|p| {
        let ident = p.ident;
        let ty = p.ty;
        let has_doc = p.attrs.iter().any(|a| a.path().is_ident("doc"));
        let attrs = p.attrs;
        let default_doc = (!has_doc).then(|| {
            let doc = format!("The `{ident}` argument.");
            quote!(#[doc = #doc])
        });
        quote_spanned! {ident.span()=> #default_doc #(#attrs)* pub #ident: #ty }
    });
    let idents: Vec<&Ident> = params.iter().map(|p| p.ident).collect();

    // The body as written, as a nested fn with the parameters as written minus attributes.
    let mut inner = item.clone();
    inner.attrs.retain(|a| !a.path().is_ident("doc"));
    inner.vis = syn::Visibility::Inherited;
    inner.sig.ident = format_ident!("__brute_tool_body");
    for input in inner.sig.inputs.iter_mut() {
        if let FnArg::Typed(typed) = input {
            typed.attrs.clear();
        }
    }
    let call_args = sig.inputs.iter().map(|input| match input {
        FnArg::Typed(typed) => match &*typed.pat {
            Pat::Ident(p) if Some(&p.ident) == context => quote!(__brute_cx),
            Pat::Ident(p) => {
                let ident = &p.ident;
                quote!(#ident)
            }
            _ => quote!(),
        },
        FnArg::Receiver(_) => quote!(),
    });

    let tool_doc = format!("The `{}` tool: {}", tool_name.value(), description.value());
    let args_doc = format!("Arguments of the `{}` tool.", tool_name.value());

    Ok(quote! {
        #[doc = #tool_doc]
        #[derive(Clone, Copy, Debug, Default)]
        #vis struct #tool_ident;

        #[doc = #args_doc]
        #[derive(#private::serde::Deserialize, #private::schemars::JsonSchema)]
        #[serde(crate = #serde_path)]
        #[schemars(crate = #schemars_path)]
        #vis struct #args_ident {
            #(#fields,)*
        }

        impl #private::Tool for #tool_ident {
            type Args = #args_ident;

            fn name(&self) -> &str {
                #tool_name
            }

            fn description(&self) -> &str {
                #description
            }

            async fn call(
                &self,
                args: #args_ident,
                __brute_cx: &#private::ToolContext,
            ) -> ::core::result::Result<#private::ToolOutput, #private::ToolError> {
                #inner
                let _ = __brute_cx;
                let #args_ident { #(#idents),* } = args;
                match __brute_tool_body(#(#call_args),*).await {
                    ::core::result::Result::Ok(value) => ::core::result::Result::Ok(::core::convert::Into::into(value)),
                    ::core::result::Result::Err(error) => ::core::result::Result::Err(::core::convert::Into::into(error)),
                }
            }
        }
    })
}
