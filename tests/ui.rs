//! Compile-time behaviour of the macros, one folder per macro: `tests/ui/agent`
//! (`brute_agent!` and `pipeline!`: syntax, options, placement rules), `tests/ui/derive`
//! (`#[derive(Middleware)]`) and `tests/ui/tool` (`#[tool]`). Every misuse is a
//! readable, spanned compile error (`fail/*.rs` with its `.stderr`), and the `pass`
//! cases compile and run.
//!
//! One `TestCases` for all of them: trybuild builds the test crate and its dependencies
//! once and checks every case in one cargo invocation. Regenerate the `.stderr` files
//! with `TRYBUILD=overwrite cargo test --test ui` only when a message was meant to
//! change, and read the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    for area in ["agent", "derive", "tool"] {
        // A folder with no cases is an empty glob, which trybuild accepts.
        t.compile_fail(format!("tests/ui/{area}/fail/*.rs"));
        t.pass(format!("tests/ui/{area}/pass/*.rs"));
    }
    // `#[tool]`'s cases until they move to `tests/ui/tool`.
    t.compile_fail("tests/tools_ui/*.rs");
}
