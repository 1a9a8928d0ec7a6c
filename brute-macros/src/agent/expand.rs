//! Expansion of a checked block.
//!
//! The expression form becomes one block:
//!
//! ```text
//! {
//!     const _: () = { /* the placement table, then one check per `use` line, spanned at its path */ };
//!     let o0 = (&&Outer::__brute_probe()).options();      // source order
//!     let n0 = (&&options_probe(&o0)).option_names(..);   // the option names
//!     let o0 = n0.option.with(o0).option(value);          // one method per option
//!     let o1 = (&&Inner::__brute_probe()).options();
//!     let app = (&&RunLine::new(run_expr)).terminal();    // checked at `run`
//!     let app = (&&UseLine::new(layer(o1, app))).handler_over_inner_layers();
//!     let app = (&&UseLine::new(layer(o0, app))).handler_over_inner_layers();
//!     agent(app, &["Outer", "Inner"])
//! }
//! ```
//!
//! Each check is a method call resolved by autoref (the `&&` picks the impl for a
//! middleware, a model, a handler; one `&` less, the fallback), spanned at the
//! user's token: a mistake is one error at its own line, and the fallback values
//! keep the rest of the block from failing again (axum's `#[debug_handler]` is the
//! model).
//!
//! In an agent, each layer's inner app is a `Watch` of the layers below it, which names
//! at run time a layer that returned without calling inside.
//!
//! Every 16 layers (counted from the terminal) the stack is wrapped in `Erased` (an
//! agent: its type erased) or `Boxed` (a pipeline), which box that layer's future:
//! rustc computes the layout of nested async blocks recursively and overflows its
//! default `recursion_limit` at about 26 of them.
//! All logic lives in generic functions of `brute::__private::v1`; the code here only
//! names them, and names nothing outside that path.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{GenericArgument, Path, PathArguments};

use super::parse::Flavor;
use super::parse::Parsed;
use super::validate::Stack;

/// A boxing boundary after this many layers of an agent, counted from the terminal
/// (a `Watch` adds no future of its own, so an agent's layers nest once, as a
/// pipeline's).
const BOX_EVERY_AGENT: usize = 16;
/// The same for a pipeline.
const BOX_EVERY_PIPELINE: usize = 16;

/// Whether the stack is boxed after the layer `depth` layers from the terminal
/// (never after the outermost one: nothing is nested around it).
fn box_after(depth: usize, total: usize, flavor: Flavor) -> bool {
    let every = match flavor {
        Flavor::Agent => BOX_EVERY_AGENT,
        Flavor::Pipeline => BOX_EVERY_PIPELINE,
    };
    depth.is_multiple_of(every) && depth < total
}

/// The span diagnostics about a `use` line point at: the middleware's name, the last
/// segment of its path (on stable, a span cannot cover the whole path).
fn last_segment_span(path: &Path) -> Span {
    path.segments
        .last()
        .map_or_else(|| path.span(), |s| s.ident.span())
}

pub(crate) fn expand(stack: &Stack<'_>, flavor: Flavor) -> TokenStream {
    match (stack.header, &stack.run_type) {
        (Some(header), Some(run_type)) => {
            let checks = placement_checks(stack, true);
            expand_type(stack, header, run_type, flavor, checks)
        }
        _ => expand_expr(stack, flavor, placement_checks(stack, false)),
    }
}

/// The path as written, without generic arguments on its last segment, for use in
/// expression position (`SessionLog::__brute_probe()`).
fn bare_path(path: &Path) -> Path {
    let mut path = path.clone();
    if let Some(last) = path.segments.last_mut() {
        last.arguments = PathArguments::None;
    }
    path
}

