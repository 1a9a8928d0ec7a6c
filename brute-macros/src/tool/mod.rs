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
//! the arguments and runs the body.
//!
//! A tool with state is a struct with one `&self` method, `#[tool]` on its `impl`:
//!
//! ```text
//! #[tool]
//! impl Counter {
//!     /// Counts.                          // the description
//!     async fn count(&self, by: u64) -> Result<String, ToolError> { .. }
//! }
//! ```
//!
//! keeps the impl as written and adds `pub struct CountArgs { by: u64 }` (public: the
//! `impl Tool` names it, and it is as visible as the struct, which the impl block does
//! not show) and `impl Tool for Counter`, whose `call` calls `self.count(by)`. In both forms
//! `#[tool(schema = expr)]` advertises `expr` (a `serde_json::Value`) as the exact
//! schema instead of the one derived from the arguments. Every runtime path goes
//! through `<crate>::__private::v1`.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{
    Attribute, Expr, FnArg, Ident, ImplItem, Item, ItemFn, ItemImpl, Lit, LitStr, Meta, Pat, Path,
    ReceiverKind, Signature, Type,
};

pub(crate) fn expand(args: TokenStream, input: TokenStream) -> TokenStream {
    let item = match syn::parse2::<Item>(input) {
        Ok(Item::Fn(item)) => Target::Fn(item),
        Ok(Item::Impl(item)) => Target::Impl(item),
        Ok(other) => return not_a_target(other.span()),
        Err(err) => return not_a_target(err.span()),
    };
    match read_args(args).and_then(|options| match item.clone() {
        Target::Fn(item) => generate_fn(options, item),
        Target::Impl(item) => generate_impl(options, item),
    }) {
        Ok(tokens) => tokens,
        Err(err) => {
            // The item as written (without the parameter attributes only a tool may
            // carry) beside the error, so that one mistake gives one error.
            let error = err.to_compile_error();
            match item {
                Target::Fn(mut item) => {
                    clear_param_attrs(&mut item.sig);
                    // A receiver outside an impl is the error reported above.
                    item.sig.inputs = std::mem::take(&mut item.sig.inputs)
                        .into_iter()
                        .filter(|input| !matches!(input, FnArg::Receiver(_)))
                        .collect();
                    quote! { #error #[allow(dead_code)] #item }
                }
                Target::Impl(mut item) => {
                    for member in item.items.iter_mut() {
                        if let ImplItem::Fn(method) = member {
                            clear_param_attrs(&mut method.sig);
                        }
                    }
                    quote! { #error #item }
                }
            }
        }
    }
}

/// What `#[tool]` was put on.
#[derive(Clone)]
enum Target {
    Fn(ItemFn),
    Impl(ItemImpl),
}

fn not_a_target(span: Span) -> TokenStream {
    syn::Error::new(
        span,
        "`#[tool]` goes on an async fn: `#[tool] async fn name(arg: Type, ..) -> Result<..> { .. }`, or, for a tool with state, on an `impl` block holding one `async fn name(&self, arg: Type, ..)`",
    )
    .to_compile_error()
}

fn clear_param_attrs(sig: &mut Signature) {
    for input in sig.inputs.iter_mut() {
        if let FnArg::Typed(typed) = input {
            typed.attrs.clear();
        }
    }
}

struct Options {
    krate: TokenStream,
    name: Option<LitStr>,
    description: Option<LitStr>,
    schema: Option<Expr>,
}

fn read_args(args: TokenStream) -> syn::Result<Options> {
    let mut options = Options {
        krate: quote!(::brute),
        name: None,
        description: None,
        schema: None,
    };
    if args.is_empty() {
        return Ok(options);
    }
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("name") {
            options.name = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("description") {
            options.description = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("schema") {
            options.schema = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("crate") {
            options.krate = meta.value()?.parse::<Path>()?.into_token_stream();
        } else {
            return Err(meta.error(
                "unknown `tool` attribute; expected one of: `name`, `description`, `schema`, `crate`",
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

/// A tool's signature, read and checked: its arguments and the parameter that receives
/// the context.
struct Sig<'a> {
    params: Vec<Param<'a>>,
    context: Option<&'a Ident>,
}

/// Reads the parameters of a tool's fn (`method`: of a `&self` method, whose receiver
/// comes first).
fn read_sig(sig: &Signature, method: bool) -> syn::Result<Sig<'_>> {
    let what = if method { "method" } else { "fn" };
    if sig.asyncness.is_none() {
        return Err(syn::Error::new(
            sig.fn_token.span(),
            format!("a `#[tool]` {what} must be `async`: write `async fn`"),
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return Err(syn::Error::new(
            sig.generics.span(),
            format!(
                "a `#[tool]` {what} cannot be generic: its arguments must have one JSON Schema"
            ),
        ));
    }
    if matches!(sig.output, syn::ReturnType::Default) {
        return Err(syn::Error::new(
            sig.ident.span(),
            format!(
                "a `#[tool]` {what} returns `Result<T, E>` with `T: Into<ToolOutput>` (String, &str, serde_json::Value) and `E: Into<ToolError>`"
            ),
        ));
    }
    let mut inputs = sig.inputs.iter();
    if method {
        match inputs.next() {
            Some(FnArg::Receiver(r)) if matches!(r.kind, ReceiverKind::Reference(_, _, None)) => {}
            Some(FnArg::Receiver(r)) => {
                return Err(syn::Error::new(
                    r.span(),
                    "a `#[tool]` method takes `&self`: calls may run at the same time, so a tool's state is shared (use atomics or a lock for what changes)",
                ));
            }
            _ => {
                return Err(syn::Error::new(
                    sig.ident.span(),
                    "a `#[tool]` method takes `&self` first: `async fn name(&self, arg: Type, ..)`",
                ));
            }
        }
    }
    let mut params = Vec::new();
    let mut context: Option<&Ident> = None;
    for input in inputs {
        let typed = match input {
            FnArg::Receiver(r) => {
                return Err(syn::Error::new(
                    r.span(),
                    "a `#[tool]` fn cannot take `self`; for a tool with state, put `#[tool]` on an `impl` block holding one `async fn name(&self, ..)`",
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
                    format!(
                        "only one parameter of a `#[tool]` {what} may be a reference (`cx: &ToolContext`); arguments are owned values"
                    ),
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
    Ok(Sig { params, context })
}

/// The arguments the body is called with, in the order written.
fn call_args(sig: &Signature, context: Option<&Ident>) -> Vec<TokenStream> {
    sig.inputs
        .iter()
        .filter_map(|input| match input {
            FnArg::Typed(typed) => match &*typed.pat {
                Pat::Ident(p) if Some(&p.ident) == context => Some(quote!(__brute_cx)),
                Pat::Ident(p) => {
                    let ident = &p.ident;
                    Some(quote!(#ident))
                }
                _ => None,
            },
            FnArg::Receiver(_) => None,
        })
        .collect()
}

fn generate_fn(options: Options, item: ItemFn) -> syn::Result<TokenStream> {
    let sig = &item.sig;
    let read = read_sig(sig, false)?;
    let args = call_args(sig, read.context);

    // The body as written, as a nested fn with the parameters as written minus attributes.
    let mut inner = item.clone();
    inner.attrs.retain(|a| !a.path().is_ident("doc"));
    inner.vis = syn::Visibility::Inherited;
    inner.sig.ident = format_ident!("__brute_tool_body");
    clear_param_attrs(&mut inner.sig);
    let call = quote!(__brute_tool_body(#(#args),*));

    let tool_ident = camel(&sig.ident);
    let generated = generate(Generate {
        options,
        fn_ident: &sig.ident,
        docs: &item.attrs,
        vis: &item.vis,
        tool: &tool_ident,
        read,
        body: Some(inner),
        call,
    })?;
    let tool_doc = generated.tool_doc;
    let body = generated.tokens;
    let vis = &item.vis;
    Ok(quote! {
        #[doc = #tool_doc]
        #[derive(Clone, Copy, Debug, Default)]
        #vis struct #tool_ident;

        #body
    })
}

fn generate_impl(options: Options, mut item: ItemImpl) -> syn::Result<TokenStream> {
    if let Some((path, _)) = &item.trait_ {
        return Err(syn::Error::new(
            path.span(),
            "`#[tool]` goes on an inherent `impl` block (`impl MyTool { .. }`), not a trait impl",
        ));
    }
    if !item.generics.params.is_empty() || item.generics.where_clause.is_some() {
        return Err(syn::Error::new(
            item.generics.span(),
            "a `#[tool]` impl cannot be generic: a tool is one type with one JSON Schema",
        ));
    }
    let mut methods = item.items.iter().filter_map(|member| match member {
        ImplItem::Fn(method) => Some(method),
        _ => None,
    });
    let method = match (methods.next(), methods.next()) {
        (Some(method), None) => method.clone(),
        (None, _) => {
            return Err(syn::Error::new(
                item.self_ty.span(),
                "a `#[tool]` impl holds the tool's method: `async fn name(&self, arg: Type, ..) -> Result<..>`",
            ));
        }
        (Some(_), Some(second)) => {
            return Err(syn::Error::new(
                second.sig.ident.span(),
                "a `#[tool]` impl holds one method, the tool; put other methods in an `impl` block of their own",
            ));
        }
    };
    let sig = &method.sig;
    let read = read_sig(sig, true)?;
    let args = call_args(sig, read.context);
    let method_ident = &sig.ident;
    let call = quote!(self.#method_ident(#(#args),*));

    let self_ty = item.self_ty.clone();
    let tool = quote!(#self_ty);
    // The arguments are as visible as anything can be: the tool's `impl Tool` names
    // them, and it is as visible as the struct, which the impl block does not show.
    let vis: syn::Visibility = syn::parse_quote!(pub);
    let generated = generate(Generate {
        options,
        fn_ident: method_ident,
        docs: &method.attrs,
        vis: &vis,
        tool: &tool,
        read,
        body: None,
        call,
    })?;
    // The method stays as written, minus the attributes only its tool's fields carry.
    for member in item.items.iter_mut() {
        if let ImplItem::Fn(method) = member {
            clear_param_attrs(&mut method.sig);
        }
    }
    let body = generated.tokens;
    Ok(quote! {
        #item

        #body
    })
}

/// What both forms share: the tool's name, description, arguments and the call.
struct Generate<'a, T: ToTokens> {
    options: Options,
    /// The fn or method, whose name is the tool's.
    fn_ident: &'a Ident,
    /// Its attributes (the doc comment is the description).
    docs: &'a [Attribute],
    vis: &'a syn::Visibility,
    /// The tool's type.
    tool: &'a T,
    read: Sig<'a>,
    /// The body as a nested fn, for a tool made of a fn.
    body: Option<ItemFn>,
    /// An expression whose future runs the body with the arguments bound by name.
    call: TokenStream,
}

struct Generated {
    tool_doc: String,
    tokens: TokenStream,
}

/// `struct <Name>Args` and `impl Tool for <tool>`.
fn generate<T: ToTokens>(input: Generate<'_, T>) -> syn::Result<Generated> {
    let Generate {
        options,
        fn_ident,
        docs,
        vis,
        tool,
        read,
        body,
        call,
    } = input;
    let Options {
        krate,
        name,
        description,
        schema,
    } = options;
    let tool_name = name.unwrap_or_else(|| {
        let text = fn_ident.to_string();
        LitStr::new(text.strip_prefix("r#").unwrap_or(&text), fn_ident.span())
    });
    let description = match description {
        Some(lit) => lit,
        None => {
            let text = doc_text(docs);
            if text.is_empty() {
                return Err(syn::Error::new(
                    fn_ident.span(),
                    "a tool needs a description for the model: add a doc comment (`/// What it does.`) or `#[tool(description = \"..\")]`",
                ));
            }
            LitStr::new(&text, Span::call_site())
        }
    };

    let args_ident = format_ident!("{}Args", camel(fn_ident));
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

    let fields = read.params.iter().map(|p| {
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
    let idents: Vec<&Ident> = read.params.iter().map(|p| p.ident).collect();
    // An exact schema replaces the derived one in what is advertised; the arguments are
    // still checked by deserialising them.
    let parameters = schema.map(|schema| {
        quote_spanned! {schema.span()=>
            fn parameters(&self) -> #private::Value {
                #private::ExactSchema::into_schema(#schema)
            }
        }
    });

    let tool_doc = format!("The `{}` tool: {}", tool_name.value(), description.value());
    let args_doc = format!("Arguments of the `{}` tool.", tool_name.value());

    let tokens = quote! {
        #[doc = #args_doc]
        #[derive(#private::serde::Deserialize, #private::schemars::JsonSchema)]
        #[serde(crate = #serde_path)]
        #[schemars(crate = #schemars_path)]
        #vis struct #args_ident {
            #(#fields,)*
        }

        impl #private::Tool for #tool {
            type Args = #args_ident;

            fn name(&self) -> &str {
                #tool_name
            }

            fn description(&self) -> &str {
                #description
            }

            #parameters

            async fn call(
                &self,
                args: #args_ident,
                __brute_cx: &#private::ToolContext,
            ) -> ::core::result::Result<#private::ToolOutput, #private::ToolError> {
                #body
                let _ = __brute_cx;
                let #args_ident { #(#idents),* } = args;
                match #call.await {
                    ::core::result::Result::Ok(value) => ::core::result::Result::Ok(::core::convert::Into::into(value)),
                    ::core::result::Result::Err(error) => ::core::result::Result::Err(::core::convert::Into::into(error)),
                }
            }
        }
    };
    Ok(Generated { tool_doc, tokens })
}
