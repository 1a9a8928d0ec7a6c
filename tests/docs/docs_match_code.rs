//! The documents that describe the code, held to it: what `README.md`,
//! `ARCHITECTURE.md` and `BENCHMARKS.md` say about features, providers, modules, files,
//! counts and commands is read from the code here, so a change that makes one of them
//! wrong fails a test instead of waiting for a reader to notice.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn read(path: &str) -> String {
    let full = Path::new(ROOT).join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// The lines of `text` from the first one containing `start` to the first blank line
/// after it.
fn paragraph<'a>(text: &'a str, start: &str) -> Vec<&'a str> {
    let lines: Vec<&str> = text.lines().collect();
    let first = lines
        .iter()
        .position(|l| l.contains(start))
        .unwrap_or_else(|| panic!("no line containing {start:?}"));
    lines[first..]
        .iter()
        .take_while(|l| !l.trim().is_empty())
        .copied()
        .collect()
}

/// The words written in backticks in `text`.
fn ticked(text: &str) -> BTreeSet<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// The keys of a TOML table `[name]` written one `key = ..` per line.
fn toml_keys(toml: &str, table: &str) -> Vec<String> {
    let mut inside = false;
    let mut keys = Vec::new();
    for line in toml.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == format!("[{table}]");
            continue;
        }
        if inside
            && let Some((key, _)) = line.split_once('=')
            && !line.starts_with('#')
            && !key.trim().starts_with('"')
        {
            keys.push(key.trim().to_string());
        }
    }
    keys
}

