//! Judging the item under `#[tool]`: is it an async fn (or an impl holding one `&self`
//! method) whose parameters are owned arguments and at most one context?
//!
//! Every check runs and reports into [`Errors`], so a fn with two mistakes gets two
//! errors, each at its own span.
//!
//! **What counts as the context.** A parameter whose type is a shared reference to a
//! path ending in `ToolContext` without generic arguments: `&ToolContext`,
//! `&'_ ToolContext`, `&brute::tools::ToolContext`, `&tools::ToolContext`. The macro
//! sees tokens, not types, so an alias (`type Cx = ToolContext; cx: &Cx`) is not
//! recognised and is reported as a borrowed argument; a different type named
//! `ToolContext` is recognised and then fails to type-check at its parameter. Any other
//! reference, anywhere in a parameter's type (`&str`, `&[T]`, `&Path`,
//! `Option<&str>`), is an error that names the owned type to take instead.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{
    Attribute, Expr, FnArg, GenericArgument, Ident, ImplItem, ImplItemFn, ItemFn, ItemImpl, Lit,
    LitStr, Meta, Pat, PathArguments, ReceiverKind, ReturnType, Signature, Type, parse_quote,
};

use super::parse::{Options, Target};
use crate::errors::Errors;

/// A tool, checked: everything [`expand`](super::expand) needs.
pub(crate) struct Tool<'a> {
    /// Where brute is.
    pub(crate) krate: &'a TokenStream,
    /// The name the model calls it by.
    pub(crate) name: LitStr,
    /// What it does, for the model.
    pub(crate) description: LitStr,
    /// `#[tool(schema = expr)]`.
    pub(crate) schema: Option<&'a Expr>,
    /// The fn, or the impl and its method.
    pub(crate) form: Form<'a>,
    /// The parameters after the receiver, in the order written.
    pub(crate) params: Vec<Param<'a>>,
    /// The fn's return type, where a result that is not a tool's output is reported.
    pub(crate) output: &'a ReturnType,
    /// The name of the arguments' struct, chosen so that no parameter type names it.
    pub(crate) args: Ident,
}

/// The two forms of a tool.
pub(crate) enum Form<'a> {
    /// `#[tool] async fn name(..)`; `tool` is the unit struct generated for it.
    Fn { item: &'a ItemFn, tool: Ident },
    /// `#[tool] impl Type { async fn name(&self, ..) }`.
    Method {
        item: &'a ItemImpl,
        method: &'a ImplItemFn,
    },
}

/// One parameter of the tool's fn.
pub(crate) enum Param<'a> {
    /// An argument the model fills in: a field of the arguments' struct.
    Argument {
        ident: &'a Ident,
        ty: &'a Type,
        attrs: &'a [Attribute],
    },
    /// The `&ToolContext` parameter, at this span.
    Context(Span),
}

/// Checks `target`; `None` when an error was reported.
pub(crate) fn validate<'a>(
    options: &'a Options,
    target: &'a Target,
    errors: &mut Errors,
) -> Option<Tool<'a>> {
    let (form, sig, attrs) = match target {
        Target::Fn(item) => {
            let form = Form::Fn {
                item,
                tool: camel(&item.sig.ident),
            };
            (form, &item.sig, &item.attrs)
        }
        Target::Impl(item) => {
            let method = impl_block(item, errors)?;
            (Form::Method { item, method }, &method.sig, &method.attrs)
        }
        Target::Other(_) | Target::Unparsed(..) => {
            errors.push(not_a_target(target.span()));
            return None;
        }
    };
    let method = matches!(form, Form::Method { .. });
    let params = signature(sig, method, errors);
    let name = options.name.clone().unwrap_or_else(|| {
        let text = sig.ident.to_string();
        LitStr::new(text.strip_prefix("r#").unwrap_or(&text), sig.ident.span())
    });
    let description = match &options.description {
        Some(lit) => Some(lit.clone()),
        None => {
            let text = doc_text(attrs);
            if text.is_empty() {
                errors.push(syn::Error::new(
                    sig.ident.span(),
                    "a tool needs a description for the model: add a doc comment (`/// What it does.`) or `#[tool(description = \"..\")]`",
                ));
                None
            } else {
                Some(LitStr::new(&text, Span::call_site()))
            }
        }
    };
    // The options' errors count too: a tool with any error is not expanded.
    if !errors.is_empty() {
        return None;
    }
    let args = args_ident(&form, &sig.ident, &params);
    Some(Tool {
        krate: &options.krate,
        name,
        description: description?,
        schema: options.schema.as_ref(),
        form,
        params,
        output: &sig.output,
        args,
    })
}

