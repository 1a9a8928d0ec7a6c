//! `cargo xtask public-items [--list]`: counts brute's public API from rustdoc's JSON.
//!
//! rustdoc writes the crate's public items (hidden ones, such as `__private`, left out)
//! with every feature on, the way docs.rs documents it:
//!
//! ```text
//! RUSTC_BOOTSTRAP=1 cargo rustdoc -p brute --all-features -- -Z unstable-options --output-format json
//! ```
//!
//! The count walks the module tree from the crate root as a user's `use` line does:
//! each path at which a named item (module, struct, enum, union, trait, function, type
//! alias, constant, static, macro) can be named is one item, so a type re-exported at
//! two paths counts twice: the count measures how much a reader has to learn, and a
//! second path to the same item is one more thing to learn. Members (variants, public
//! fields, inherent methods, trait items) belong to their item and are reported apart.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use crate::json::Json;

/// The reviewed list of brute's public items, below the repository's root: one line
/// per path, `kind path`, sorted. `--check` fails on any difference, so a new public
/// item (or a lost one) is a change someone reads in review.
pub(crate) const REVIEWED: &str = "xtask/public-items.txt";

/// What `cargo xtask public-items` does with the items it found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Print the count per module.
    Count,
    /// Print every path, then the count.
    List,
    /// Compare with the reviewed list and fail on a difference.
    Check,
    /// Write the reviewed list.
    Bless,
}

/// The lines of `listed` missing from `current` (`- line`) and those of `current`
/// missing from `listed` (`+ line`), in order; empty when both hold the same lines.
pub(crate) fn diff(listed: &str, current: &str) -> String {
    let listed: BTreeSet<&str> = listed.lines().filter(|l| !l.trim().is_empty()).collect();
    let current: BTreeSet<&str> = current.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut out = String::new();
    for line in listed.difference(&current) {
        let _ = writeln!(out, "- {line}");
    }
    for line in current.difference(&listed) {
        let _ = writeln!(out, "+ {line}");
    }
    out
}

/// The kinds of rustdoc item that have a path of their own.
const NAMED: &[&str] = &[
    "module",
    "struct",
    "enum",
    "union",
    "trait",
    "trait_alias",
    "function",
    "type_alias",
    "constant",
    "static",
    "macro",
    "proc_macro",
];

/// What the walk found.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Surface {
    /// Every public path (`brute::session::SessionLog`) with its item's kind.
    pub(crate) paths: Vec<(String, String)>,
    /// Variants of the distinct public enums.
    pub(crate) variants: usize,
    /// Public fields of the distinct public structs.
    pub(crate) fields: usize,
    /// Public associated items of inherent impls of the distinct public types.
    pub(crate) methods: usize,
    /// Items declared by the distinct public traits.
    pub(crate) trait_items: usize,
}

impl Surface {
    /// The number of paths directly in each module, by module path.
    pub(crate) fn per_module(&self) -> BTreeMap<&str, usize> {
        let mut counts = BTreeMap::new();
        for (path, _) in &self.paths {
            let module = path.rsplit_once("::").map_or("", |(module, _)| module);
            *counts.entry(module).or_insert(0) += 1;
        }
        counts
    }

    /// Every path with its kind, one per line (`struct      brute::Env`), sorted: the
    /// reviewed list's format.
    pub(crate) fn listing(&self) -> String {
        let mut out = String::new();
        for (path, kind) in &self.paths {
            let _ = writeln!(out, "{kind:<11} {path}");
        }
        out
    }

    /// The report: one line per module, the total, the members.
    pub(crate) fn report(&self, list: bool) -> String {
        let mut out = String::new();
        if list {
            out.push_str(&self.listing());
            out.push('\n');
        }
        for (module, count) in self.per_module() {
            let _ = writeln!(out, "{count:>4}  {module}");
        }
        let _ = writeln!(
            out,
            "{:>4}  public items (paths to named items)\n\nmembers of the distinct items, not counted above: \
             {} variants, {} public fields, {} inherent associated items, {} trait items",
            self.paths.len(),
            self.variants,
            self.fields,
            self.methods,
            self.trait_items
        );
        out
    }
}

/// Why the JSON could not be read as rustdoc's output.
#[derive(Debug, PartialEq)]
pub(crate) struct ShapeError(pub(crate) String);

/// The item of `index` with the id `id`.
fn item<'a>(index: &'a Json, id: &Json) -> Option<&'a Json> {
    index.get(id.as_key()?)
}

/// An item's kind (`module`, `struct`, `use`, ..) and its inner object.
fn kind_of(item: &Json) -> Option<(&str, &Json)> {
    let (kind, inner) = item.get("inner")?.as_object()?.iter().next()?;
    Some((kind.as_str(), inner))
}

