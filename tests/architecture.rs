//! The shape of `brute/src`, checked: what the architecture issue asked to stay true.
//!
//! - no file is longer than 600 lines;
//! - the core modules import no feature module;
//! - no import cycle among sibling modules, at any level of the module tree (a parent
//!   and its children may use each other: `mod.rs` re-exports, `super::` reaches back);
//! - the crate root exports at most 25 names, not counting modules and the prelude;
//! - no run of six lines (blank lines and `use` lines aside) is repeated between the
//!   two providers.
//!
//! Imports are read from the source: every `crate::`, `super::` and `self::` path
//! outside comments, string literals and `#[cfg(test)]` code, including the paths of
//! `use` groups. `$crate::` paths are macro output, written into the user's crate,
//! and are not imports of the module that defines the macro.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/brute/src");

/// The core floors of `ARCHITECTURE.md`: they may not reach up into the features.
const CORE: &[&str] = &[
    "message", "stop", "usage", "tool", "trace", "event", "error", "kind", "stack", "env",
    "handler", "model", "agent", "stream",
];
/// The rooms built on the core.
const FEATURES: &[&str] = &[
    "middleware",
    "session",
    "tools",
    "compaction",
    "providers",
    "structured",
    "scripted",
];

/// A module path below the crate root: `["tools", "pipeline", "stages"]`.
type ModPath = Vec<String>;

/// Every `.rs` file under `brute/src` with its module path and its text.
fn sources() -> Vec<(PathBuf, ModPath, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(Path::new(SRC), &mut files);
    files.sort();
    assert!(
        files.len() > 50,
        "found only {} files under {SRC}",
        files.len()
    );
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let module = module_path(&path);
            (path, module, text)
        })
        .collect()
}

fn module_path(file: &Path) -> ModPath {
    let relative = file.strip_prefix(SRC).expect("a file under brute/src");
    let mut parts: ModPath = relative
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// `text` without comments, with every string literal emptied, and without its
/// `#[cfg(test)] mod .. { .. }` modules.
fn code_only(text: &str) -> String {
    without_test_modules(&without_comments_and_strings(text))
}

/// `code` (comments and strings already out, so braces are code) without each
/// `#[cfg(test)]` that is followed, past other attributes, by `mod name {`, up to that
/// module's closing brace. Other `#[cfg(test)]` items stay: they are code.
fn without_test_modules(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        let after = &rest[at + "#[cfg(test)]".len()..];
        let mut item = after.trim_start();
        while item.starts_with("#[") {
            item = item
                .find(']')
                .map_or("", |end| item[end + 1..].trim_start());
        }
        let module = item
            .strip_prefix("mod ")
            .and_then(|m| {
                m.find('{')
                    .filter(|open| m[..*open].trim().bytes().all(is_ident))
            })
            .map(|open| code.len() - item.len() + "mod ".len() + open);
        let Some(open) = module else {
            out.push_str(&rest[..at + "#[cfg(test)]".len()]);
            rest = after;
            continue;
        };
        out.push_str(&rest[..at]);
        let mut depth = 0usize;
        let mut end = code.len();
        for (i, c) in code[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &code[end..];
    }
    out.push_str(rest);
    out
}

/// `text` without comments and with every string and character literal emptied.
fn without_comments_and_strings(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1)) {
            (b'/', Some(b'/')) => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            (b'/', Some(b'*')) => {
                i += 2;
                while i + 1 < bytes.len() && !(bytes[i] == b'*' && bytes[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            // A raw string, `r"..."` or `r#"..."#` (`br` too): it ends at the quote
            // followed by as many `#` as it began with.
            (b'r', Some(b'"' | b'#'))
                if i == 0 || !is_ident(bytes[i - 1]) || bytes[i - 1] == b'b' =>
            {
                let hashes = bytes[i + 1..].iter().take_while(|b| **b == b'#').count();
                if bytes.get(i + 1 + hashes) != Some(&b'"') {
                    out.push('r');
                    i += 1;
                    continue;
                }
                let mut end = "\"".to_string();
                end.push_str(&"#".repeat(hashes));
                let body = i + 2 + hashes;
                i = text[body..]
                    .find(&end)
                    .map_or(bytes.len(), |at| body + at + end.len());
                out.push_str("\"\"");
            }
            (b'"', _) => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
            }
            // A character literal such as '"' or '{' (not a lifetime such as 'a).
            (b'\'', _) if bytes.get(i + 2) == Some(&b'\'') => {
                i += 3;
                out.push_str("' '");
            }
            (b'\'', Some(b'\\')) => {
                i += 2;
                while i < bytes.len() && bytes[i] != b'\'' {
                    i += 1;
                }
                i += 1;
                out.push_str("' '");
            }
            (byte, _) => {
                out.push(byte as char);
                i += 1;
            }
        }
    }
    out
}

