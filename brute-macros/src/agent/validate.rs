//! The syntax rules of a block: exactly one `run`, last; options given once; the named
//! type form takes types, not values. Each broken rule is an error at the offending
//! tokens; all of them are reported together.

use proc_macro2::{Span, TokenStream};
use syn::spanned::Spanned;

use super::parse::Flavor;
use super::parse::{Line, Parsed, RunLine, TypeHeader, UseLine};

/// A block whose syntax rules hold.
pub(crate) struct Stack<'a> {
    pub(crate) krate: &'a TokenStream,
    pub(crate) header: Option<&'a TypeHeader>,
    /// `use` lines, outermost first.
    pub(crate) uses: Vec<&'a UseLine>,
    pub(crate) run: &'a RunLine,
    /// The terminal type, in the named type form.
    pub(crate) run_type: Option<syn::Type>,
}

pub(crate) fn validate(parsed: &Parsed, flavor: Flavor) -> syn::Result<Stack<'_>> {
    let name = flavor.macro_name();
    let mut errors: Option<syn::Error> = None;
    let mut push = |err: syn::Error| match &mut errors {
        Some(all) => all.combine(err),
        None => errors = Some(err),
    };

    let mut uses = Vec::new();
    let mut run: Option<&RunLine> = None;
    for line in &parsed.lines {
        match line {
            Line::Use(line) => {
                if run.is_some() {
                    push(syn::Error::new(
                        line.use_token
                            .span
                            .join(line.path.span())
                            .unwrap_or(line.use_token.span),
                        format!(
                            "`run` must be the last line of `{name}`: this `use` comes after it and would never see the env. Move it above `run`"
                        ),
                    ));
                }
                check_options(line, parsed.header.is_some(), &mut push);
                uses.push(line);
            }
            Line::Run(line) => {
                if run.is_some() {
                    push(syn::Error::new(
                        line.span,
                        format!(
                            "`{name}` takes exactly one `run` line, and this is a second one. A stack ends in one terminal; to call a model several times per turn, use a loop layer such as `use Loop::ToolResult;`"
                        ),
                    ));
                } else {
                    run = Some(line);
                }
            }
        }
    }

    let Some(run) = run else {
        let message = format!(
            "`{name}` needs a `run` line as its last line, naming the terminal that every pass ends in, e.g. `run model;`"
        );
        // Blame the end of the block: the last line, after which `run` is missing.
        push(match uses.last() {
            Some(last) => syn::Error::new_spanned(last.whole(), message),
            None => syn::Error::new(Span::call_site(), message),
        });
        return Err(errors.expect("an error was just pushed"));
    };

    let run_type = match &parsed.header {
        Some(_) => match syn::parse2::<syn::Type>(run.tokens.clone()) {
            Ok(ty) => Some(ty),
            Err(_) => {
                push(syn::Error::new_spanned(
                    &run.tokens,
                    format!(
                        "in the named type form of `{name}`, `run` takes the terminal's type (e.g. `run ScriptedModel;`), not a value"
                    ),
                ));
                None
            }
        },
        None => None,
    };

    match errors {
        Some(err) => Err(err),
        None => Ok(Stack {
            krate: &parsed.krate,
            header: parsed.header.as_ref(),
            uses,
            run,
            run_type,
        }),
    }
}

fn check_options(line: &UseLine, named_type: bool, push: &mut impl FnMut(syn::Error)) {
    let last = line.path.segments.last();
    let has_args = last.is_some_and(|s| !s.arguments.is_none());
    if named_type {
        if let Some(options) = &line.options {
            push(syn::Error::new(
                options.brace.span.join(),
                "the named type form declares a type, so it takes no option values; give the options where the agent is built",
            ));
        }
        return;
    }
    if has_args {
        push(syn::Error::new_spanned(
            &last.expect("checked above").arguments,
            "remove the generic arguments: `brute_agent!` infers them from the options; write them only in the named type form (`pub type Name; ..`)",
        ));
    }
    let Some(options) = &line.options else { return };
    let mut seen: Vec<&syn::Ident> = Vec::new();
    for field in &options.fields {
        if let Some(first) = seen.iter().find(|seen| **seen == &field.name) {
            let mut err = syn::Error::new(
                field.name.span(),
                format!("option `{}` is given twice", field.name),
            );
            err.combine(syn::Error::new(first.span(), "first given here"));
            push(err);
        } else {
            seen.push(&field.name);
        }
    }
}