fn is_public(index: &Json, id: &Json) -> bool {
    item(index, id)
        .and_then(|item| item.get("visibility"))
        .and_then(Json::as_str)
        == Some("public")
}

/// Walks the crate of the rustdoc JSON document `doc`.
pub(crate) fn surface(doc: &Json) -> Result<Surface, ShapeError> {
    let index = doc
        .get("index")
        .ok_or_else(|| ShapeError("no `index`".into()))?;
    let root = doc
        .get("root")
        .ok_or_else(|| ShapeError("no `root`".into()))?;
    let root_item =
        item(index, root).ok_or_else(|| ShapeError("the root is not indexed".into()))?;
    let name = root_item
        .get("name")
        .and_then(Json::as_str)
        .ok_or_else(|| ShapeError("the root has no name".into()))?;
    let mut walk = Walk {
        index,
        surface: Surface::default(),
        distinct: BTreeSet::new(),
    };
    let mut open = vec![root.as_key().unwrap_or_default().to_string()];
    walk.module(root_item, name, &mut open);
    walk.surface.paths.sort();
    walk.members();
    Ok(walk.surface)
}

/// The state of one walk over the module tree.
struct Walk<'a> {
    index: &'a Json,
    surface: Surface,
    /// The ids of the distinct items reached, for the member counts.
    distinct: BTreeSet<String>,
}

impl<'a> Walk<'a> {
    /// Records the items of `module` (at `path`); `open` holds the modules being walked,
    /// so that a module re-exported inside itself is not walked forever.
    fn module(&mut self, module: &'a Json, path: &str, open: &mut Vec<String>) {
        let Some(("module", inner)) = kind_of(module) else {
            return;
        };
        for id in inner
            .get("items")
            .and_then(Json::as_array)
            .unwrap_or_default()
        {
            let Some(child) = item(self.index, id) else {
                continue;
            };
            let Some((kind, child_inner)) = kind_of(child) else {
                continue;
            };
            if kind == "use" {
                self.reexport(child_inner, path, open);
            } else if NAMED.contains(&kind) {
                let name = child.get("name").and_then(Json::as_str).unwrap_or("_");
                self.named(id, child, kind, &format!("{path}::{name}"), open);
            }
        }
    }

    /// Records a `pub use`: its target at the path of its name, or a glob's items.
    fn reexport(&mut self, use_item: &'a Json, path: &str, open: &mut Vec<String>) {
        let glob = use_item.get("is_glob") == Some(&Json::Bool(true));
        let name = use_item.get("name").and_then(Json::as_str).unwrap_or("_");
        let target = use_item.get("id").filter(|id| **id != Json::Null);
        let Some((id, target_item)) = target.and_then(|id| Some((id, item(self.index, id)?)))
        else {
            // A re-export of another crate's item (`pub use serde;`).
            if !glob {
                self.surface
                    .paths
                    .push((format!("{path}::{name}"), "extern".into()));
            }
            return;
        };
        let Some((kind, _)) = kind_of(target_item) else {
            return;
        };
        // A `pub use` names every namespace of its path; rustdoc also lists a private
        // module of the same name (`mod tool` beside the `tool` macro), which no user
        // can reach.
        if !is_public(self.index, id) {
            return;
        }
        if glob {
            self.module(target_item, path, open);
        } else if NAMED.contains(&kind) {
            self.named(id, target_item, kind, &format!("{path}::{name}"), open);
        }
    }

    fn named(&mut self, id: &Json, item: &'a Json, kind: &str, path: &str, open: &mut Vec<String>) {
        let key = id.as_key().unwrap_or_default().to_string();
        self.surface
            .paths
            .push((path.to_string(), kind.to_string()));
        if kind == "module" {
            if !open.contains(&key) {
                open.push(key.clone());
                self.module(item, path, open);
                open.pop();
            }
        } else {
            self.distinct.insert(key);
        }
    }

