//! Compile-time behaviour of `brute_agent!`, `#[derive(Middleware)]` and `#[tool]`:
//! every ordering rule, every misuse of the derives and every syntax error is a
//! readable, spanned compile error (`tests/ui/fail/*.stderr`, `tests/ui/tool/fail/*.stderr`),
//! and the pass cases compile and run.
//!
//! One `TestCases` for all of them, so the test crate and its dependencies are built
//! once. Regenerate the `.stderr` files with `TRYBUILD=overwrite cargo test --test ui`
//! only when a message was meant to change, and read the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.compile_fail("tests/ui/tool/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
    t.pass("tests/ui/tool/pass/*.rs");
}
