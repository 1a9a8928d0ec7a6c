//! Reading `#[middleware(..)]` attributes into a model of the middleware.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::{Attribute, Data, DeriveInput, Expr, Fields, GenericParam, Ident, Path, Type};

/// What the derive knows about one middleware struct.
pub(crate) struct Model<'a> {
    /// The runtime crate's path (`::brute` unless `#[middleware(crate = ..)]`).
    pub(crate) krate: TokenStream,
    pub(crate) app: &'a Ident,
    /// The app's type parameter.
    pub(crate) app_param: Ident,
    /// The other type parameters, each the type of exactly one option field.
    pub(crate) params: Vec<Ident>,
    pub(crate) fields: Vec<FieldModel<'a>>,
    pub(crate) provides: Vec<Path>,
    pub(crate) rules: Vec<RuleModel>,
    /// The name shown in placement errors (`#[middleware(name = "..")]`).
    pub(crate) display: String,
}

/// One placement rule declared on the struct.
pub(crate) enum RuleModel {
    Inside(Path),
    Outside(Path),
    RequiresInner(Path),
    ForbidsInner(Path),
    Unique,
}

/// A field other than the app.
pub(crate) struct FieldModel<'a> {
    pub(crate) ident: &'a Ident,
    pub(crate) ty: &'a Type,
    pub(crate) docs: Vec<&'a Attribute>,
    pub(crate) default: Option<Expr>,
    /// The setter takes `impl Into<T>`.
    pub(crate) into: bool,
    /// Internal state: no setter, initialised from its default.
    pub(crate) state: bool,
    /// The field's type is this type parameter (a generic option).
    pub(crate) generic: Option<Ident>,
}

const STRUCT_KEYS: &str =
    "`provides`, `inside`, `outside`, `requires_inner`, `forbids_inner`, `unique`, `name`, `crate`";
const FIELD_KEYS: &str = "`app`, `default`, `into`, `state`";

