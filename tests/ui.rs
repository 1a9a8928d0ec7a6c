//! Compile-time behaviour of the macros, one folder per macro: `tests/ui/agent`
//! (`brute_agent!` and `pipeline!`: syntax, options, placement rules), `tests/ui/derive`
//! (`#[derive(Middleware)]`) and `tests/ui/tool` (`#[tool]`). Every misuse is a
//! readable, spanned compile error (`fail/*.rs` with its `.stderr`), and the `pass`
//! cases compile and run.
//!
//! Speed: one `TestCases` for every compile-fail case, so trybuild builds the
//! dependencies once and checks all cases in one cargo invocation. The pass cases are
//! not given to trybuild but compiled into this test binary (below): with no pass case,
//! trybuild only type-checks (`cargo check`) instead of building and linking brute and
//! every case.
//!
//! Regenerate the `.stderr` files with `TRYBUILD=overwrite cargo test --test ui` only
//! when a message was meant to change, and read the diff.

#[test]
fn compile_fail() {
    let t = trybuild::TestCases::new();
    for area in ["agent", "derive", "tool"] {
        // A folder with no cases is an empty glob, which trybuild accepts.
        t.compile_fail(format!("tests/ui/{area}/fail/*.rs"));
    }
}

/// Each pass case as a module of this binary, with a test that runs its `main`.
macro_rules! pass {
    ($($name:ident => $path:literal,)*) => {$(
        mod $name {
            include!($path);

            #[test]
            fn compiles_and_runs() {
                main();
            }
        }
    )*};
}

pass! {
    agent_async_closures => "ui/agent/pass/async_closures.rs",
    agent_six_layers => "ui/agent/pass/six_layers.rs",
    agent_sixty_four_layers => "ui/agent/pass/sixty_four_layers.rs",
    derive_default_type => "ui/derive/pass/default_type.rs",
    derive_user_middleware_rules => "ui/derive/pass/user_middleware_rules.rs",
    tool_call_as_written => "ui/tool/pass/call_as_written.rs",
    tool_method_with_state => "ui/tool/pass/method_with_state.rs",
    tool_stages_in_order => "ui/tool/pass/stages_in_order.rs",
}
