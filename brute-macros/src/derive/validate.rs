//! Checking what was read: one app field whose type is a type parameter, generic
//! options that are a type parameter as a whole, no bounds on the struct. Every broken
//! rule is recorded; the model is built from whatever holds, so the fallback expansion
//! can still name the types the user's other code needs.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::{Attribute, Expr, GenericArgument, GenericParam, Ident, Path, PathArguments, Type};
use syn::{ReturnType, TypeParamBound};

use super::parse::{Input, RawField, RuleAttr};
use crate::errors::Errors;

/// What the derive knows about one middleware struct.
pub(crate) struct Model<'a> {
    /// The runtime crate's path (`::brute` unless `#[middleware(crate = ..)]`).
    pub(crate) krate: TokenStream,
    pub(crate) name: &'a Ident,
    pub(crate) vis: &'a syn::Visibility,
    /// The struct's type parameters in declaration order.
    pub(crate) all_params: Vec<&'a Ident>,
    /// The app field and its type parameter, when there is exactly one.
    pub(crate) app: Option<(&'a Ident, &'a Ident)>,
    /// The option and state fields.
    pub(crate) fields: Vec<FieldModel<'a>>,
    pub(crate) provides: &'a [Path],
    pub(crate) rules: &'a [RuleAttr],
    /// The name shown in placement errors (`#[middleware(name = "..")]`).
    pub(crate) display: String,
}

/// A field other than the app.
pub(crate) struct FieldModel<'a> {
    pub(crate) ident: &'a Ident,
    pub(crate) ty: &'a Type,
    pub(crate) docs: Vec<&'a Attribute>,
    pub(crate) default: Option<&'a Expr>,
    /// The setter takes `impl Into<T>`.
    pub(crate) into: bool,
    /// What a generic option's setter requires of its value (`bound = ..`).
    pub(crate) bound: Option<&'a syn::punctuated::Punctuated<syn::TypeParamBound, syn::Token![+]>>,
    /// Internal state: no setter, initialised from its default.
    pub(crate) state: bool,
    /// The field's type is this type parameter (a generic option).
    pub(crate) generic: Option<&'a Ident>,
    /// The type a generic option has until it is set (`default_type`); without one
    /// the option is required and holds `MissingOption` until set.
    pub(crate) default_type: Option<&'a Type>,
}

