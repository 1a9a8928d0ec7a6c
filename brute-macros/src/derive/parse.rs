//! Reading `#[middleware(..)]` attributes, without judging them.
//!
//! Every attribute of the struct and of its fields is read, and every malformed or
//! unknown key is an error; the errors are collected, so two typos give two errors.
//! Whether the keys make sense together is [`validate`](super::validate)'s job.

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::{
    Attribute, Data, DeriveInput, Expr, Field, Fields, LitStr, Path, Token, Type, TypeParamBound,
    punctuated::Punctuated,
};

use crate::errors::Errors;

const STRUCT_KEYS: &str =
    "`provides`, `inside`, `outside`, `requires_inner`, `forbids_inner`, `unique`, `name`, `crate`";
const FIELD_KEYS: &str = "`app`, `bound`, `default`, `default_type`, `into`, `state`";

/// The struct as written: its attributes read, its fields in order.
pub(crate) struct Input<'a> {
    pub(crate) ast: &'a DeriveInput,
    pub(crate) attrs: StructAttrs,
    /// `None` when the input is not a struct with named fields.
    pub(crate) fields: Option<Vec<RawField<'a>>>,
}

/// `#[middleware(..)]` on the struct.
#[derive(Default)]
pub(crate) struct StructAttrs {
    /// `crate = path`.
    pub(crate) krate: Option<Path>,
    pub(crate) provides: Vec<Path>,
    pub(crate) rules: Vec<RuleAttr>,
    /// `name = ".."`.
    pub(crate) name: Option<LitStr>,
}

/// One placement rule declared on the struct.
pub(crate) enum RuleAttr {
    Inside(Path),
    Outside(Path),
    RequiresInner(Path),
    ForbidsInner(Path),
    Unique,
}

/// A field and its `#[middleware(..)]` attributes.
pub(crate) struct RawField<'a> {
    pub(crate) field: &'a Field,
    /// `#[middleware(app)]`, with the key's span.
    pub(crate) app: Option<Span>,
    /// `#[middleware(default = expr)]`.
    pub(crate) default: Option<Expr>,
    /// `#[middleware(default_type = Type)]`.
    pub(crate) default_type: Option<Type>,
    /// `#[middleware(bound = Trait + ..)]`: what a generic option's value must implement
    /// when it is set, so that a closure's parameter types are inferred from it.
    pub(crate) bound: Option<Punctuated<TypeParamBound, Token![+]>>,
    /// `#[middleware(into)]`.
    pub(crate) into: bool,
    /// `#[middleware(state)]`.
    pub(crate) state: bool,
    /// Whether the field has any `#[middleware]` attribute.
    pub(crate) marked: bool,
}

pub(crate) fn parse<'a>(ast: &'a DeriveInput, errors: &mut Errors) -> Input<'a> {
    let attrs = struct_attrs(&ast.attrs, errors);
    let fields = match &ast.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(named) => Some(named.named.iter().map(|f| field(f, errors)).collect()),
            _ => None,
        },
        _ => None,
    };
    if fields.is_none() {
        errors.push(syn::Error::new(
            ast.ident.span(),
            "`#[derive(Middleware)]` needs a struct with named fields: one holding the inner app (`app: A`) and one per option",
        ));
    }
    Input { ast, attrs, fields }
}

fn middleware_attrs(attrs: &[Attribute]) -> impl Iterator<Item = &Attribute> {
    attrs.iter().filter(|a| a.path().is_ident("middleware"))
}

/// Reads every `key` or `key = value` of every `#[middleware(..)]` in `attrs`. An error
/// in one key is recorded and reading goes on with the next key.
fn each_key(
    attrs: &[Attribute],
    errors: &mut Errors,
    mut read: impl FnMut(&str, &ParseNestedMeta<'_>) -> syn::Result<()>,
) {
    for attr in middleware_attrs(attrs) {
        let mut found = Vec::new();
        let parsed = attr.parse_nested_meta(|meta| {
            let key = meta
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            if let Err(err) = read(&key, &meta) {
                found.push(err);
                skip_value(&meta)?;
            }
            Ok(())
        });
        found.into_iter().for_each(|err| errors.push(err));
        if let Err(err) = parsed {
            errors.push(err);
        }
    }
}

/// Skips `= value` after a key that was rejected, so the next key can be read.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<Expr>()?;
    }
    Ok(())
}

fn struct_attrs(attrs: &[Attribute], errors: &mut Errors) -> StructAttrs {
    let mut out = StructAttrs::default();
    each_key(attrs, errors, |key, meta| {
        match key {
            "provides" => out.provides.push(meta.value()?.parse()?),
            "inside" => out.rules.push(RuleAttr::Inside(meta.value()?.parse()?)),
            "outside" => out.rules.push(RuleAttr::Outside(meta.value()?.parse()?)),
            "requires_inner" => out
                .rules
                .push(RuleAttr::RequiresInner(meta.value()?.parse()?)),
            "forbids_inner" => out
                .rules
                .push(RuleAttr::ForbidsInner(meta.value()?.parse()?)),
            "unique" => out.rules.push(RuleAttr::Unique),
            "crate" => out.krate = Some(meta.value()?.parse()?),
            "name" => out.name = Some(meta.value()?.parse()?),
            _ => {
                return Err(meta.error(format!(
                    "unknown `middleware` attribute on a struct; expected one of: {STRUCT_KEYS}"
                )));
            }
        }
        Ok(())
    });
    out
}

fn field<'a>(field: &'a Field, errors: &mut Errors) -> RawField<'a> {
    let mut out = RawField {
        field,
        app: None,
        default: None,
        default_type: None,
        bound: None,
        into: false,
        state: false,
        marked: middleware_attrs(&field.attrs).next().is_some(),
    };
    each_key(&field.attrs, errors, |key, meta| {
        match key {
            "app" => out.app = Some(meta.path.require_ident()?.span()),
            "into" => out.into = true,
            "state" => out.state = true,
            "default" => {
                if !meta.input.peek(Token![=]) {
                    return Err(meta.error(
                        "`default` needs a value, e.g. `#[middleware(default = 25)]`; without it the field's `Default` is used",
                    ));
                }
                out.default = Some(meta.value()?.parse()?);
            }
            "default_type" => out.default_type = Some(meta.value()?.parse()?),
            "bound" => {
                let input = meta.value()?;
                out.bound = Some(Punctuated::parse_separated_nonempty(input)?);
            }
            _ => {
                return Err(meta.error(format!(
                    "unknown `middleware` attribute on a field; expected one of: {FIELD_KEYS}"
                )));
            }
        }
        Ok(())
    });
    out
}