pub(crate) fn read(input: &DeriveInput) -> syn::Result<Model<'_>> {
    let fields = match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(named) => &named.named,
            _ => return Err(shape_error(input)),
        },
        _ => return Err(shape_error(input)),
    };

    let mut krate: TokenStream = quote::quote!(::brute);
    let mut provides = Vec::new();
    let mut rules = Vec::new();
    let mut display = input.ident.to_string();
    for attr in input
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("middleware"))
    {
        attr.parse_nested_meta(|meta| {
            let key = meta
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            match key.as_str() {
                "provides" => provides.push(meta.value()?.parse::<Path>()?),
                "inside" => rules.push(RuleModel::Inside(meta.value()?.parse()?)),
                "outside" => rules.push(RuleModel::Outside(meta.value()?.parse()?)),
                "requires_inner" => rules.push(RuleModel::RequiresInner(meta.value()?.parse()?)),
                "forbids_inner" => rules.push(RuleModel::ForbidsInner(meta.value()?.parse()?)),
                "unique" => rules.push(RuleModel::Unique),
                "crate" => krate = meta.value()?.parse::<Path>()?.into_token_stream(),
                "name" => display = meta.value()?.parse::<syn::LitStr>()?.value(),
                _ => {
                    return Err(meta.error(format!(
                        "unknown `middleware` attribute on a struct; expected one of: {STRUCT_KEYS}"
                    )));
                }
            }
            Ok(())
        })?;
    }

    let mut errors: Option<syn::Error> = None;

    let mut type_params = Vec::new();
    for param in &input.generics.params {
        match param {
            GenericParam::Type(tp) => {
                if !tp.bounds.is_empty() {
                    push(
                        &mut errors,
                        syn::Error::new_spanned(
                            &tp.bounds,
                            "put trait bounds on the `Handler` impl, not on the middleware struct: the derive builds the options before the app exists",
                        ),
                    );
                }
                type_params.push(tp.ident.clone());
            }
            other => push(
                &mut errors,
                syn::Error::new_spanned(
                    other,
                    "`#[derive(Middleware)]` supports type parameters only (the app and generic options), not lifetimes or const generics",
                ),
            ),
        }
    }
    if let Some(where_clause) = &input.generics.where_clause {
        push(
            &mut errors,
            syn::Error::new_spanned(
                where_clause,
                "put `where` bounds on the `Handler` impl, not on the middleware struct",
            ),
        );
    }

    let mut app: Option<(&Ident, Ident)> = None;
    let mut field_models = Vec::new();
    for field in fields {
        let ident = field.ident.as_ref().expect("named fields have idents");
        let mut is_app = false;
        let mut default = None;
        let mut into = false;
        let mut state = false;
        for attr in field
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("middleware"))
        {
            let parsed = attr.parse_nested_meta(|meta| {
                let key = meta.path.get_ident().map(ToString::to_string).unwrap_or_default();
                match key.as_str() {
                    "app" => is_app = true,
                    "into" => into = true,
                    "state" => state = true,
                    "default" => {
                        if meta.input.is_empty() || meta.input.peek(syn::Token![,]) {
                            return Err(meta.error(
                                "`default` needs a value, e.g. `#[middleware(default = 25)]`; without it the field's `Default` is used",
                            ));
                        }
                        default = Some(meta.value()?.parse::<Expr>()?);
                    }
                    _ => {
                        return Err(meta.error(format!(
                            "unknown `middleware` attribute on a field; expected one of: {FIELD_KEYS}"
                        )));
                    }
                }
                Ok(())
            });
            if let Err(err) = parsed {
                push(&mut errors, err);
            }
        }
        let named_app =
            field.attrs.iter().all(|a| !a.path().is_ident("middleware")) && ident == "app";
        if is_app || (named_app && !fields.iter().any(marked_app)) {
            match (&app, type_param_of(&field.ty, &type_params)) {
                (Some((first, _)), _) => push(
                    &mut errors,
                    syn::Error::new(
                        ident.span(),
                        format!(
                            "only one field can hold the inner app, and `{first}` already does; the other fields are options"
                        ),
                    ),
                ),
                (None, Some(param)) => app = Some((ident, param)),
                (None, None) => push(
                    &mut errors,
                    syn::Error::new_spanned(
                        &field.ty,
                        "the app field's type must be a type parameter of the struct (e.g. `app: A`), so the middleware can wrap any inner stack",
                    ),
                ),
            }
            continue;
        }
        let generic = type_param_of(&field.ty, &type_params);
        if generic.is_none() {
            let tokens = field.ty.to_token_stream().to_string();
            if let Some(param) = type_params
                .iter()
                .find(|p| mentions(&tokens, &p.to_string()))
            {
                push(
                    &mut errors,
                    syn::Error::new_spanned(
                        &field.ty,
                        format!(
                            "an option may be generic only as a whole (`{ident}: {param}`), not inside another type"
                        ),
                    ),
                );
            }
        }
        if state && generic.is_some() {
            push(
                &mut errors,
                syn::Error::new_spanned(
                    &field.ty,
                    "a `state` field cannot have a generic type: it is built from its default",
                ),
            );
        }
        field_models.push(FieldModel {
            ident,
            ty: &field.ty,
            docs: field
                .attrs
                .iter()
                .filter(|a| a.path().is_ident("doc"))
                .collect(),
            default,
            into,
            state,
            generic,
        });
    }

    let Some((app, app_param)) = app else {
        let err = syn::Error::new(
            input.ident.span(),
            format!(
                "`#[derive(Middleware)]` needs a field holding the inner app: add `app: A` to `{}` (with a type parameter `A`), or mark the field with `#[middleware(app)]`",
                input.ident
            ),
        );
        push(&mut errors, err);
        return Err(errors.expect("an error was just pushed"));
    };

    let params: Vec<Ident> = type_params
        .into_iter()
        .filter(|p| *p != app_param)
        .collect();
    // An unused parameter is usually a symptom of an error reported above.
    let unused: Vec<syn::Error> = params
        .iter()
        .filter(|param| !field_models.iter().any(|f| f.generic.as_ref() == Some(*param)))
        .map(|param| {
            syn::Error::new(
                param.span(),
                format!("type parameter `{param}` must be the type of an option field (e.g. `tools: {param}`)"),
            )
        })
        .collect();
    if errors.is_none() {
        unused.into_iter().for_each(|err| push(&mut errors, err));
    }

    match errors {
        Some(err) => Err(err),
        None => Ok(Model {
            krate,
            app,
            app_param,
            params,
            fields: field_models,
            provides,
            rules,
            display,
        }),
    }
}

fn marked_app(field: &syn::Field) -> bool {
    field
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("middleware"))
        .any(|a| {
            let mut found = false;
            let _ = a.parse_nested_meta(|meta| {
                if meta.path.is_ident("app") {
                    found = true;
                } else if meta.input.peek(syn::Token![=]) {
                    let _ = meta.value()?.parse::<Expr>()?;
                }
                Ok(())
            });
            found
        })
}

fn shape_error(input: &DeriveInput) -> syn::Error {
    syn::Error::new(
        input.ident.span(),
        "`#[derive(Middleware)]` needs a struct with named fields: one holding the inner app (`app: A`) and one per option",
    )
}

/// The type parameter a type is, if it is exactly one.
fn type_param_of(ty: &Type, params: &[Ident]) -> Option<Ident> {
    match ty {
        Type::Path(tp) if tp.qself.is_none() => {
            let ident = tp.path.get_ident()?;
            params.iter().find(|p| *p == ident).cloned()
        }
        _ => None,
    }
}

/// Whether the token string mentions `name` as a whole identifier.
fn mentions(tokens: &str, name: &str) -> bool {
    tokens
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|word| word == name)
}

/// Adds `err` to the errors collected so far.
fn push(errors: &mut Option<syn::Error>, err: syn::Error) {
    match errors {
        Some(all) => all.combine(err),
        None => *errors = Some(err),
    }
}