/// The error for an item that cannot be a tool.
fn not_a_target(span: Span) -> syn::Error {
    syn::Error::new(
        span,
        "`#[tool]` goes on an async fn: `#[tool] async fn name(arg: Type, ..) -> Result<..> { .. }`, or, for a tool with state, on an `impl` block holding one `async fn name(&self, arg: Type, ..)`",
    )
}

/// Checks a `#[tool]` impl block and finds its one method.
fn impl_block<'a>(item: &'a ItemImpl, errors: &mut Errors) -> Option<&'a ImplItemFn> {
    if let Some((path, _)) = &item.trait_ {
        errors.push(syn::Error::new(
            path.span(),
            "`#[tool]` goes on an inherent `impl` block (`impl MyTool { .. }`), not a trait impl",
        ));
    }
    if !item.generics.params.is_empty() || item.generics.where_clause.is_some() {
        errors.push(syn::Error::new(
            item.generics.span(),
            "a `#[tool]` impl cannot be generic: a tool is one type with one JSON Schema",
        ));
    }
    let mut methods = item.items.iter().filter_map(|member| match member {
        ImplItem::Fn(method) => Some(method),
        _ => None,
    });
    let first = methods.next();
    for extra in methods {
        errors.push(syn::Error::new(
            extra.sig.ident.span(),
            "a `#[tool]` impl holds one method, the tool; put other methods in an `impl` block of their own",
        ));
    }
    if first.is_none() {
        errors.push(syn::Error::new(
            item.self_ty.span(),
            "a `#[tool]` impl holds the tool's method: `async fn name(&self, arg: Type, ..) -> Result<..>`",
        ));
    }
    first
}

