//! Writing a checked tool out, and what an item with errors expands to.
//!
//! The user's fn (or impl) is emitted as written, minus the attributes on its
//! parameters (they belong to the arguments' fields), so it stays callable and
//! testable on its own. Beside it: for a fn, the unit struct that is the tool; then a
//! `const _: () = { .. };` scope holding the arguments' struct and `impl Tool`, so no
//! generated name lands in the user's namespace. The locals of the generated `call`
//! are `Span::mixed_site()`, so they cannot capture or shadow a user's name. Every
//! runtime path goes through `<crate>::__private::v1`.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{FnArg, Ident, ImplItem, ItemFn, ItemImpl, LitStr, Signature};

use super::parse::{Options, Target};
use super::validate::{Form, Param, Tool, camel};

pub(crate) fn expand(tool: &Tool<'_>) -> TokenStream {
    let private = private(tool.krate);
    let krate_text = tool.krate.to_string().replace(' ', "");
    let serde_path = LitStr::new(
        &format!("{krate_text}::__private::v1::serde"),
        Span::call_site(),
    );
    let schemars_path = LitStr::new(
        &format!("{krate_text}::__private::v1::schemars"),
        Span::call_site(),
    );
    let name = &tool.name;
    let description = &tool.description;
    let args_ident = &tool.args;
    let args = Ident::new("args", Span::mixed_site());
    let cx = Ident::new("cx", Span::mixed_site());

    let fields = tool.params.iter().filter_map(|param| match param {
        Param::Argument { ident, ty, attrs } => {
            let has_doc = attrs.iter().any(|a| a.path().is_ident("doc"));
            let default_doc = (!has_doc).then(|| {
                let doc = format!("The `{ident}` argument.");
                quote!(#[doc = #doc])
            });
            Some(quote_spanned! {ident.span()=> #default_doc #(#attrs)* pub #ident: #ty })
        }
        Param::Context(_) => None,
    });
    // The fn's arguments in the order written: a field of the arguments for each
    // argument, the context where it was asked for.
    let call_args = tool.params.iter().map(|param| match param {
        Param::Argument { ident, .. } => {
            let args = Ident::new("args", Span::mixed_site().located_at(ident.span()));
            quote!(#args.#ident)
        }
        Param::Context(span) => {
            // An expression shown at the parameter's type, so that a type that is named
            // `ToolContext` but is not brute's is reported there.
            let private = respan(private.clone(), *span);
            quote_spanned!(*span=> #private::context(#cx))
        }
    });
    let (prefix, call) = match &tool.form {
        Form::Fn { item, tool: ty } => {
            let vis = &item.vis;
            let ident = &item.sig.ident;
            let doc = format!("The `{}` tool: {}", name.value(), description.value());
            let written = written_fn(item);
            let prefix = quote! {
                #written

                #[doc = #doc]
                #[derive(Clone, Copy, Debug, Default)]
                #vis struct #ty;
            };
            (prefix, quote!(#ident(#(#call_args),*)))
        }
        Form::Method { item, method } => {
            let ident = &method.sig.ident;
            (
                written_impl(item),
                quote!(Self::#ident(self, #(#call_args),*)),
            )
        }
    };
    let self_ty = tool_type(&tool.form);
    let parameters = tool.schema.map(|schema| {
        quote_spanned! {schema.span()=>
            fn parameters(&self) -> #private::Value {
                #private::ExactSchema::into_schema(#schema)
            }
        }
    });
    // A result that is not a tool's output is reported at the return type.
    let out_span = match tool.output {
        syn::ReturnType::Type(_, ty) => ty.span(),
        syn::ReturnType::Default => Span::call_site(),
    };
    // The arms' bindings see no user token, so they can carry the return type's span
    // with its hygiene: an error converting them is shown there.
    let value = Ident::new("value", out_span);
    let error = Ident::new("error", out_span);
    let ok = quote_spanned!(out_span=> ::core::convert::Into::into(#value));
    let err = quote_spanned!(out_span=> ::core::convert::Into::into(#error));
    let result = quote_spanned! {out_span=>
        match #call.await {
            ::core::result::Result::Ok(#value) => ::core::result::Result::Ok(#ok),
            ::core::result::Result::Err(#error) => ::core::result::Result::Err(#err),
        }
    };
    let args_doc = format!("Arguments of the `{}` tool.", name.value());

    quote! {
        #prefix

        const _: () = {
            #[doc = #args_doc]
            #[derive(#private::serde::Deserialize, #private::schemars::JsonSchema)]
            #[serde(crate = #serde_path)]
            #[schemars(crate = #schemars_path)]
            pub struct #args_ident {
                #(#fields,)*
            }

            impl #private::Tool for #self_ty {
                type Args = #args_ident;

                fn name(&self) -> &str {
                    #name
                }

                fn description(&self) -> &str {
                    #description
                }

                #parameters

                async fn call(
                    &self,
                    #args: #args_ident,
                    #cx: &#private::ToolContext,
                ) -> ::core::result::Result<#private::ToolOutput, #private::ToolError> {
                    let _ = &#args;
                    let _ = #cx;
                    #result
                }
            }
        };
    }
}

/// What an item with errors expands to beside them: the item as written (so the
/// user's own calls of it still type-check) and, where the tool's type is known, that
/// type with an `impl Tool` that does nothing, so that the code naming the tool (a
/// tool set, `brute_agent!`) gives no follow-on errors.
pub(crate) fn fallback(options: &Options, target: &Target) -> TokenStream {
    let private = private(&options.krate);
    match target {
        Target::Fn(item) => {
            let mut item = item.clone();
            // A receiver outside an impl is an error reported already.
            item.sig.inputs = std::mem::take(&mut item.sig.inputs)
                .into_iter()
                .filter(|input| !matches!(input, FnArg::Receiver(_)))
                .collect();
            let written = written_fn(&item);
            let vis = &item.vis;
            let ty = camel(&item.sig.ident);
            let name = tool_name(options, &item.sig.ident);
            let tool = fallback_impl(options, &private, &quote!(#ty), &name);
            quote! {
                #[allow(dead_code)]
                #written

                #[allow(dead_code)]
                #[derive(Clone, Copy, Debug, Default)]
                #vis struct #ty;

                #tool
            }
        }
        Target::Impl(item) => {
            let written = written_impl(item);
            let inherent = item.trait_.is_none()
                && item.generics.params.is_empty()
                && item.generics.where_clause.is_none();
            let method = item.items.iter().find_map(|member| match member {
                ImplItem::Fn(method) => Some(method),
                _ => None,
            });
            let tool = match method {
                Some(method) if inherent => {
                    let self_ty = &item.self_ty;
                    let name = tool_name(options, &method.sig.ident);
                    fallback_impl(options, &private, &quote!(#self_ty), &name)
                }
                _ => TokenStream::new(),
            };
            quote! {
                #[allow(dead_code)]
                #written

                #tool
            }
        }
        Target::Other(item) => quote!(#item),
        Target::Unparsed(tokens, _) => tokens.clone(),
    }
}

/// An `impl Tool` for a tool with errors. Its `call` is never run: the crate does not
/// compile. The exact schema, if given, is still type-checked, so its error is
/// reported with the others.
fn fallback_impl(
    options: &Options,
    private: &TokenStream,
    self_ty: &TokenStream,
    name: &LitStr,
) -> TokenStream {
    let parameters = options.schema.as_ref().map(|schema| {
        quote_spanned! {schema.span()=>
            fn parameters(&self) -> #private::Value {
                #private::ExactSchema::into_schema(#schema)
            }
        }
    });
    quote! {
        const _: () = {
            impl #private::Tool for #self_ty {
                type Args = #private::Value;

                fn name(&self) -> &str {
                    #name
                }

                fn description(&self) -> &str {
                    ""
                }

                #parameters

                async fn call(
                    &self,
                    _: #private::Value,
                    _: &#private::ToolContext,
                ) -> ::core::result::Result<#private::ToolOutput, #private::ToolError> {
                    ::core::result::Result::Err(::core::convert::From::from(
                        "this tool failed to compile",
                    ))
                }
            }
        };
    }
}

/// `tokens`, every one of them shown at `span`.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tree| {
            if let TokenTree::Group(group) = &tree {
                let mut inner =
                    proc_macro2::Group::new(group.delimiter(), respan(group.stream(), span));
                inner.set_span(span);
                tree = TokenTree::Group(inner);
            } else {
                tree.set_span(span);
            }
            tree
        })
        .collect()
}

/// `<crate>::__private::v1`.
fn private(krate: &TokenStream) -> TokenStream {
    quote!(#krate::__private::v1)
}

/// The name the model calls the tool by.
fn tool_name(options: &Options, ident: &Ident) -> LitStr {
    options.name.clone().unwrap_or_else(|| {
        let text = ident.to_string();
        LitStr::new(text.strip_prefix("r#").unwrap_or(&text), ident.span())
    })
}

/// The type `impl Tool` is for.
fn tool_type(form: &Form<'_>) -> TokenStream {
    match form {
        Form::Fn { tool, .. } => quote!(#tool),
        Form::Method { item, .. } => {
            let self_ty = &item.self_ty;
            quote!(#self_ty)
        }
    }
}

/// The fn as written, minus the attributes on its parameters.
fn written_fn(item: &ItemFn) -> TokenStream {
    let mut item = item.clone();
    clear_param_attrs(&mut item.sig);
    quote!(#item)
}

/// The impl as written, minus the attributes on its methods' parameters.
fn written_impl(item: &ItemImpl) -> TokenStream {
    let mut item = item.clone();
    for member in item.items.iter_mut() {
        if let ImplItem::Fn(method) = member {
            clear_param_attrs(&mut method.sig);
        }
    }
    quote!(#item)
}

/// Parameter attributes (doc comments, `#[serde(..)]`) belong to the arguments'
/// fields; on a fn's parameters rustc would reject them.
fn clear_param_attrs(sig: &mut Signature) {
    for input in sig.inputs.iter_mut() {
        if let FnArg::Typed(typed) = input {
            typed.attrs.clear();
        }
    }
}