impl Model<'_> {
    /// The type parameters of the options type: all but the app's.
    pub(crate) fn option_params(&self) -> Vec<&Ident> {
        self.all_params
            .iter()
            .copied()
            .filter(|p| self.app.is_none_or(|(_, app)| app != *p))
            .collect()
    }

    /// The fields that are options (not state).
    pub(crate) fn options(&self) -> impl Iterator<Item = &FieldModel<'_>> {
        self.fields.iter().filter(|f| !f.state)
    }

    /// The type each option parameter has before it is set, in `option_params` order.
    pub(crate) fn unset_args(&self) -> Vec<TokenStream> {
        let krate = &self.krate;
        self.option_params()
            .into_iter()
            .map(|param| {
                let default = self
                    .fields
                    .iter()
                    .find(|f| f.generic == Some(param))
                    .and_then(|f| f.default_type);
                match default {
                    Some(ty) => ty.to_token_stream(),
                    None => quote!(#krate::__private::v1::MissingOption),
                }
            })
            .collect()
    }

    /// The struct's arguments with its app slot empty and its options unset: the
    /// type `brute_agent!` reaches through the bare path.
    pub(crate) fn bare_args(&self) -> Vec<TokenStream> {
        let krate = &self.krate;
        let mut unset = self.unset_args().into_iter();
        self.all_params
            .iter()
            .map(|p| match self.app {
                Some((_, app)) if app == *p => quote!(#krate::__private::v1::NoApp),
                _ => unset
                    .next()
                    .unwrap_or_else(|| quote!(#krate::__private::v1::MissingOption)),
            })
            .collect()
    }
}

pub(crate) fn validate<'a>(input: &'a Input<'a>, errors: &mut Errors) -> Model<'a> {
    let ast = input.ast;
    let krate = match &input.attrs.krate {
        Some(path) => path.to_token_stream(),
        None => quote!(::brute),
    };
    let all_params = type_params(ast, errors);
    let raw = input.fields.as_deref().unwrap_or_default();
    let app = match input.fields {
        Some(_) => app_field(ast, raw, &all_params, errors),
        None => None,
    };
    let fields = raw
        .iter()
        .filter(|f| !is_app(f, raw))
        .map(|f| option_field(f, &all_params, errors))
        .collect::<Vec<_>>();

    let model = Model {
        krate,
        name: &ast.ident,
        vis: &ast.vis,
        all_params,
        app,
        fields,
        provides: &input.attrs.provides,
        rules: &input.attrs.rules,
        display: input
            .attrs
            .name
            .as_ref()
            .map_or_else(|| ast.ident.to_string(), syn::LitStr::value),
    };
    // An unused parameter is usually a symptom of an error reported above.
    if errors.is_empty() && input.fields.is_some() {
        for param in model.option_params() {
            if !model.fields.iter().any(|f| f.generic == Some(param)) {
                errors.push(syn::Error::new(
                    param.span(),
                    format!(
                        "type parameter `{param}` must be the type of an option field (e.g. `tools: {param}`)"
                    ),
                ));
            }
        }
    }
    model
}

fn type_params<'a>(ast: &'a syn::DeriveInput, errors: &mut Errors) -> Vec<&'a Ident> {
    let mut params = Vec::new();
    for param in &ast.generics.params {
        match param {
            GenericParam::Type(tp) => {
                if !tp.bounds.is_empty() {
                    errors.push(syn::Error::new_spanned(
                        &tp.bounds,
                        "put trait bounds on the `Handler` impl, not on the middleware struct: the derive builds the options before the app exists",
                    ));
                }
                if let Some((_, default)) = &tp.default {
                    errors.push(syn::Error::new_spanned(
                        default,
                        "give a generic option its default type on the field, `#[middleware(default_type = T)]`, not on the struct's parameter",
                    ));
                }
                params.push(&tp.ident);
            }
            other => errors.push(syn::Error::new_spanned(
                other,
                "`#[derive(Middleware)]` supports type parameters only (the app and generic options), not lifetimes or const generics",
            )),
        }
    }
    if let Some(where_clause) = &ast.generics.where_clause {
        errors.push(syn::Error::new_spanned(
            where_clause,
            "put `where` bounds on the `Handler` impl, not on the middleware struct",
        ));
    }
    params
}

/// Whether `field` is the app: marked `#[middleware(app)]`, or named `app` with no
/// `middleware` attribute while no other field is marked.
fn is_app(field: &RawField<'_>, all: &[RawField<'_>]) -> bool {
    field.app.is_some()
        || (!field.marked
            && field.field.ident.as_ref().is_some_and(|i| i == "app")
            && all.iter().all(|f| f.app.is_none()))
}

fn app_field<'a>(
    ast: &syn::DeriveInput,
    fields: &'a [RawField<'a>],
    params: &[&'a Ident],
    errors: &mut Errors,
) -> Option<(&'a Ident, &'a Ident)> {
    let mut app = None;
    let mut first: Option<&Ident> = None;
    for field in fields.iter().filter(|f| is_app(f, fields)) {
        let Some(ident) = field.field.ident.as_ref() else {
            continue;
        };
        if let Some(first) = first {
            errors.push(syn::Error::new(
                ident.span(),
                format!(
                    "only one field can hold the inner app, and `{first}` already does; the other fields are options"
                ),
            ));
            continue;
        }
        first = Some(ident);
        match type_param_of(&field.field.ty, params) {
            Some(param) => app = Some((ident, param)),
            None => errors.push(syn::Error::new_spanned(
                &field.field.ty,
                "the app field's type must be a type parameter of the struct (e.g. `app: A`), so the middleware can wrap any inner stack",
            )),
        }
    }
    if first.is_none() {
        errors.push(syn::Error::new(
            ast.ident.span(),
            format!(
                "`#[derive(Middleware)]` needs a field holding the inner app: add `app: A` to `{}` (with a type parameter `A`), or mark the field with `#[middleware(app)]`",
                ast.ident
            ),
        ));
    }
    app
}