    /// Counts the members of the distinct items reached.
    fn members(&mut self) {
        let index = self.index;
        for key in &self.distinct {
            let Some((kind, inner)) = index.get(key).and_then(kind_of) else {
                continue;
            };
            match kind {
                "enum" => {
                    self.surface.variants += inner
                        .get("variants")
                        .and_then(Json::as_array)
                        .map_or(0, <[Json]>::len);
                }
                "struct" => {
                    let fields = inner
                        .get("kind")
                        .and_then(|kind| kind.get("plain"))
                        .and_then(|plain| plain.get("fields"))
                        .and_then(Json::as_array)
                        .unwrap_or_default();
                    self.surface.fields += fields.iter().filter(|f| is_public(index, f)).count();
                }
                "trait" => {
                    self.surface.trait_items += inner
                        .get("items")
                        .and_then(Json::as_array)
                        .map_or(0, <[Json]>::len);
                }
                _ => {}
            }
            if matches!(kind, "struct" | "enum" | "union") {
                for impl_id in inner
                    .get("impls")
                    .and_then(Json::as_array)
                    .unwrap_or_default()
                {
                    let Some(("impl", imp)) = item(index, impl_id).and_then(kind_of) else {
                        continue;
                    };
                    if imp.get("trait").is_some_and(|t| *t != Json::Null) {
                        continue;
                    }
                    let items = imp
                        .get("items")
                        .and_then(Json::as_array)
                        .unwrap_or_default();
                    self.surface.methods += items.iter().filter(|i| is_public(index, i)).count();
                }
            }
        }
    }
}

/// Reads the rustdoc JSON file at `file` and walks it.
pub(crate) fn read(file: &Path) -> Result<Surface, String> {
    let text = std::fs::read_to_string(file)
        .map_err(|error| format!("cannot read {}: {error}", file.display()))?;
    let doc = crate::json::parse(&text).map_err(|error| format!("{}: {error}", file.display()))?;
    surface(&doc).map_err(|ShapeError(what)| {
        format!("{} is not rustdoc's JSON output: {what}", file.display())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A crate `c` with `pub mod m { pub struct S { pub a: u8, b: u8 } }`, `pub use m::S;`,
    /// a glob re-export of `m` into `g`, `pub use serde;`, and a re-export of a private
    /// module `p` (as rustdoc lists `pub use crate::tool` beside a private `mod tool`).
    const DOC: &str = r#"{
        "root": 1,
        "index": {
            "1": {"name": "c", "visibility": "public", "inner": {"module": {"items": [2, 5, 6, 7, 9, 15]}}},
            "14": {"name": "p", "visibility": "default", "inner": {"module": {"items": [9]}}},
            "15": {"name": null, "visibility": "public", "inner": {"use": {"name": "p", "id": 14, "is_glob": false}}},
            "2": {"name": "m", "visibility": "public", "inner": {"module": {"items": [3]}}},
            "3": {"name": "S", "visibility": "public", "inner": {"struct": {
                "kind": {"plain": {"fields": [10, 11]}}, "impls": [12]}}},
            "5": {"name": null, "visibility": "public", "inner": {"use": {"name": "S", "id": 3, "is_glob": false}}},
            "6": {"name": "g", "visibility": "public", "inner": {"module": {"items": [8]}}},
            "8": {"name": null, "visibility": "public", "inner": {"use": {"name": "m", "id": 2, "is_glob": true}}},
            "7": {"name": null, "visibility": "public", "inner": {"use": {"name": "serde", "id": null, "is_glob": false}}},
            "9": {"name": "f", "visibility": "public", "inner": {"function": {}}},
            "10": {"name": "a", "visibility": "public", "inner": {"struct_field": {}}},
            "11": {"name": "b", "visibility": "default", "inner": {"struct_field": {}}},
            "12": {"name": null, "visibility": "default", "inner": {"impl": {"trait": null, "items": [13]}}},
            "13": {"name": "new", "visibility": "public", "inner": {"function": {}}}
        }
    }"#;

    #[test]
    fn counts_every_path_and_the_members_of_distinct_items_once() {
        let doc = crate::json::parse(DOC).expect("valid JSON");
        let surface = surface(&doc).expect("rustdoc's shape");
        let paths: Vec<&str> = surface.paths.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                "c::S", "c::f", "c::g", "c::g::S", "c::m", "c::m::S", "c::serde"
            ]
        );
        assert_eq!((surface.fields, surface.methods), (1, 1));
        let per_module = surface.per_module();
        assert_eq!(per_module.get("c"), Some(&5));
        assert_eq!(per_module.get("c::g"), Some(&1));
    }

    #[test]
    fn a_document_without_an_index_is_an_error() {
        let doc = crate::json::parse(r#"{"root": 1}"#).expect("valid JSON");
        assert_eq!(surface(&doc), Err(ShapeError("no `index`".into())));
    }

    #[test]
    fn the_diff_names_each_lost_and_each_new_line_and_is_empty_when_they_match() {
        let listed = "struct      c::A\nstruct      c::B\n";
        let current = "struct      c::B\nfunction    c::f\n";
        assert_eq!(
            diff(listed, current),
            "- struct      c::A\n+ function    c::f\n"
        );
        assert_eq!(diff(listed, listed), "");
        assert_eq!(diff("struct      c::A\n\n", "struct      c::A\n"), "");
    }
}
