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

/// The compiler output a user sees names no internals: no `.stderr` under `tests/ui`
/// mentions the macros' private path, a generated helper, a closure's internal name,
/// the placement check's helper, a provider's generic type, a fallback of the checks
/// (`NotA..`), an item of an anonymous `const _` (`_::`), rustc's frame of a `const`
/// evaluation, or the types a stack is built of (`Terminal<..>`, `Watch<..>`, an unset
/// option's `MissingOption`); and at least a third of the compile-fail
/// cases build their stack inside an `async fn`, as real programs do (rustc names
/// items there by their closure, so the internal names show there first).
#[test]
fn no_stderr_names_internals() {
    /// Whether an `async fn` that is not a `#[tool]` contains `brute_agent!` or
    /// `pipeline!` (counted by line: the case's functions are small).
    fn builds_stack_in_async_fn(source: &str) -> bool {
        let mut after_tool_attribute = false;
        let mut in_async = false;
        for line in source.lines().map(str::trim) {
            if line.starts_with("#[tool") {
                after_tool_attribute = true;
            } else if line.starts_with("async fn") || line.starts_with("pub async fn") {
                in_async = !after_tool_attribute;
                after_tool_attribute = false;
            } else if line.starts_with("fn ") || line.starts_with("pub fn ") {
                in_async = false;
                after_tool_attribute = false;
            } else if in_async && (line.contains("brute_agent!") || line.contains("pipeline!")) {
                return true;
            }
        }
        false
    }

    const NEEDLES: [&str; 16] = [
        "__private",
        "__brute",
        "{closure#",
        "E0080",
        "evaluation panicked",
        "placement_of",
        "HttpModel<",
        "Codec>",
        "NotA",
        "_::",
        // The stack's own types: the terminal `run` builds, the check between layers,
        // the boxing boundary, the value of an unset option, the checked `use` line.
        // (`run async move |env| ..` still shows `terminal_async`'s bound: not yet.)
        "`Terminal<",
        "<Terminal<",
        "Watch<",
        "Erased<",
        "MissingOption",
        "UseLine",
    ];
    fn visit(
        dir: &std::path::Path,
        found: &mut Vec<String>,
        files: &mut usize,
        in_async: &mut usize,
    ) {
        for entry in std::fs::read_dir(dir).expect("tests/ui is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                visit(&path, found, files, in_async);
            } else if path.extension().is_some_and(|e| e == "stderr") {
                *files += 1;
                let text = std::fs::read_to_string(&path).expect("a .stderr file is text");
                for needle in NEEDLES {
                    if text.contains(needle) {
                        found.push(format!("{} contains `{needle}`", path.display()));
                    }
                }
                let source = std::fs::read_to_string(path.with_extension("rs"))
                    .expect("each .stderr has its .rs case");
                if builds_stack_in_async_fn(&source) {
                    *in_async += 1;
                }
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui");
    let (mut found, mut files, mut in_async) = (Vec::new(), 0, 0);
    visit(&root, &mut found, &mut files, &mut in_async);
    assert!(files > 0, "no .stderr file under {}", root.display());
    assert!(found.is_empty(), "{}", found.join("\n"));
    assert!(
        in_async * 3 >= files,
        "{in_async} of {files} compile-fail cases build their stack inside an `async fn`; at least a third should"
    );
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
    agent_hand_written_middleware => "ui/agent/pass/hand_written_middleware.rs",
    agent_six_layers => "ui/agent/pass/six_layers.rs",
    agent_sixty_four_layers => "ui/agent/pass/sixty_four_layers.rs",
    derive_default_type => "ui/derive/pass/default_type.rs",
    derive_user_middleware_rules => "ui/derive/pass/user_middleware_rules.rs",
    tool_call_as_written => "ui/tool/pass/call_as_written.rs",
    tool_method_with_state => "ui/tool/pass/method_with_state.rs",
    tool_stages_in_order => "ui/tool/pass/stages_in_order.rs",
}