#[test]
fn the_readme_names_every_cargo_feature_of_brute() {
    let readme = read("README.md");
    let listed = paragraph(&readme, "Cargo features of `brute`").join(" ");
    let listed = ticked(&listed);
    let missing: Vec<String> = toml_keys(&read("brute/Cargo.toml"), "features")
        .into_iter()
        .filter(|f| f != "default" && !listed.contains(f.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "brute has features the README's \"Cargo features of `brute`\" paragraph does not name: {missing:?}"
    );
}

/// brute's providers (a folder of `brute/src/providers` with a `Codec`) and the words
/// the README's "What ships" names each by.
const PROVIDERS: &[(&str, &str)] = &[
    ("openai", "Chat Completions"),
    ("anthropic", "Anthropic Messages"),
    ("responses", "Responses"),
    ("gemini", "Gemini"),
];

#[test]
fn the_readme_names_every_provider() {
    let readme = read("README.md");
    let shipped = paragraph(&readme, "- **Providers**").join(" ");
    let dir = Path::new(ROOT).join("brute/src/providers");
    let mut unnamed = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("brute/src/providers") {
        let path = entry.expect("a directory entry").path();
        if !path.join("codec.rs").is_file() {
            continue;
        }
        let module = path
            .file_name()
            .and_then(|n| n.to_str())
            .expect("a UTF-8 name");
        match PROVIDERS.iter().find(|(m, _)| *m == module) {
            Some((_, words)) if shipped.contains(words) => {}
            Some((_, words)) => unnamed.push(format!("{module} (as {words:?})")),
            None => unnamed.push(format!(
                "{module} (a new provider: add it to the README and to PROVIDERS here)"
            )),
        }
    }
    assert!(
        unnamed.is_empty(),
        "the README's \"- **Providers**\" line does not name: {unnamed:?}"
    );
}

/// The lines of the reviewed list of public items (`cargo xtask public-items --bless`).
fn public_items() -> Vec<String> {
    read("xtask/public-items.txt")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// The first number written after `before` in `text`.
fn number_after(text: &str, before: &str) -> usize {
    let at = text
        .find(before)
        .unwrap_or_else(|| panic!("no {before:?} in the document"));
    text[at + before.len()..]
        .trim_start()
        .split(|c: char| !c.is_ascii_digit() && c != ',')
        .next()
        .and_then(|n| n.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("no number after {before:?}"))
}

#[test]
fn the_readme_counts_the_preludes_names() {
    let names: BTreeSet<String> = public_items()
        .iter()
        .filter_map(|line| {
            line.split_whitespace()
                .nth(1)?
                .strip_prefix("brute::prelude::")
        })
        .filter(|rest| !rest.contains("::"))
        .map(str::to_string)
        .collect();
    let said = number_after(&read("README.md"), "`use brute::prelude::*` brings");
    assert_eq!(
        said,
        names.len(),
        "the README says the prelude brings {said} names; it brings {names:?}"
    );
}

#[test]
fn architecture_states_the_reviewed_number_of_public_items() {
    let said = number_after(&read("ARCHITECTURE.md"), "brute has **");
    let listed = public_items().len();
    assert_eq!(
        said, listed,
        "ARCHITECTURE.md says brute has {said} public items; xtask/public-items.txt lists {listed}"
    );
}

/// The folders a file named in the docs may be relative to.
const BASES: &[&str] = &[
    "",
    "brute/src/",
    "brute-serve/src/",
    "brute-mcp/src/",
    "brute-eval/src/",
    "brute-macros/src/",
];

/// `a/{b,c}/d` as `a/b/d` and `a/c/d`.
fn expand(path: &str) -> Vec<String> {
    match (path.find('{'), path.find('}')) {
        (Some(open), Some(close)) if open < close => path[open + 1..close]
            .split(',')
            .flat_map(|alt| expand(&format!("{}{alt}{}", &path[..open], &path[close + 1..])))
            .collect(),
        _ => vec![path.to_string()],
    }
}

/// The names in backticks of `doc` that are source files or folders (`x.rs`,
/// `room/`, `room/x.rs`), without a trailing `:line`.
fn file_names(doc: &str) -> Vec<&str> {
    ticked(doc)
        .into_iter()
        .filter(|t| !t.contains(' ') && !t.contains("::") && !t.starts_with('.'))
        .filter(|t| {
            t.ends_with(".rs")
                || t.ends_with(".md")
                || (t.ends_with('/')
                    && t.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "/_-{},.".contains(c)))
        })
        .collect()
}

fn exists(name: &str) -> bool {
    expand(name).iter().all(|one| {
        BASES
            .iter()
            .any(|base| Path::new(ROOT).join(base).join(one).exists())
    })
}

#[test]
fn every_file_and_folder_architecture_names_exists() {
    let doc = read("ARCHITECTURE.md");
    let gone: Vec<&str> = file_names(&doc)
        .into_iter()
        .filter(|n| !exists(n))
        .collect();
    assert!(
        gone.is_empty(),
        "ARCHITECTURE.md names files or folders that do not exist: {gone:?}"
    );
}

#[test]
fn architecture_maps_every_room_of_brute_and_every_crate() {
    let doc = read("ARCHITECTURE.md");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(Path::new(ROOT).join("brute/src")).expect("brute/src") {
        let path: PathBuf = entry.expect("an entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).expect("UTF-8");
        let shown = if path.is_dir() {
            format!("{name}/")
        } else {
            name.to_string()
        };
        // A room is named as `room/` or `room.rs`, in the floors or in the file map.
        let stem = name.trim_end_matches(".rs");
        let mentioned = doc.contains(&format!("{stem}/")) || doc.contains(&format!("{stem}.rs"));
        if !mentioned && !matches!(name, "__private.rs") {
            missing.push(shown);
        }
    }
    for krate in toml_members(&read("Cargo.toml")) {
        if krate.starts_with("brute") && !doc.contains(&format!("`{krate}`")) {
            missing.push(format!("the crate `{krate}`"));
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md does not place: {missing:?}"
    );
}

/// The library crates of the workspace's `members` (xtask aside).
fn toml_members(toml: &str) -> Vec<String> {
    let start = toml.find("members").expect("a workspace `members` list");
    let list = &toml[start..];
    let list = &list[list.find('[').expect("[")..list.find(']').expect("]")];
    list.split('"')
        .skip(1)
        .step_by(2)
        .filter(|m| *m != "xtask")
        .map(str::to_string)
        .collect()
}

#[test]
fn benchmarks_run_every_bench_and_only_benches_that_exist() {
    let doc = read("BENCHMARKS.md");
    let root = read("Cargo.toml");
    let manifests: Vec<String> = std::iter::once(root.clone())
        .chain(
            toml_members(&root)
                .iter()
                .map(|member| read(&format!("{member}/Cargo.toml"))),
        )
        .collect();
    let targets: BTreeSet<&str> = manifests
        .iter()
        .flat_map(|manifest| manifest.split("[[bench]]").skip(1))
        .filter_map(|table| {
            let line = table.lines().find(|l| l.trim_start().starts_with("name"))?;
            line.split('"').nth(1)
        })
        .collect();
    let named: BTreeSet<&str> = doc
        .split("--bench ")
        .skip(1)
        .filter_map(|rest| {
            rest.split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                .next()
        })
        .collect();
    let unknown: Vec<_> = named.difference(&targets).collect();
    let unnamed: Vec<_> = targets.difference(&named).collect();
    assert!(
        unknown.is_empty() && unnamed.is_empty(),
        "BENCHMARKS.md runs benches that do not exist: {unknown:?}; bench targets it never runs: {unnamed:?}"
    );
}

#[test]
fn benchmarks_is_the_current_state_in_at_most_300_lines() {
    let lines = read("BENCHMARKS.md").lines().count();
    assert!(
        lines <= 300,
        "BENCHMARKS.md has {lines} lines: it holds the current state only (history is in git and CHANGELOG.md)"
    );
}

#[test]
fn the_readers_helpers_read_what_they_should() {
    assert_eq!(
        expand("tests/ui/{agent,derive}/"),
        ["tests/ui/agent/", "tests/ui/derive/"]
    );
    assert_eq!(
        file_names("see `brute/src/kind.rs`, `session/`, `Env::take`, `a b.rs` and `x`"),
        ["brute/src/kind.rs", "session/"]
    );
    assert_eq!(number_after("we have **1,234** of", "have **"), 1234);
    assert_eq!(
        toml_keys(
            "[features]\ndefault = []\n# c = 1\nhttp = [\"x\"]\n[deps]\ny = 1",
            "features"
        ),
        ["default", "http"]
    );
    assert_eq!(
        toml_members("[workspace]\nmembers = [\"a\", \"xtask\", \"b\"]\n"),
        ["a", "b"]
    );
}