/// Checks the signature of a tool's fn (`method`: of a `&self` method, whose receiver
/// comes first) and sorts its parameters into arguments and the context.
fn signature<'a>(sig: &'a Signature, method: bool, errors: &mut Errors) -> Vec<Param<'a>> {
    let what = if method { "method" } else { "fn" };
    if sig.asyncness.is_none() {
        errors.push(syn::Error::new(
            sig.fn_token.span(),
            format!("a `#[tool]` {what} must be `async`: write `async fn`"),
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.push(syn::Error::new(
            sig.generics.span(),
            format!(
                "a `#[tool]` {what} cannot be generic: its arguments must have one JSON Schema"
            ),
        ));
    }
    if matches!(sig.output, ReturnType::Default) {
        errors.push(syn::Error::new(
            sig.ident.span(),
            format!(
                "a `#[tool]` {what} returns `Result<T, E>` with `T: Into<ToolOutput>` (String, &str, serde_json::Value) and `E: Into<ToolError>`"
            ),
        ));
    }
    let mut inputs = sig.inputs.iter().peekable();
    if method {
        match inputs.peek() {
            Some(FnArg::Receiver(r)) => {
                if !matches!(r.kind, ReceiverKind::Reference(_, _, None)) {
                    errors.push(syn::Error::new(
                        r.span(),
                        "a `#[tool]` method takes `&self`: calls may run at the same time, so a tool's state is shared (use atomics or a lock for what changes)",
                    ));
                }
                inputs.next();
            }
            _ => errors.push(syn::Error::new(
                sig.ident.span(),
                "a `#[tool]` method takes `&self` first: `async fn name(&self, arg: Type, ..)`",
            )),
        }
    }
    let mut params = Vec::new();
    let mut context = false;
    for input in inputs {
        let typed = match input {
            FnArg::Receiver(r) => {
                errors.push(syn::Error::new(
                    r.span(),
                    "a `#[tool]` fn cannot take `self`; for a tool with state, put `#[tool]` on an `impl` block holding one `async fn name(&self, ..)`",
                ));
                continue;
            }
            FnArg::Typed(typed) => typed,
        };
        let ident = match &*typed.pat {
            Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => &p.ident,
            other => {
                errors.push(syn::Error::new(
                    other.span(),
                    "`#[tool]` parameters must be plain names (`name: Type`): each becomes an argument the model fills in",
                ));
                continue;
            }
        };
        let ty = &*typed.ty;
        match context_kind(ty) {
            Some(ContextKind::Shared) => {
                if context {
                    errors.push(syn::Error::new_spanned(
                        ty,
                        format!("a `#[tool]` {what} takes the `&ToolContext` once"),
                    ));
                } else {
                    context = true;
                    params.push(Param::Context(ty.span()));
                }
                continue;
            }
            Some(ContextKind::Mutable) => {
                errors.push(syn::Error::new_spanned(
                    ty,
                    format!(
                        "the context is shared by calls that run at the same time: take `{ident}: &ToolContext`, not `&mut`"
                    ),
                ));
                continue;
            }
            Some(ContextKind::Owned) => {
                errors.push(syn::Error::new_spanned(
                    ty,
                    format!("the context is lent to each call: take `{ident}: &ToolContext`"),
                ));
                continue;
            }
            None => {}
        }
        if let Some(owned) = owned(ty) {
            errors.push(syn::Error::new_spanned(
                ty,
                format!(
                    "a `#[tool]` argument cannot borrow: it is deserialised from the model's JSON, so it must be an owned value; take `{ident}: {}` instead of `{ident}: {}` (the one reference a tool takes is its context, `&ToolContext`)",
                    show(&owned),
                    show(ty),
                ),
            ));
            continue;
        }
        if let Some(span) = impl_trait(ty) {
            errors.push(syn::Error::new(
                span,
                "a `#[tool]` argument has one JSON Schema: take a concrete type, not `impl Trait`",
            ));
            continue;
        }
        params.push(Param::Argument {
            ident,
            ty,
            attrs: &typed.attrs,
        });
    }
    params
}

/// How a parameter's type relates to the tool context.
enum ContextKind {
    /// `&ToolContext`: the context.
    Shared,
    /// `&mut ToolContext`.
    Mutable,
    /// `ToolContext` by value.
    Owned,
}

fn context_kind(ty: &Type) -> Option<ContextKind> {
    match ungroup(ty) {
        Type::Reference(r) if is_context(&r.elem) => Some(if r.mutability.is_some() {
            ContextKind::Mutable
        } else {
            ContextKind::Shared
        }),
        other if is_context(other) => Some(ContextKind::Owned),
        _ => None,
    }
}

/// Whether `ty` is a path ending in `ToolContext` with no generic arguments.
fn is_context(ty: &Type) -> bool {
    match ungroup(ty) {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().is_some_and(|last| {
            last.ident == "ToolContext" && matches!(last.arguments, PathArguments::None)
        }),
        _ => false,
    }
}

/// `ty` without the invisible delimiters a `macro_rules!` type fragment comes in.
fn ungroup(ty: &Type) -> &Type {
    match ty {
        Type::Group(g) => ungroup(&g.elem),
        other => other,
    }
}

/// `ty` with every reference in it replaced by an owned type (`&str` by `String`,
/// `&[T]` by `Vec<T>`, `&Path` by `PathBuf`, `&T` by `T`); `None` when it has none.
fn owned(ty: &Type) -> Option<Type> {
    match ty {
        Type::Reference(r) => Some(owned_pointee(&r.elem)),
        Type::Group(g) => owned(&g.elem),
        Type::Paren(p) => owned(&p.elem).map(|elem| parse_quote!((#elem))),
        Type::Slice(s) => owned(&s.elem).map(|elem| parse_quote!([#elem])),
        Type::Array(a) => owned(&a.elem).map(|elem| {
            let mut a = a.clone();
            a.elem = Box::new(elem);
            Type::Array(a)
        }),
        Type::Tuple(t) => {
            let elems: Vec<Option<Type>> = t.elems.iter().map(owned).collect();
            elems.iter().any(Option::is_some).then(|| {
                let mut t = t.clone();
                for (slot, new) in t.elems.iter_mut().zip(elems) {
                    if let Some(new) = new {
                        *slot = new;
                    }
                }
                Type::Tuple(t)
            })
        }
        Type::Path(p) if p.qself.is_none() => {
            let mut p = p.clone();
            let mut changed = false;
            for segment in p.path.segments.iter_mut() {
                if let PathArguments::AngleBracketed(args) = &mut segment.arguments {
                    for arg in args.args.iter_mut() {
                        if let GenericArgument::Type(ty) = arg
                            && let Some(new) = owned(ty)
                        {
                            *ty = new;
                            changed = true;
                        }
                    }
                }
            }
            changed.then_some(Type::Path(p))
        }
        _ => None,
    }
}

/// The owned type that holds what a `&elem` points at.
fn owned_pointee(elem: &Type) -> Type {
    let elem = ungroup(elem);
    match elem {
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last();
            let renamed = last
                .filter(|last| matches!(last.arguments, PathArguments::None))
                .and_then(|last| match last.ident.to_string().as_str() {
                    "str" => Some("String"),
                    "Path" => Some("PathBuf"),
                    "OsStr" => Some("OsString"),
                    "CStr" => Some("CString"),
                    _ => None,
                });
            match renamed {
                Some("String") => parse_quote!(String),
                Some(name) => {
                    let mut p = p.clone();
                    if let Some(last) = p.path.segments.last_mut() {
                        last.ident = Ident::new(name, last.ident.span());
                    }
                    Type::Path(p)
                }
                None => owned(elem).unwrap_or_else(|| elem.clone()),
            }
        }
        Type::Slice(s) => {
            let item = owned(&s.elem).unwrap_or_else(|| (*s.elem).clone());
            parse_quote!(Vec<#item>)
        }
        Type::TraitObject(t) => parse_quote!(Box<#t>),
        other => owned(other).unwrap_or_else(|| other.clone()),
    }
}

/// The span of an `impl Trait` in `ty`, if it has one.
fn impl_trait(ty: &Type) -> Option<Span> {
    match ty {
        Type::ImplTrait(t) => Some(t.span()),
        Type::Group(g) => impl_trait(&g.elem),
        Type::Paren(p) => impl_trait(&p.elem),
        Type::Slice(s) => impl_trait(&s.elem),
        Type::Array(a) => impl_trait(&a.elem),
        Type::Tuple(t) => t.elems.iter().find_map(impl_trait),
        Type::Path(p) => p
            .path
            .segments
            .iter()
            .find_map(|segment| match &segment.arguments {
                PathArguments::AngleBracketed(args) => args.args.iter().find_map(|arg| match arg {
                    GenericArgument::Type(ty) => impl_trait(ty),
                    _ => None,
                }),
                _ => None,
            }),
        _ => None,
    }
}

/// A type as a user writes it: `Vec<String>`, not `Vec < String >`.
fn show(ty: &Type) -> String {
    let mut text = ty.to_token_stream().to_string();
    for (from, to) in [
        (" :: ", "::"),
        (":: ", "::"),
        (" <", "<"),
        ("< ", "<"),
        (" >", ">"),
        (" ,", ","),
        ("& ", "&"),
        ("( ", "("),
        (" )", ")"),
        ("[ ", "["),
        (" ]", "]"),
        (" ;", ";"),
    ] {
        text = text.replace(from, to);
    }
    text
}

/// The doc comment, as one line.
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

/// `read_lines` → `ReadLines`.
pub(crate) fn camel(ident: &Ident) -> Ident {
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

/// `<Name>Args`, or the first of `<Name>Arguments`, `<Name>ToolArgs`, `<Name>Args2`, ..
/// that no parameter type, the fn nor the tool's type names: the struct is defined in a
/// scope of its own, where it would shadow a user's type of the same name.
fn args_ident(form: &Form<'_>, fn_ident: &Ident, params: &[Param<'_>]) -> Ident {
    let mut used: Vec<String> = vec![fn_ident.to_string()];
    match form {
        Form::Fn { tool, .. } => used.push(tool.to_string()),
        Form::Method { item, .. } => collect_idents(item.self_ty.to_token_stream(), &mut used),
    }
    for param in params {
        if let Param::Argument { ty, .. } = param {
            collect_idents(ty.to_token_stream(), &mut used);
        }
    }
    let base = camel(fn_ident);
    let candidates = ["Args", "Arguments", "ToolArgs"]
        .into_iter()
        .map(|suffix| format!("{base}{suffix}"))
        .chain((2..).map(|n| format!("{base}Args{n}")));
    let name = candidates
        .into_iter()
        .find(|name| !used.contains(name))
        .unwrap_or_default();
    Ident::new(&name, Span::call_site())
}

fn collect_idents(tokens: TokenStream, into: &mut Vec<String>) {
    for tree in tokens {
        match tree {
            proc_macro2::TokenTree::Ident(ident) => into.push(ident.to_string()),
            proc_macro2::TokenTree::Group(group) => collect_idents(group.stream(), into),
            _ => {}
        }
    }
}