fn is_ident(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// The paths `code` names from `module`, made absolute: `crate::a::b`, `super::c`,
/// `self::d`, and each path of a `{..}` group after them.
fn named_paths(module: &[String], code: &str) -> Vec<ModPath> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    for start in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(found) = code[from..].find(start) {
            let at = from + found;
            from = at + start.len();
            let before = at.checked_sub(1).map(|i| bytes[i]);
            if before.is_some_and(|b| is_ident(b) || b == b'$' || b == b':') {
                continue;
            }
            // A file `a/b.rs` is module `a::b`, and so is `a/b/mod.rs`: `self` is
            // `a::b` and `super` is `a` for both.
            let mut base: ModPath = match start {
                "crate::" => Vec::new(),
                "self::" => module.to_vec(),
                _ => module[..module.len().saturating_sub(1)].to_vec(),
            };
            let mut rest = &code[from..];
            while let Some(after) = rest.strip_prefix("super::") {
                base.pop();
                rest = after;
            }
            parse_tree(base, rest, &mut out);
        }
    }
    out
}

/// Reads one use tree (`a::b::C`, `a::{b, c::D}`) at the start of `text`, after
/// `prefix`, and pushes the path of every leaf.
fn parse_tree(mut prefix: ModPath, text: &str, out: &mut Vec<ModPath>) {
    let mut text = text.trim_start();
    loop {
        if let Some(group) = text.strip_prefix('{') {
            for item in split_group(group) {
                parse_tree(prefix.clone(), item, out);
            }
            return;
        }
        let len = text.bytes().take_while(|b| is_ident(*b)).count();
        if len == 0 {
            out.push(prefix);
            return;
        }
        prefix.push(text[..len].to_string());
        text = text[len..].trim_start();
        match text.strip_prefix("::") {
            Some(after) => text = after.trim_start(),
            None => {
                out.push(prefix);
                return;
            }
        }
    }
}

/// The top-level items of a `{..}` group, `group` starting after its `{`.
fn split_group(group: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[start..i]);
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.into_iter().filter(|s| !s.trim().is_empty()).collect()
}

/// Module → the modules it names (the longest module prefix of each named path).
fn import_graph() -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let sources = sources();
    let modules: BTreeSet<ModPath> = sources.iter().map(|(_, m, _)| m.clone()).collect();
    let mut graph = BTreeMap::new();
    for (_, module, text) in &sources {
        let mut targets = BTreeSet::new();
        for named in named_paths(module, &code_only(text)) {
            let target = (0..=named.len())
                .rev()
                .map(|n| named[..n].to_vec())
                .find(|prefix| modules.contains(prefix))
                .unwrap_or_default();
            if target != *module {
                targets.insert(target);
            }
        }
        graph.insert(module.clone(), targets);
    }
    graph
}