/// The placement checks of every `use` line, in one `const _` block: the table of
/// the lines' placements, then one generic fn per line whose type parameter is the
/// layer's name as written there (`fn line<MaxIterations>()`), asking one trait per
/// message whether that line's rules hold (see `brute::stack::report`). A broken rule
/// is an unmet bound at the line, its `on_unimplemented` naming the layer by that
/// parameter, and the kind.
fn placement_checks(stack: &Stack<'_>, item: bool) -> TokenStream {
    let krate = stack.krate;
    let private = quote! { #krate::__private::v1 };
    let table = format_ident!("__BRUTE_STACK");
    // A type that is not a middleware is reported here, once, at its `use` line, by
    // the `on_unimplemented` of `UseTarget`; `placement_of` asks the same at the same
    // span, so rustc reports it once.
    let entries = stack.uses.iter().map(|line| {
        let path = bare_path(&line.path);
        let span = last_segment_span(&path);
        quote_spanned! {span=> {
            let probe = #private::probe(&#path::__brute_probe);
            #private::ask(&probe, <_ as #private::UseTarget>::check);
            #private::placement_of(&probe)
        }}
    });
    let lines = stack.uses.iter().enumerate().map(|(index, line)| {
        let span = last_segment_span(&line.path);
        let name = line
            .path
            .segments
            .last()
            .map_or_else(|| format_ident!("Layer"), |s| s.ident.clone());
        // Declared at the macro's own span (rustc suggests no bound on it), named at
        // the user's (the error points at the line).
        let param = syn::Ident::new(&name.to_string(), Span::mixed_site());
        let named = syn::Ident::new(&name.to_string(), span);
        let checks = SAID.iter().enumerate().map(|(slot, said)| {
            let said = syn::Ident::new(said, span);
            let kind = format_ident!("K{}", slot);
            quote_spanned! {span=>
                const #kind: u64 = REPORT[#slot];
                <#named as #private::#said<_>>::check(#private::kind::<#kind, _>());
            }
        });
        let written = written_options(line);
        let required_table = format_ident!("__BRUTE_REQUIRED");
        let sets = quote_spanned! {span=>
            const MISSING: u64 = #private::missing_option(#required_table[#index], &[#(#written),*]);
            <#named as #private::SetsOption<_>>::check(#private::kind::<MISSING, _>());
        };
        quote! {
            #[allow(non_camel_case_types, non_snake_case, dead_code, clippy::extra_unused_type_parameters)]
            fn line<#param>() {
                const REPORT: [u64; #private::SLOTS] = #private::placement_report(#table, #index);
                #(#checks)*
                #sets
            }
        }
    });
    // The options each middleware requires, asked at the same span as its placement
    // (a type that is not a middleware is reported once).
    let required_table = format_ident!("__BRUTE_REQUIRED");
    let required = stack.uses.iter().map(|line| {
        let path = bare_path(&line.path);
        let span = last_segment_span(&path);
        quote_spanned! {span=> {
            let probe = #private::probe(&#path::__brute_probe);
            #private::ask(&probe, <_ as #private::UseTarget>::check);
            #private::required_of(&probe)
        }}
    });
    let tables = quote! {
        const #table: &[#private::Placement] = &[#(#entries),*];
        const #required_table: &[&[&str]] = &[#(#required),*];
    };
    let lines = quote! { #(const _: () = { #lines };)* };
    match item {
        // At module level, everything in one anonymous `const`.
        true => quote! {
            const _: () = {
                #[allow(unused_imports)]
                use #private::Probe as _;
                #tables
                #lines
            };
        },
        // In the block of an expression, the tables are items of the block, which the
        // code building the stack reads too (`__BRUTE_REQUIRED`).
        false => quote! {
            #tables
            #lines
        },
    }
}

/// The names of the options a `use` line sets, as string literals.
fn written_options(line: &super::parse::UseLine) -> Vec<String> {
    line.options
        .iter()
        .flat_map(|o| &o.fields)
        .map(|field| field.name.to_string())
        .collect()
}

/// The traits of `brute::stack::report`, in the order of its `Said` (one per slot of
/// a line's report).
const SAID: [&str; 12] = [
    "SitsInside",
    "SitsOutside",
    "NeedsInner",
    "ForbidsInner",
    "AppearsOnce",
    "SessionLogOutsideLoops",
    "SessionLogOutsideCompaction",
    "OneSessionLog",
    "CompactionInsideLoop",
    "ToolPipelineInsideLoop",
    "LoopsDoNotNest",
    "AModel",
];

/// The path as written, for messages (`brute::SystemPrompt`).
fn path_text(path: &Path) -> String {
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let lead = if path.leading_colon.is_some() {
        "::"
    } else {
        ""
    };
    format!("{lead}{}", segments.join("::"))
}

fn is_closure(tokens: &TokenStream) -> bool {
    let mut iter = tokens.clone().into_iter();
    loop {
        match iter.next() {
            Some(TokenTree::Punct(p)) => return p.as_char() == '|',
            Some(TokenTree::Ident(i)) if i == "move" || i == "async" => continue,
            _ => return false,
        }
    }
}

/// What `run` was given, as far as the terminal it needs.
enum RunClosure {
    /// `|env| ..` whose future does not borrow the env.
    Plain,
    /// `async |env| ..`, or `|env| async { .. }` rewritten to it: the future may
    /// borrow the env.
    Async(TokenStream),
}

/// `async [move] |..| ..` is an async closure as written. `|..| async [move] { .. }`
/// (a closure whose whole body is an async block, with no `move` on the closure) is
/// rewritten to the async closure `async |..| { .. }`: the same captures, and its
/// future may borrow the env, which a closure returning an async block cannot do.
fn run_closure(tokens: &TokenStream, private: &TokenStream) -> RunClosure {
    let trees: Vec<TokenTree> = tokens.clone().into_iter().collect();
    let is_ident = |tree: Option<&TokenTree>, word: &str| matches!(tree, Some(TokenTree::Ident(i)) if i == word);
    if is_ident(trees.first(), "async") {
        return RunClosure::Async(tokens.clone());
    }
    let is_bar = |tree: &TokenTree| matches!(tree, TokenTree::Punct(p) if p.as_char() == '|');
    if !trees.first().is_some_and(is_bar) {
        return RunClosure::Plain;
    }
    let Some(close) = trees.iter().skip(1).position(is_bar).map(|i| i + 1) else {
        return RunClosure::Plain;
    };
    let mut body = &trees[close + 1..];
    if !is_ident(body.first(), "async") {
        return RunClosure::Plain;
    }
    body = &body[1..];
    if is_ident(body.first(), "move") {
        body = &body[1..];
    }
    match body {
        [TokenTree::Group(block)] if block.delimiter() == proc_macro2::Delimiter::Brace => {
            let async_kw = &trees[close + 1];
            let params = &trees[..=close];
            // The return type written out: a body that is not a `Result` is rustc's
            // "expected `Result<_, Error>`" at its value, with the hint to wrap it in
            // `Ok(..)`, not a mismatch between two async closure bodies.
            // (The value is bound to a `let` of that type: the mismatch is then
            // reported at the body's value, with rustc's hint to wrap it in `Ok`.)
            let reply = format_ident!("__brute_reply", span = Span::mixed_site());
            RunClosure::Async(quote! {
                #async_kw #(#params)* -> #private::RunResult<_> {
                    let #reply: #private::RunResult<_> = #block;
                    #reply
                }
            })
        }
        _ => RunClosure::Plain,
    }
}

fn run_span(stack: &Stack<'_>) -> Span {
    stack
        .run
        .tokens
        .clone()
        .into_iter()
        .next()
        .map_or(stack.run.span, |tt| tt.span())
}

fn expand_expr(stack: &Stack<'_>, flavor: Flavor, checks: TokenStream) -> TokenStream {
    let krate = stack.krate;
    let private = quote! { #krate::__private::v1 };
    // Locals get one span, so that hygiene sees the same name wherever they appear.
    let app = format_ident!("__brute_app");
    let options = stack.uses.iter().enumerate().map(|(index, line)| {
        let var = format_ident!("__brute_o{}", index);
        let path = bare_path(&line.path);
        let span = last_segment_span(&path);
        // Each option is a method of the options, so a value of the wrong type is
        // reported at the value. Before it, the option's field of the middleware's
        // names is read (a derived middleware's `NameOptionNames`; for one written by
        // hand, the names as written here): an unknown option is rustc's "no field"
        // at the option listing the available ones, and the setter, called on the
        // erroneous field's result, is not reported again.
        let fields: Vec<_> = line.options.iter().flat_map(|o| &o.fields).collect();
        let names_var = format_ident!("__brute_n{}", index);
        let written = format_ident!("__BruteWritten{}", index);
        let field_names: Vec<_> = fields.iter().map(|field| &field.name).collect();
        let setters = fields.iter().map(|field| {
            let name = &field.name;
            let value = match &field.value {
                Some(value) => quote! { #value },
                None => quote! { #name },
            };
            quote! {
                let #var = #names_var.#name.with(#var).#name(#value);
            }
        });
        let probe = quote_spanned! {span=> #path::__brute_probe() };
        let options = quote_spanned! {span=> (&&#probe).options() };
        // The options must be `Send + Sync` (an agent runs on a multi-threaded
        // runtime): asked of the options, so the error names them and not the stack
        // below; options that are not become options that build nothing, so the layer
        // is not reported again.
        let send = (flavor == Flavor::Agent).then(|| {
            let send_var = format_ident!("__brute_send");
            let line = quote_spanned! {span=> #private::SendLine::new(#var) };
            let ask = quote_spanned! {span=>
                #private::ask_send(&#send_var, <_ as #private::SendOptions>::check)
            };
            let checked = quote_spanned! {span=> (&&#send_var).send_options() };
            quote! {
                let #send_var = #line;
                #ask;
                let #var = #checked;
            }
        });
        let names = (!fields.is_empty()).then(|| {
            quote! {
                #[allow(non_camel_case_types, dead_code)]
                struct #written { #(#field_names: #private::OptionName,)* }
                let #names_var = (&&#private::options_probe(&#var)).option_names(#written {
                    #(#field_names: #private::OptionName,)*
                });
            }
        });
        // Options that leave out a required one build nothing: the line is reported
        // by its placement check (`SetsOption`), and the layer, whose `Handler` impl
        // needs the option, is not reported again.
        let written = written_options(line);
        let required_table = format_ident!("__BRUTE_REQUIRED");
        let unset = quote_spanned! {span=>
            #private::missing_option(#required_table[#index], &[#(#written),*]) != 0
        };
        quote! {
            let #var = #options;
            #names
            #(#setters)*
            let #var = {
                const UNSET: bool = #unset;
                #private::OptionsUnset::<UNSET, _>(#var).checked()
            };
            #send
        }
    });
    let run_tokens = &stack.run.tokens;
    let span = run_span(stack);
    let terminal = match (flavor, is_closure(run_tokens)) {
        (Flavor::Agent, true) => match run_closure(run_tokens, &private) {
            RunClosure::Async(closure) => {
                quote_spanned! {span=> #private::terminal_async(#closure) }
            }
            RunClosure::Plain => {
                quote_spanned! {span=> #private::terminal_fn(#run_tokens) }
            }
        },
        (Flavor::Agent, false) => {
            // The value is a model, or the error is `Model`'s own at the value (asked
            // through the trait's path, so no note points into brute), and a fallback
            // terminal takes its place.
            let run_var = format_ident!("__brute_run");
            let line = quote_spanned! {span=> #private::RunLine::new(#run_tokens) };
            let ask = quote_spanned! {span=>
                #private::ask_run_line(&#run_var, <_ as #private::Model>::check_run_line)
            };
            let terminal = quote_spanned! {span=> terminal };
            quote! {{
                let #run_var = #line;
                #ask;
                (&&#run_var).#terminal()
            }}
        }
        (Flavor::Pipeline, true) => {
            quote_spanned! {span=> #private::handler_fn(#run_tokens) }
        }
        (Flavor::Pipeline, false) => {
            quote_spanned! {span=> #private::handler(#run_tokens) }
        }
    };
    let total = stack.uses.len();
    let layers = stack.uses.iter().enumerate().rev().map(|(index, line)| {
        let var = format_ident!("__brute_o{}", index);
        let depth = total - index;
        // An agent's boundary erases the type (each layer nests twice there, with its
        // `Watch`); a pipeline's only boxes the future.
        let boxed = box_after(depth, total, flavor).then(|| match flavor {
            Flavor::Agent => quote! { let #app = #private::Erased::new(#app); },
            Flavor::Pipeline => quote! { let #app = #private::Boxed::new(#app); },
        });
        let span = last_segment_span(&line.path);
        let layer = quote_spanned! {span=> #private::layer };
        // In an agent, each layer's inner app is a `Watch` that counts the line's
        // calls inside (no future of its own), so that the agent names at run time a
        // layer that returned without calling inside.
        let inner = match flavor {
            Flavor::Agent => quote! { #private::Watch::new(#app, #index) },
            Flavor::Pipeline => quote! { #app },
        };
        let built = match flavor {
            // The layer built here handles the env over the layers below it, or this
            // line is the error: the line's verdict (`Handles` or `ThisLayer`, picked
            // by autoref) is asked `HandlesTheLayersBelow`, whose message names the
            // mistake in the user's words. (Asking `Handler` itself reported the
            // failed bound on the stack's own types: `Watch<Terminal<..>>: Default`.)
            Flavor::Agent => {
                let line_var = format_ident!("__brute_line");
                let line = quote_spanned! {span=> #private::UseLine::new(#layer(#var, #inner)) };
                let verdict = quote_spanned! {span=> verdict };
                let ask = quote_spanned! {span=>
                    #private::ask_use_line(
                        &(&&#line_var).#verdict(),
                        <_ as #private::HandlesTheLayersBelow>::check,
                    )
                };
                let check = quote_spanned! {span=> handler_over_inner_layers };
                quote! {{
                    let #line_var = #line;
                    #ask;
                    (&&#line_var).#check()
                }}
            }
            Flavor::Pipeline => quote! { #layer(#var, #app) },
        };
        quote! {
            let #app = #built;
            #boxed
        }
    });
    let names = stack
        .uses
        .iter()
        .map(|line| path_text(&bare_path(&line.path)));
    let finish = match flavor {
        Flavor::Agent => quote! { #private::agent(#app, &[#(#names),*]) },
        Flavor::Pipeline => quote! { #app },
    };
    quote! {{
        #checks
        #[allow(unused_imports)]
        use #private::{HasOptionNames as _, IsHandler as _, IsMiddleware as _, IsModel as _, IsSend as _, NotAHandler as _, NotAModel as _, NotMiddleware as _, NotSend as _, Probe as _, UnnamedOptions as _};
        #(#options)*
        let #app = #terminal;
        #(#layers)*
        #finish
    }}
}

fn expand_type(
    stack: &Stack<'_>,
    header: &super::parse::TypeHeader,
    run_type: &syn::Type,
    flavor: Flavor,
    checks: TokenStream,
) -> TokenStream {
    let krate = stack.krate;
    let mut ty = match flavor {
        Flavor::Agent => quote! { #krate::__private::v1::Terminal<#run_type> },
        Flavor::Pipeline => quote! { #run_type },
    };
    let total = stack.uses.len();
    for (index, line) in stack.uses.iter().enumerate().rev() {
        if flavor == Flavor::Agent {
            ty = quote! { #krate::__private::v1::Watch<#ty> };
        }
        ty = layer_type(&line.path, ty);
        let depth = total - index;
        if box_after(depth, total, flavor) {
            ty = match flavor {
                Flavor::Agent => quote! { #krate::__private::v1::Erased<'static> },
                Flavor::Pipeline => quote! { #krate::__private::v1::Boxed<#ty> },
            };
        }
    }
    if flavor == Flavor::Agent {
        ty = quote! { #krate::__private::v1::Agent<#ty> };
    }
    let super::parse::TypeHeader {
        attrs,
        vis,
        ident,
        generics,
    } = header;
    quote! {
        #(#attrs)*
        #vis type #ident #generics = #ty;
        #checks
    }
}

/// `Path<Args>` with the inner stack inserted as the first generic argument.
fn layer_type(path: &Path, inner: TokenStream) -> TokenStream {
    let mut path = path.clone();
    let last = path
        .segments
        .last_mut()
        .expect("a parsed path has a segment");
    let rest: Vec<GenericArgument> = match &last.arguments {
        PathArguments::AngleBracketed(args) => args.args.iter().cloned().collect(),
        _ => Vec::new(),
    };
    last.arguments = PathArguments::None;
    quote! { #path<#inner #(, #rest)*> }
}

/// What a block that failed to parse expands to: the errors, plus a fallback value in
/// expression position (an item-position block, `pub type Name; ..`, gets the errors
/// alone).
pub(crate) fn parse_error_fallback(
    input: &TokenStream,
    flavor: Flavor,
    errors: TokenStream,
) -> TokenStream {
    let mut iter = input.clone().into_iter();
    let krate = match iter.next() {
        Some(TokenTree::Group(group)) => group.stream(),
        _ => return errors,
    };
    let item_form = match iter.next() {
        Some(TokenTree::Ident(ident)) => ident == "pub" || ident == "type",
        Some(TokenTree::Punct(punct)) => punct.as_char() == '#',
        _ => false,
    };
    if item_form {
        return errors;
    }
    let value = fallback_value(&krate, flavor);
    quote! {{ #errors #value }}
}

fn fallback_value(krate: &TokenStream, flavor: Flavor) -> TokenStream {
    match flavor {
        Flavor::Agent => quote! { #krate::__private::v1::fallback_agent() },
        Flavor::Pipeline => quote! { #krate::__private::v1::Fallback },
    }
}

/// What a block with errors expands to: the errors, and beside them a value (or type)
/// of a plausible type, so that one mistake gives one error and not a cascade.
pub(crate) fn fallback(parsed: &Parsed, flavor: Flavor, errors: TokenStream) -> TokenStream {
    let krate = &parsed.krate;
    let value = fallback_value(krate, flavor);
    let ty = match flavor {
        Flavor::Agent => quote! { #krate::__private::v1::Agent<#krate::__private::v1::Fallback> },
        Flavor::Pipeline => quote! { #krate::__private::v1::Fallback },
    };
    match &parsed.header {
        Some(header) => {
            let super::parse::TypeHeader {
                attrs,
                vis,
                ident,
                generics,
            } = header;
            quote! { #errors #(#attrs)* #vis type #ident #generics = #ty; }
        }
        None => quote! {{ #errors #value }},
    }
}
