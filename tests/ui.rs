//! Compile-time behaviour of `brute_agent!` and `#[derive(Middleware)]`: every ordering
//! rule, every misuse of the derive and every syntax error is a readable, spanned
//! compile error (`tests/ui/fail/*.stderr`), and the pass cases compile and run.
//!
//! Regenerate the `.stderr` files with `TRYBUILD=overwrite cargo test --test ui` only
//! when a message was meant to change, and read the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
