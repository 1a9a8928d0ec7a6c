//! brute keeps no process-global mutable state and does not probe the runtime by
//! catching panics: every `static` in `brute/src` holds plain data, and
//! `catch_unwind` appears only where it guards code that is not brute's (a tool call, a
//! session writer's job), as many times as those guards need.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

/// Types and macros that make a `static` (or a thread-local) mutable behind a shared
/// reference.
const INTERIOR: &[&str] = &[
    "Mutex",
    "RwLock",
    "OnceLock",
    "OnceCell",
    "LazyLock",
    "LazyCell",
    "Lazy<",
    "Atomic",
    "Cell<",
    "UnsafeCell",
    "Condvar",
];

/// The files allowed to call `catch_unwind`, how many times, and why.
const PANIC_GUARDS: &[(&str, usize, &str)] = &[
    (
        "tools/pipeline/mod.rs",
        1,
        "the guard around one tool call: a panicking tool is an error result",
    ),
    (
        "session/jsonl/pool.rs",
        2,
        "the guards around a writer thread's job and its finish",
    ),
];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code lines of `text`: comments (line and doc comments) left out.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, line)| (i + 1, line.split("//").next().unwrap_or("")))
}

/// Whether `line` declares a `static` item (not a `'static` lifetime).
fn declares_static(line: &str) -> bool {
    let words: Vec<&str> = line
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '\''))
        .filter(|w| !w.is_empty())
        .collect();
    words.contains(&"static")
}

/// The `static` items (their declaration up to `=` or `;`) and thread-locals of
/// `text` that hold interior mutability, as `line: text`.
fn mutable_statics(text: &str) -> Vec<String> {
    let lines: Vec<(usize, &str)> = code_lines(text).collect();
    let mut found = Vec::new();
    for (at, (number, line)) in lines.iter().enumerate() {
        if line.contains("thread_local!") {
            found.push(format!("{number}: {}", line.trim()));
            continue;
        }
        if !declares_static(line) {
            continue;
        }
        // The declaration may span lines: read on to its `=` or `;`.
        let mut declaration = String::new();
        for (_, next) in &lines[at..] {
            declaration.push_str(next);
            if next.contains('=') || next.contains(';') {
                break;
            }
        }
        let declaration = declaration.split('=').next().unwrap_or("");
        if INTERIOR.iter().any(|kind| declaration.contains(kind)) {
            found.push(format!("{number}: {}", line.trim()));
        }
    }
    found
}

fn brute_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("brute/src")
}

#[test]
fn no_static_in_brute_holds_interior_mutability() {
    let root = brute_src();
    let mut files = Vec::new();
    sources(&root, &mut files);
    assert!(files.len() > 50, "found only {} sources", files.len());
    let mut offenders = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for hit in mutable_statics(&text) {
            offenders.push(format!(
                "{}:{hit}",
                file.strip_prefix(&root).unwrap().display()
            ));
        }
    }
    assert!(
        offenders.is_empty(),
        "process-global mutable state in brute/src (pass it as data instead):\n{}",
        offenders.join("\n")
    );
}

#[test]
fn catch_unwind_only_guards_code_that_is_not_brutes() {
    let root = brute_src();
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut problems = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let calls = code_lines(&text)
            .filter(|(_, line)| {
                // A call, not the import of the name.
                line.contains("catch_unwind(") || line.contains(".catch_unwind()")
            })
            .count();
        let allowed = PANIC_GUARDS
            .iter()
            .find(|(guarded, _, _)| *guarded == name)
            .map_or(0, |(_, n, _)| *n);
        if calls > allowed {
            problems.push(format!(
                "{name}: {calls} calls of catch_unwind, {allowed} allowed"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "catch_unwind beyond the panic guards (a runtime probe?):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_scanner_sees_what_it_must() {
    let global = "static HIDDEN: RwLock<Vec<(String, String)>> = RwLock::new(Vec::new());";
    assert_eq!(mutable_statics(global).len(), 1);
    let split = "static CONFIG:\n    OnceLock<Option<u8>> =\n    OnceLock::new();";
    assert_eq!(mutable_statics(split).len(), 1);
    let counter = "    static NEXT: AtomicU64 = AtomicU64::new(1);";
    assert_eq!(mutable_statics(counter).len(), 1);
    let local = "thread_local! { static X: Cell<u8> = const { Cell::new(0) }; }";
    assert_eq!(mutable_statics(local).len(), 1);
    // Plain data, lifetimes and comments are not state.
    let plain = "static NAMES: &[&str] = &[\"Mutex\"];\nfn f() -> &'static str { \"x\" }\n// static A: Mutex<u8>";
    assert!(
        mutable_statics(plain).is_empty(),
        "{:?}",
        mutable_statics(plain)
    );
}