#[test]
fn no_file_under_brute_src_is_longer_than_600_lines() {
    let long: Vec<String> = sources()
        .iter()
        .map(|(path, _, text)| (path, text.lines().count()))
        .filter(|(_, lines)| *lines > 600)
        .map(|(path, lines)| format!("{}: {lines} lines", path.display()))
        .collect();
    assert!(
        long.is_empty(),
        "files longer than 600 lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_core_imports_no_feature_module() {
    let graph = import_graph();
    let mut wrong = Vec::new();
    for (module, targets) in &graph {
        if !module
            .first()
            .is_some_and(|top| CORE.contains(&top.as_str()))
        {
            continue;
        }
        for target in targets {
            if target
                .first()
                .is_some_and(|top| FEATURES.contains(&top.as_str()))
            {
                wrong.push(format!(
                    "{} imports {}",
                    module.join("::"),
                    target.join("::")
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "core modules reach into features:\n{}",
        wrong.join("\n")
    );
    // The check sees imports at all: the core does import the core.
    assert!(graph[&vec!["agent".to_string()]].contains(&vec!["env".to_string()]));
}

#[test]
fn no_import_cycle_among_sibling_modules() {
    // An edge between two modules is an edge between the children of their lowest
    // common ancestor that hold them; a module and its own ancestor are not siblings.
    let mut siblings: BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (from, targets) in import_graph() {
        for to in targets {
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common == from.len() || common == to.len() {
                continue;
            }
            siblings
                .entry(from[..common].to_vec())
                .or_default()
                .entry(from[common].clone())
                .or_default()
                .insert(to[common].clone());
        }
    }
    let mut cycles = Vec::new();
    for (parent, edges) in &siblings {
        for start in edges.keys() {
            if let Some(path) = path_back(edges, start) {
                let place = if parent.is_empty() {
                    "crate".to_string()
                } else {
                    parent.join("::")
                };
                cycles.push(format!("in {place}: {}", path.join(" -> ")));
            }
        }
    }
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
    assert!(
        !siblings.is_empty(),
        "the check found no imports between siblings at all"
    );
}

/// A path of imports from `start` back to `start`, if there is one.
fn path_back(edges: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    let mut stack = vec![vec![start.to_string()]];
    let mut seen = BTreeSet::new();
    while let Some(path) = stack.pop() {
        let last = path.last().expect("a path is never empty");
        for next in edges.get(last).into_iter().flatten() {
            if next == start {
                let mut cycle = path.clone();
                cycle.push(next.clone());
                return Some(cycle);
            }
            if seen.insert(next.clone()) {
                let mut longer = path.clone();
                longer.push(next.clone());
                stack.push(longer);
            }
        }
    }
    None
}

#[test]
fn the_import_reader_sees_groups_supers_and_test_helpers_not_strings_macros_or_tests() {
    let module: ModPath = vec!["tools".into(), "pipeline".into()];
    let code = r##"use crate::{env::Env, message::{Message, part::Part}};
        use super::set::ToolSet;
        impl $crate::__private::v1::Kind for X {}
        let s = "crate::providers::X";
        let r = r#"an odd " quote, crate::session::X"#; let q = '"';
        let t = crate::stop::ExitReason::Completed;
        #[cfg(test)]
        fn helper() {}
        let u = crate::usage::Usage::default();
        #[cfg(test)]
        #[allow(clippy::unwrap_used)]
        mod tests { use crate::providers::Z; fn f() { if true {} } }
        let v = crate::kind::Loop;"##;
    let found: BTreeSet<String> = named_paths(&module, &code_only(code))
        .into_iter()
        .map(|p| p.join("::"))
        .collect();
    let expected: BTreeSet<String> = [
        "env::Env",
        "message::Message",
        "message::part::Part",
        "tools::set::ToolSet",
        "stop::ExitReason::Completed",
        "usage::Usage::default",
        "kind::Loop",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(found, expected);
}

#[test]
fn the_root_exports_at_most_25_names() {
    let sources = sources();
    let lib = sources
        .iter()
        .find(|(_, module, _)| module.is_empty())
        .map(|(_, _, text)| code_only(text))
        .expect("brute/src/lib.rs");
    let mut names = BTreeSet::new();
    for statement in lib.split(';') {
        let Some(at) = statement.find("pub use ") else {
            continue;
        };
        let mut paths = Vec::new();
        parse_tree(Vec::new(), &statement[at + "pub use ".len()..], &mut paths);
        for path in paths {
            if let Some(name) = path.last() {
                names.insert(name.clone());
            }
        }
    }
    // `#[macro_export]` macros are exported at the root, wherever they are defined.
    for (_, _, text) in &sources {
        let code = code_only(text);
        for (at, _) in code.match_indices("#[macro_export]") {
            let after = &code[at..];
            if let Some(rule) = after.find("macro_rules!") {
                let name: String = after[rule + "macro_rules!".len()..]
                    .trim_start()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.starts_with("__") {
                    names.insert(name);
                }
            }
        }
    }
    assert!(
        names.contains("Agent") && names.contains("brute_agent"),
        "{names:?}"
    );
    assert!(
        names.len() <= 25,
        "the root exports {} names: {names:?}",
        names.len()
    );
}

#[test]
fn no_run_of_six_lines_is_repeated_between_the_providers() {
    /// The provider's lines, trimmed, without blank and `use` lines, with their place.
    fn lines(provider: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (path, module, text) in sources() {
            if module.len() < 2 || module[0] != "providers" || module[1] != provider {
                continue;
            }
            for (n, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with("use ") || line.starts_with("pub use ") {
                    continue;
                }
                out.push((line.to_string(), format!("{}:{}", path.display(), n + 1)));
            }
        }
        out
    }
    const RUN: usize = 6;
    let openai = lines("openai");
    let anthropic = lines("anthropic");
    assert!(
        openai.len() > 500 && anthropic.len() > 500,
        "the providers were not found"
    );
    let runs: BTreeMap<Vec<&str>, &str> = openai
        .windows(RUN)
        .map(|w| (w.iter().map(|(l, _)| l.as_str()).collect(), w[0].1.as_str()))
        .collect();
    let repeated: Vec<String> = anthropic
        .windows(RUN)
        .filter_map(|w| {
            let key: Vec<&str> = w.iter().map(|(l, _)| l.as_str()).collect();
            runs.get(&key)
                .map(|at| format!("{at} and {}:\n  {}", w[0].1, key.join("\n  ")))
        })
        .collect();
    assert!(
        repeated.is_empty(),
        "repeated runs:\n{}",
        repeated.join("\n")
    );
}