fn option_field<'a>(
    raw: &'a RawField<'a>,
    params: &[&'a Ident],
    errors: &mut Errors,
) -> FieldModel<'a> {
    let field = raw.field;
    let ident = field
        .ident
        .as_ref()
        .expect("validate only reads structs with named fields");
    let generic = type_param_of(&field.ty, params);
    if generic.is_none()
        && let Some(param) = mentioned_param(&field.ty, params)
    {
        errors.push(syn::Error::new_spanned(
            &field.ty,
            format!(
                "an option may be generic only as a whole (`{ident}: {param}`), not inside another type"
            ),
        ));
    }
    if raw.state && generic.is_some() {
        errors.push(syn::Error::new_spanned(
            &field.ty,
            "a `state` field cannot have a generic type: it is built from its default",
        ));
    }
    if let Some(default_type) = &raw.default_type
        && generic.is_none()
    {
        errors.push(syn::Error::new_spanned(
            default_type,
            format!(
                "`default_type` is for generic options (a field whose type is a type parameter); `{ident}` always has type `{}`",
                field.ty.to_token_stream()
            ),
        ));
    }
    if let Some(bound) = &raw.bound
        && generic.is_none()
    {
        errors.push(syn::Error::new_spanned(
            bound,
            format!(
                "`bound` is for generic options (a field whose type is a type parameter); `{ident}` always has type `{}`",
                field.ty.to_token_stream()
            ),
        ));
    }
    if raw.into && generic.is_some() {
        errors.push(syn::Error::new_spanned(
            &field.ty,
            "`into` is for options of one type; a generic option's setter already takes any type",
        ));
    }
    if let Some(default) = &raw.default
        && generic.is_some()
        && raw.default_type.is_none()
    {
        errors.push(syn::Error::new_spanned(
            default,
            format!(
                "a generic option's default needs its type too: add `default_type = ..` beside `default` on `{ident}`"
            ),
        ));
    }
    FieldModel {
        ident,
        ty: &field.ty,
        docs: field
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("doc"))
            .collect(),
        default: raw.default.as_ref(),
        into: raw.into,
        bound: raw.bound.as_ref(),
        state: raw.state,
        generic,
        default_type: raw.default_type.as_ref(),
    }
}

/// The type parameter a type is, if it is exactly one.
fn type_param_of<'a>(ty: &Type, params: &[&'a Ident]) -> Option<&'a Ident> {
    match ty {
        Type::Path(tp) if tp.qself.is_none() => {
            let ident = tp.path.get_ident()?;
            params.iter().copied().find(|p| *p == ident)
        }
        Type::Paren(inner) => type_param_of(&inner.elem, params),
        Type::Group(inner) => type_param_of(&inner.elem, params),
        _ => None,
    }
}

/// A type parameter that `ty` mentions anywhere in its syntax tree.
fn mentioned_param<'a>(ty: &Type, params: &[&'a Ident]) -> Option<&'a Ident> {
    match ty {
        Type::Path(tp) => {
            let qself = tp
                .qself
                .as_ref()
                .and_then(|q| mentioned_param(&q.ty, params));
            qself.or_else(|| in_path(&tp.path, params))
        }
        Type::Array(t) => mentioned_param(&t.elem, params),
        Type::Group(t) => mentioned_param(&t.elem, params),
        Type::Paren(t) => mentioned_param(&t.elem, params),
        Type::Ptr(t) => mentioned_param(&t.elem, params),
        Type::Reference(t) => mentioned_param(&t.elem, params),
        Type::Slice(t) => mentioned_param(&t.elem, params),
        Type::Tuple(t) => t.elems.iter().find_map(|e| mentioned_param(e, params)),
        Type::FnPtr(f) => f
            .inputs
            .iter()
            .find_map(|arg| mentioned_param(&arg.ty, params))
            .or_else(|| match &f.output {
                ReturnType::Type(_, ty) => mentioned_param(ty.as_ref(), params),
                ReturnType::Default => None,
            }),
        Type::ImplTrait(t) => in_bounds(t.bounds.iter(), params),
        Type::TraitObject(t) => in_bounds(t.bounds.iter(), params),
        _ => None,
    }
}

fn in_bounds<'a, 'b>(
    mut bounds: impl Iterator<Item = &'b TypeParamBound>,
    params: &[&'a Ident],
) -> Option<&'a Ident> {
    bounds.find_map(|bound| match bound {
        TypeParamBound::Trait(t) => in_path(&t.path, params),
        _ => None,
    })
}

fn in_path<'a>(path: &Path, params: &[&'a Ident]) -> Option<&'a Ident> {
    if path.leading_colon.is_none()
        && let Some(first) = path.segments.first()
        && let Some(param) = params.iter().copied().find(|p| **p == first.ident)
    {
        return Some(param);
    }
    path.segments
        .iter()
        .find_map(|segment| match &segment.arguments {
            PathArguments::AngleBracketed(args) => args.args.iter().find_map(|arg| match arg {
                GenericArgument::Type(ty) => mentioned_param(ty, params),
                GenericArgument::AssocType(assoc) => mentioned_param(&assoc.ty, params),
                _ => None,
            }),
            PathArguments::Parenthesized(args) => args
                .inputs
                .iter()
                .find_map(|arg| mentioned_param(&arg.ty, params))
                .or_else(|| match &args.output {
                    ReturnType::Type(_, ty) => mentioned_param(ty.as_ref(), params),
                    ReturnType::Default => None,
                }),
            PathArguments::None => None,
        })
}
