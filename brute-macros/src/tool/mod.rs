//! `#[tool]`: turns an async fn into a tool. [`parse`] reads the attribute and the
//! item, [`validate`] checks the item into a [`Tool`](validate::Tool), [`expand`]
//! writes it out.
//!
//! ```text
//! /// Adds two numbers.                    // the description
//! #[tool]                                  // or #[tool(name = "..", description = "..", schema = expr, crate = path)]
//! async fn add(
//!     /// The first number.                // becomes the field's schema description
//!     a: i64,
//!     b: i64,
//!     cx: &ToolContext,                    // optional: recognised by its type
//! ) -> Result<impl Into<ToolOutput>, impl Into<ToolError>> { .. }
//! ```
//!
//! expands to the fn as written (minus its parameters' attributes), `struct Add;`, and
//! in a `const _` scope `struct AddArgs { a: i64, b: i64 }` deriving `Deserialize` and
//! `JsonSchema` with `impl Tool for Add`, whose `call` calls `add(args.a, args.b, cx)`.
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
//! keeps the impl as written and adds, in a `const _` scope, the arguments' struct and
//! `impl Tool for Counter`, whose `call` calls `self.count(args.by)`. In both forms
//! `#[tool(schema = expr)]` advertises `expr` (a `serde_json::Value`) as the exact
//! schema instead of the one derived from the arguments.
//!
//! On errors, every error found is reported, beside [`expand::fallback`]: the item as
//! written and the tool's type with a placeholder `impl Tool`, so that one mistake
//! gives one error and not a cascade where the tool is used.

mod expand;
mod parse;
mod validate;

use proc_macro2::TokenStream;

use crate::errors::Errors;

pub(crate) fn expand(args: TokenStream, input: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let options = parse::options(args, &mut errors);
    let target = parse::target(input);
    let tool = validate::validate(&options, &target, &mut errors);
    match (errors.into_error(), tool) {
        (None, Some(tool)) => expand::expand(&tool),
        (err, _) => {
            let mut tokens = err.map(|e| e.to_compile_error()).unwrap_or_default();
            tokens.extend(expand::fallback(&options, &target));
            tokens
        }
    }
}
