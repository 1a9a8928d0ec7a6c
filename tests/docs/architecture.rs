//! The shape of the workspace's library crates (brute, brute-macros, brute-serve, brute-mcp,
//! brute-eval), checked: what the architecture issues asked to stay true.
//!
//! - no source file of any crate is longer than 600 lines;
//! - brute's core modules import no feature module;
//! - no import cycle among sibling modules, at any level of a crate's module tree (an
//!   import between two modules counts between the children of their lowest common
//!   ancestor that hold them);
//! - no import cycle between any two modules of a crate, ancestors included: a cycle
//!   may run through a module and its own descendants, as long as it is not only a
//!   parent and a descendant using each other (`mod.rs` using its children's items, a
//!   child reaching back with `super::`);
//! - brute's crate root exports at most 25 names, not counting modules and the prelude;
//! - no run of six lines (blank lines and `use` lines aside) is repeated between the
//!   two providers.
//!
//! The sources are parsed with `syn`, starting at each crate root and following its
//! `mod` declarations, without the `#[cfg(test)]` modules (other `#[cfg(test)]` items
//! are code and count). An import is every path starting with `crate::`, `self::` or
//! `super::`, or with the name of a child module or of a `use` binding, in `use` items,
//! in code and in the tokens of macro calls. `$crate::` paths and the tokens of
//! `quote!` are macro output, written into the user's crate: not imports of the module
//! that holds them. A path is followed through `use` re-exports to the module that
//! defines its item, so a re-export is not itself a dependency: what counts is where
//! the item lives.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The library crates of the workspace: name and source folder.
const CRATES: &[(&str, &str)] = &[
    ("brute", "brute/src"),
    ("brute-macros", "brute-macros/src"),
    ("brute-serve", "brute-serve/src"),
    ("brute-mcp", "brute-mcp/src"),
    ("brute-eval", "brute-eval/src"),
];

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

/// One module of a crate, as read from its source.
#[derive(Default, Debug)]
struct Module {
    /// The names its items define (types, fns, traits, consts, modules, macros).
    defined: BTreeSet<String>,
    /// The names its `use` items bind, with the absolute path each names (`None` for
    /// a path outside the crate), and whether the binding is `pub`.
    bindings: BTreeMap<String, Option<ModPath>>,
    /// Its `use .. ::*` imports, as absolute module paths.
    globs: Vec<ModPath>,
    /// Every path it names into the crate, absolute, in order.
    paths: Vec<Named>,
    /// Its `pub use` leaves' names, in the order written (for the root's export count).
    pub_uses: Vec<String>,
    /// The `#[macro_export]` macros it defines.
    exported_macros: Vec<String>,
}

/// A path a module names, made absolute.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Named {
    path: ModPath,
    /// It is the path of a `pub use`: a re-export, followed to its item.
    reexport: bool,
}

/// A crate: every module, by path.
struct Crate {
    name: String,
    modules: BTreeMap<ModPath, Module>,
}

/// Reads a crate from `root_file` (its `lib.rs` or `main.rs`), following `mod`
/// declarations with `read` (a file's text, or `None` when it does not exist).
fn load(name: &str, root_file: &Path, read: &dyn Fn(&Path) -> Option<String>) -> Crate {
    let mut modules = BTreeMap::new();
    let text = read(root_file).unwrap_or_else(|| panic!("{}: cannot read it", root_file.display()));
    let file = syn::parse_file(&text)
        .unwrap_or_else(|e| panic!("{}: does not parse: {e}", root_file.display()));
    let dir = root_file
        .parent()
        .expect("a file has a folder")
        .to_path_buf();
    read_module(Vec::new(), root_file, &dir, &file.items, read, &mut modules);
    let mut krate = Crate {
        name: name.to_string(),
        modules,
    };
    absolutise(&mut krate);
    krate
}

/// Whether `attrs` hold `#[cfg(test)]`.
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Ident>()
                .is_ok_and(|ident| ident == "test")
    })
}

/// The `#[path = ".."]` of a module declaration, if any.
fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|attr| match &attr.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// Reads module `module` (its `items`, from `file`) and its children; `dir` is the
/// folder its `mod x;` children are found in.
fn read_module(
    module: ModPath,
    file: &Path,
    dir: &Path,
    items: &[syn::Item],
    read: &dyn Fn(&Path) -> Option<String>,
    out: &mut BTreeMap<ModPath, Module>,
) {
    let mut reader = Reader {
        module: Module::default(),
        raw: Vec::new(),
    };
    for item in items {
        if let syn::Item::Mod(m) = item {
            if is_test_only(&m.attrs) {
                continue;
            }
            let name = m.ident.to_string();
            reader.module.defined.insert(name.clone());
            let mut child = module.clone();
            child.push(name.clone());
            match &m.content {
                Some((_, inner)) => {
                    read_module(child, file, &dir.join(&name), inner, read, out);
                }
                None => {
                    let candidates = match path_attr(&m.attrs) {
                        Some(path) => vec![file.parent().expect("a folder").join(path)],
                        None => vec![
                            dir.join(format!("{name}.rs")),
                            dir.join(&name).join("mod.rs"),
                        ],
                    };
                    let (child_file, text) = candidates
                        .iter()
                        .find_map(|c| read(c).map(|t| (c.clone(), t)))
                        .unwrap_or_else(|| panic!("{}: `mod {name};` has no file", file.display()));
                    let parsed = syn::parse_file(&text).unwrap_or_else(|e| {
                        panic!("{}: does not parse: {e}", child_file.display())
                    });
                    let child_dir = if child_file.ends_with("mod.rs") {
                        child_file.parent().expect("a folder").to_path_buf()
                    } else {
                        child_file.with_extension("")
                    };
                    read_module(child, &child_file, &child_dir, &parsed.items, read, out);
                }
            }
            continue;
        }
        reader.item(item);
    }
    let Reader { module: mut m, raw } = reader;
    // Paths stay relative until every module is known (`absolutise`).
    m.paths = raw;
    out.insert(module, m);
}

/// Collects what one module's items define, bind and name (paths still as written).
struct Reader {
    module: Module,
    raw: Vec<Named>,
}

impl Reader {
    fn item(&mut self, item: &syn::Item) {
        let defined = match item {
            syn::Item::Const(i) => Some(&i.ident),
            syn::Item::Enum(i) => Some(&i.ident),
            syn::Item::Fn(i) => Some(&i.sig.ident),
            syn::Item::Static(i) => Some(&i.ident),
            syn::Item::Struct(i) => Some(&i.ident),
            syn::Item::Trait(i) => Some(&i.ident),
            syn::Item::TraitAlias(i) => Some(&i.ident),
            syn::Item::Type(i) => Some(&i.ident),
            syn::Item::Union(i) => Some(&i.ident),
            syn::Item::Macro(i) => i.ident.as_ref(),
            _ => None,
        };
        if let Some(ident) = defined {
            self.module.defined.insert(ident.to_string());
        }
        if let syn::Item::Macro(m) = item
            && let Some(ident) = &m.ident
            && m.attrs.iter().any(|a| a.path().is_ident("macro_export"))
        {
            self.module.exported_macros.push(ident.to_string());
        }
        if let syn::Item::Use(u) = item {
            let public = matches!(u.vis, syn::Visibility::Public(_));
            let mut leaves = Vec::new();
            use_leaves(Vec::new(), &u.tree, &mut leaves);
            for (path, bound) in leaves {
                match bound {
                    Some(name) => {
                        if public {
                            self.module.pub_uses.push(name.clone());
                        }
                        // Made absolute later; kept raw here, marked with the name.
                        self.module.bindings.insert(name, Some(path.clone()));
                    }
                    None => self.module.globs.push(path.clone()),
                }
                self.raw.push(Named {
                    path,
                    reexport: public,
                });
            }
            return;
        }
        let mut visitor = PathVisitor {
            found: &mut self.raw,
        };
        visitor.visit_item(item);
    }
}

/// Every leaf of a use tree: its whole path, and the name it binds (`None` for a glob).
fn use_leaves(prefix: ModPath, tree: &syn::UseTree, out: &mut Vec<(ModPath, Option<String>)>) {
    match tree {
        syn::UseTree::Path(p) => {
            let mut prefix = prefix;
            prefix.push(p.ident.to_string());
            use_leaves(prefix, &p.tree, out);
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            let mut path = prefix;
            if name == "self" {
                let bound = path.last().cloned();
                out.push((path, bound));
            } else {
                path.push(name.clone());
                out.push((path, Some(name)));
            }
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix;
            if r.ident != "self" {
                path.push(r.ident.to_string());
            }
            out.push((path, Some(r.rename.to_string())));
        }
        syn::UseTree::Glob(_) => out.push((prefix, None)),
        syn::UseTree::Group(g) => {
            for tree in &g.items {
                use_leaves(prefix.clone(), tree, out);
            }
        }
    }
}

/// The paths of code (types, expressions, patterns, attributes' paths) and of the
/// tokens of macro calls.
struct PathVisitor<'a> {
    found: &'a mut Vec<Named>,
}

impl<'ast> Visit<'ast> for PathVisitor<'_> {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() && path.segments.len() > 1 {
            self.found.push(Named {
                path: path.segments.iter().map(|s| s.ident.to_string()).collect(),
                reexport: false,
            });
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_item(&mut self, item: &'ast syn::Item) {
        // `#[cfg(test)] mod` bodies inside a fn or an impl are not read either.
        if let syn::Item::Mod(m) = item
            && is_test_only(&m.attrs)
        {
            return;
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_attribute(&mut self, attr: &'ast syn::Attribute) {
        syn::visit::visit_attribute(self, attr);
        // An attribute's arguments are tokens to syn: `#[utoipa::path(.., body =
        // crate::schema::Reply)]` and `#[openapi(paths(crate::chat::complete))]` name
        // items as surely as code does.
        if let syn::Meta::List(list) = &attr.meta {
            token_paths(list.tokens.clone(), self.found);
        }
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        syn::visit::visit_path(self, &mac.path);
        let name = mac.path.segments.last().map(|s| s.ident.to_string());
        if matches!(
            name.as_deref(),
            Some("quote" | "quote_spanned" | "parse_quote" | "parse_quote_spanned")
        ) {
            return; // macro output
        }
        token_paths(mac.tokens.clone(), self.found);
    }
}

/// The `crate::`, `self::` and `super::` paths in `tokens` (not `$crate::`), and each
/// path of a `{..}` group after them.
fn token_paths(tokens: TokenStream, out: &mut Vec<Named>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let is_colons = |i: usize| {
        matches!((tokens.get(i), tokens.get(i + 1)),
            (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b))) if a.as_char() == ':' && b.as_char() == ':')
    };
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Group(g) => token_paths(g.stream(), out),
            TokenTree::Ident(ident)
                if matches!(ident.to_string().as_str(), "crate" | "self" | "super")
                    && is_colons(i + 1)
                    && !matches!(i.checked_sub(1).map(|p| &tokens[p]),
                        Some(TokenTree::Punct(p)) if p.as_char() == '$' || p.as_char() == ':') =>
            {
                let mut path = vec![ident.to_string()];
                let mut j = i + 1;
                while is_colons(j) {
                    match tokens.get(j + 2) {
                        Some(TokenTree::Ident(next)) => {
                            path.push(next.to_string());
                            j += 3;
                        }
                        Some(TokenTree::Group(g)) => {
                            // `crate::a::{b, c}`: read the group as a use tree.
                            if let Ok(tree) = syn::parse2::<syn::UseTree>(
                                std::iter::once(TokenTree::Group(g.clone())).collect(),
                            ) {
                                let mut leaves = Vec::new();
                                use_leaves(path.clone(), &tree, &mut leaves);
                                out.extend(leaves.into_iter().map(|(path, _)| Named {
                                    path,
                                    reexport: false,
                                }));
                            }
                            path.clear();
                            j += 3;
                            break;
                        }
                        _ => break,
                    }
                }
                if path.len() > 1 {
                    out.push(Named {
                        path,
                        reexport: false,
                    });
                }
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
}

/// `path`, as written in `module`, made absolute: `None` when it leads outside the crate
/// (another crate, a local item, a generic).
fn absolute(
    modules: &BTreeMap<ModPath, Module>,
    module: &[String],
    path: &[String],
) -> Option<ModPath> {
    let (first, rest) = path.split_first()?;
    let mut base: ModPath = match first.as_str() {
        "crate" => Vec::new(),
        "self" => module.to_vec(),
        "super" => module[..module.len().checked_sub(1)?].to_vec(),
        name => {
            let mut child = module.to_vec();
            child.push(name.to_string());
            if modules.contains_key(&child) {
                child
            } else {
                // A name a `use` of this module binds: `use crate::tools; tools::X`.
                let bound = modules.get(module)?.bindings.get(name)?.clone()?;
                let mut whole = bound;
                whole.extend(rest.iter().cloned());
                return Some(whole);
            }
        }
    };
    let mut rest = rest;
    while let Some(("super", after)) = rest.split_first().map(|(a, b)| (a.as_str(), b)) {
        base.pop();
        rest = after;
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// Makes every module's bindings, globs and paths absolute, dropping those that lead
/// outside the crate.
fn absolutise(krate: &mut Crate) {
    // Bindings first (they may name each other: `use crate::tools; use tools::X;`),
    // in a few rounds, each from the raw paths of the last.
    let raw: BTreeMap<ModPath, BTreeMap<String, Option<ModPath>>> = krate
        .modules
        .iter()
        .map(|(m, module)| (m.clone(), module.bindings.clone()))
        .collect();
    for _ in 0..3 {
        let mut next = BTreeMap::new();
        for (m, bindings) in &raw {
            let resolved: BTreeMap<String, Option<ModPath>> = bindings
                .iter()
                .map(|(name, path)| {
                    let path = path.as_ref().and_then(|p| {
                        // A binding never resolves through itself: in `use quote::quote;`
                        // the first `quote` is another crate.
                        if p[0] == *name {
                            None
                        } else {
                            absolute(&krate.modules, m, p)
                        }
                    });
                    (name.clone(), path)
                })
                .collect();
            next.insert(m.clone(), resolved);
        }
        for (m, bindings) in next {
            krate.modules.get_mut(&m).expect("a module").bindings = bindings;
        }
    }
    let keys: Vec<ModPath> = krate.modules.keys().cloned().collect();
    for m in keys {
        let module = &krate.modules[&m];
        let globs: Vec<ModPath> = module
            .globs
            .iter()
            .filter_map(|g| absolute(&krate.modules, &m, g))
            .collect();
        let paths: Vec<Named> = module
            .paths
            .iter()
            .filter_map(|n| {
                absolute(&krate.modules, &m, &n.path).map(|path| Named {
                    path,
                    reexport: n.reexport,
                })
            })
            .collect();
        let module = krate.modules.get_mut(&m).expect("a module");
        module.globs = globs;
        module.paths = paths;
    }
}

impl Crate {
    /// The module that defines what absolute `path` names, following `use` bindings
    /// and globs: the longest module prefix, or further where that module re-exports.
    fn resolve(&self, path: &[String]) -> ModPath {
        let mut path = path.to_vec();
        for _ in 0..32 {
            let prefix = (0..=path.len())
                .rev()
                .map(|n| path[..n].to_vec())
                .find(|p| self.modules.contains_key(p))
                .unwrap_or_default();
            let Some(next) = path.get(prefix.len()) else {
                return prefix; // the path names a module
            };
            let module = &self.modules[&prefix];
            if module.defined.contains(next) {
                return prefix;
            }
            let rest = &path[prefix.len() + 1..];
            let through = module.bindings.get(next).cloned().or_else(|| {
                module.globs.iter().find_map(|g| {
                    let there = self.modules.get(g)?;
                    (there.defined.contains(next) || there.bindings.contains_key(next))
                        .then(|| Some([g.as_slice(), std::slice::from_ref(next)].concat()))
                })
            });
            match through {
                Some(Some(target)) if target != path[..=prefix.len()] => {
                    path = [target.as_slice(), rest].concat();
                }
                _ => return prefix,
            }
        }
        panic!("{}: `{}` re-exports in a loop", self.name, path.join("::"))
    }

    /// Module → the modules that define what it names (itself left out). Re-exports
    /// are not edges: whoever names the re-exported item gets the edge to its module.
    fn graph(&self) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
        self.modules
            .iter()
            .map(|(m, module)| {
                let targets = module
                    .paths
                    .iter()
                    .filter(|n| !n.reexport)
                    .map(|n| (self.resolve(&n.path), &n.path))
                    // `use crate::tools;` names a module, not an item: the paths that
                    // go on through it (`tools::X`) are the edges.
                    .filter(|(t, named)| t != m && t != *named)
                    .map(|(t, _)| t)
                    .collect();
                (m.clone(), targets)
            })
            .collect()
    }
}

/// Every library crate of the workspace, read from disk once, and brute-mcp's binary.
fn crates() -> &'static [Crate] {
    static CRATES_READ: std::sync::OnceLock<Vec<Crate>> = std::sync::OnceLock::new();
    CRATES_READ.get_or_init(read_crates)
}

fn read_crates() -> Vec<Crate> {
    let read = |path: &Path| std::fs::read_to_string(path).ok();
    let mut crates: Vec<Crate> = CRATES
        .iter()
        .map(|(name, src)| load(name, &Path::new(ROOT).join(src).join("lib.rs"), &read))
        .collect();
    for bin in rs_files(&Path::new(ROOT).join("brute-mcp/src/bin")) {
        crates.push(load("brute-mcp (bin)", &bin, &read));
    }
    for krate in &crates {
        assert!(
            !krate.modules.is_empty(),
            "{}: no modules were read",
            krate.name
        );
    }
    let brute = &crates[0];
    assert!(
        brute.modules.len() > 50,
        "read only {} modules of brute",
        brute.modules.len()
    );
    crates
}

/// Every `.rs` file under `dir`, sorted.
fn rs_files(dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
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
    walk(dir, &mut files);
    files.sort();
    files
}

#[test]
fn no_source_file_of_any_crate_is_longer_than_600_lines() {
    let mut long = Vec::new();
    let mut seen = 0;
    for (_, src) in CRATES {
        for path in rs_files(&Path::new(ROOT).join(src)) {
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            seen += 1;
            let lines = text.lines().count();
            if lines > 600 {
                long.push(format!("{}: {lines} lines", path.display()));
            }
        }
    }
    assert!(seen > 100, "found only {seen} source files");
    assert!(
        long.is_empty(),
        "files longer than 600 lines:\n{}",
        long.join("\n")
    );
}

/// The violations of "the core imports no feature module" in `graph`.
fn core_to_feature(graph: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<String> {
    let mut wrong = Vec::new();
    for (module, targets) in graph {
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
    wrong
}

#[test]
fn the_core_imports_no_feature_module() {
    let crates = crates();
    let graph = crates[0].graph();
    let wrong = core_to_feature(&graph);
    assert!(
        wrong.is_empty(),
        "core modules reach into features:\n{}",
        wrong.join("\n")
    );
    // The check sees imports at all: the core does import the core.
    assert!(
        graph[&vec!["agent".to_string()]]
            .iter()
            .any(|t| t.first().is_some_and(|top| top == "env")),
        "{:?}",
        graph[&vec!["agent".to_string()]]
    );
}

/// The sibling cycles of `graph`: `in PARENT: a -> b -> a`.
fn sibling_cycles(graph: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> (Vec<Cycle>, usize) {
    // An edge between two modules is an edge between the children of their lowest
    // common ancestor that hold them; a module and its own ancestor are not siblings.
    let mut siblings: BTreeMap<ModPath, BTreeMap<ModPath, BTreeSet<ModPath>>> = BTreeMap::new();
    for (from, targets) in graph {
        for to in targets {
            let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
            if common == from.len() || common == to.len() {
                continue;
            }
            siblings
                .entry(from[..common].to_vec())
                .or_default()
                .entry(vec![from[common].clone()])
                .or_default()
                .insert(vec![to[common].clone()]);
        }
    }
    let mut cycles = Vec::new();
    for (parent, edges) in &siblings {
        for start in edges.keys() {
            if let Some(path) = cycle_from(edges, start, |_| true) {
                let place = if parent.is_empty() {
                    "crate".to_string()
                } else {
                    parent.join("::")
                };
                let modules = path
                    .iter()
                    .map(|child| [parent.as_slice(), child].concat())
                    .collect();
                cycles.push((format!("in {place}: {}", show(&path)), modules));
            }
        }
    }
    (cycles, siblings.len())
}

/// A cycle found: as shown, and the modules it runs through.
type Cycle = (String, Vec<ModPath>);

/// Cycles allowed for now, by crate and the modules they run through: none is left
/// (brute-serve's shared state has a module of its own, and the macros' `Errors` and
/// `Flavor` live below the passes that use them). The checks fail on any cycle not
/// listed here, and on an entry that no longer has one.
const KNOWN_CYCLES: &[(&str, &[&str])] = &[];

/// The cycles of `found` (by crate) that no entry of `KNOWN_CYCLES` holds, and the
/// entries that hold none of them.
fn unknown(found: &[(&str, Vec<Cycle>)]) -> (Vec<String>, Vec<String>) {
    let mut used = BTreeSet::new();
    let mut new = Vec::new();
    for (krate, cycles) in found {
        for (shown, modules) in cycles {
            let known = KNOWN_CYCLES.iter().position(|(name, group)| {
                name == krate
                    && modules
                        .iter()
                        .all(|m| group.contains(&m.join("::").as_str()))
            });
            match known {
                Some(entry) => {
                    used.insert(entry);
                }
                None => new.push(format!("{krate}: {shown}")),
            }
        }
    }
    let stale = (0..KNOWN_CYCLES.len())
        .filter(|entry| !used.contains(entry))
        .map(|entry| format!("{:?}", KNOWN_CYCLES[entry]))
        .collect();
    (new, stale)
}

#[test]
fn no_import_cycle_among_sibling_modules() {
    let crates = crates();
    let mut found = Vec::new();
    let mut parents = 0;
    for krate in crates {
        let (cycles, seen) = sibling_cycles(&krate.graph());
        parents += seen;
        found.push((krate.name.as_str(), cycles));
    }
    let (new, _) = unknown(&found);
    assert!(new.is_empty(), "import cycles:\n{}", new.join("\n"));
    assert!(
        parents > 0,
        "the check found no imports between siblings at all"
    );
}

/// Whether `a` is an ancestor of `b` or `b` of `a`.
fn nested(a: &[String], b: &[String]) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// The cycles of `graph` between any modules, except those that are only a module
/// and its ancestor using each other.
fn any_cycles(graph: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<Cycle> {
    let mut cycles = BTreeMap::new();
    for start in graph.keys() {
        // A cycle through `start` whose other modules sort after it (each cycle is
        // found once, from its smallest module), and that is not a nested pair.
        let found = cycle_from(graph, start, |path: &[ModPath]| {
            !(path.len() == 3 && nested(&path[0], &path[1]))
        });
        if let Some(path) = found {
            cycles.insert(show(&path), path);
        }
    }
    cycles.into_iter().collect()
}

#[test]
fn no_import_cycle_between_any_two_modules() {
    let crates = crates();
    let mut found = Vec::new();
    let mut edges = 0;
    for krate in crates {
        let graph = krate.graph();
        edges += graph.values().map(BTreeSet::len).sum::<usize>();
        found.push((krate.name.as_str(), any_cycles(&graph)));
    }
    let (new, stale) = unknown(&found);
    assert!(new.is_empty(), "import cycles:\n{}", new.join("\n"));
    assert!(
        stale.is_empty(),
        "these cycles are gone: delete them from KNOWN_CYCLES:\n{}",
        stale.join("\n")
    );
    assert!(edges > 100, "the check found only {edges} imports");
}

fn show(path: &[ModPath]) -> String {
    path.iter()
        .map(|m| {
            if m.is_empty() {
                "crate".to_string()
            } else {
                m.join("::")
            }
        })
        .collect::<Vec<_>>()
        .join(" -> ")
}

/// A path of imports from `start` back to `start` for which `accept` holds (given the
/// whole closed path), if there is one; depth first over simple paths, bounded.
fn cycle_from(
    edges: &BTreeMap<ModPath, BTreeSet<ModPath>>,
    start: &ModPath,
    accept: impl Fn(&[ModPath]) -> bool,
) -> Option<Vec<ModPath>> {
    let mut stack = vec![vec![start.clone()]];
    let mut budget = 200_000usize;
    while let Some(path) = stack.pop() {
        budget = budget.checked_sub(1)?;
        let last = path.last().expect("a path is never empty");
        for next in edges.get(last).into_iter().flatten() {
            if next == start {
                let mut cycle = path.clone();
                cycle.push(next.clone());
                if accept(&cycle) {
                    return Some(cycle);
                }
                continue;
            }
            if next > start && !path.contains(next) {
                let mut longer = path.clone();
                longer.push(next.clone());
                stack.push(longer);
            }
        }
    }
    None
}

/// A crate from in-memory files (`lib.rs`, `a.rs`, `a/b.rs`, ..) under `/src`.
fn crate_of(files: &[(&str, &str)]) -> Crate {
    let files: BTreeMap<PathBuf, String> = files
        .iter()
        .map(|(p, t)| (Path::new("/src").join(p), t.to_string()))
        .collect();
    load("test", Path::new("/src/lib.rs"), &|p: &Path| {
        files.get(p).cloned()
    })
}

#[test]
fn the_import_reader_sees_groups_supers_macros_and_test_helpers_not_strings_or_tests() {
    let code = r##"
        use crate::{env::Env, message::{Message, part::Part}};
        use super::set::ToolSet;
        macro_rules! m { () => { $crate::__private::v1::Kind } }
        fn f() {
            let s = "crate::providers::X";
            let r = r#"an odd " quote, crate::session::X"#; let q = '"';
            let t = crate::stop::ExitReason::Completed;
            let w = format!("{}", crate::trace::name(), self::helpers::{a, b});
            // crate::compaction::X, in a comment
            let o = quote! { crate::middleware::Y };
        }
        #[cfg(test)]
        fn helper() { let u = crate::usage::Usage::default(); }
        #[cfg(test)]
        #[allow(clippy::unwrap_used)]
        mod tests { use crate::providers::Z; fn g() { if true {} } }
        const V: crate::kind::Loop = crate::kind::Loop;
    "##;
    let krate = crate_of(&[
        ("lib.rs", "pub mod tools;"),
        ("tools.rs", "pub mod pipeline;"),
        ("tools/pipeline.rs", code),
    ]);
    let module = &krate.modules[&vec!["tools".to_string(), "pipeline".to_string()]];
    let found: BTreeSet<String> = module.paths.iter().map(|n| n.path.join("::")).collect();
    let expected: BTreeSet<String> = [
        "env::Env",
        "message::Message",
        "message::part::Part",
        "tools::set::ToolSet",
        "stop::ExitReason::Completed",
        "trace::name",
        "tools::pipeline::helpers::a",
        "tools::pipeline::helpers::b",
        "usage::Usage::default",
        "kind::Loop",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(found, expected);
    assert!(
        !krate
            .modules
            .contains_key(&vec!["tools".into(), "pipeline".into(), "tests".into()]),
        "a #[cfg(test)] module was read"
    );
}

#[test]
fn a_path_through_a_reexport_leads_to_the_module_that_defines_the_item() {
    let krate = crate_of(&[
        (
            "lib.rs",
            "pub mod a; pub mod b; pub use a::deep::Thing as Renamed;",
        ),
        ("a.rs", "pub mod deep; pub use self::deep::*;"),
        ("a/deep.rs", "pub struct Thing; pub fn made() {}"),
        (
            "b.rs",
            "use crate::Renamed; use crate::a; fn f() { a::made(); let _ = super::a::Thing; }",
        ),
    ]);
    let deep = vec!["a".to_string(), "deep".to_string()];
    assert_eq!(krate.resolve(&["Renamed".into()]), deep);
    assert_eq!(krate.resolve(&["a".into(), "made".into()]), deep);
    let graph = krate.graph();
    assert_eq!(
        graph[&vec!["b".to_string()]],
        BTreeSet::from([deep.clone()]),
        "{graph:?}"
    );
    // The root's and `a`'s re-exports are not edges.
    assert!(graph[&Vec::new()].is_empty(), "{graph:?}");
    assert!(graph[&vec!["a".to_string()]].is_empty(), "{graph:?}");
}

fn shown(cycles: Vec<Cycle>) -> Vec<String> {
    cycles.into_iter().map(|(shown, _)| shown).collect()
}

#[test]
fn the_cycle_checks_find_cycles_between_siblings_cousins_and_through_a_parent() {
    // Siblings: a -> b -> a.
    let siblings = crate_of(&[
        ("lib.rs", "mod a; mod b;"),
        ("a.rs", "pub fn f() { crate::b::g() }"),
        ("b.rs", "pub fn g() { crate::a::f() }"),
    ]);
    assert_eq!(
        shown(sibling_cycles(&siblings.graph()).0),
        vec!["in crate: a -> b -> a"]
    );
    assert_eq!(shown(any_cycles(&siblings.graph())), vec!["a -> b -> a"]);

    // Cousins, through a re-export: x::one -> y::two -> x::one.
    let cousins = crate_of(&[
        ("lib.rs", "mod x; mod y;"),
        ("x.rs", "mod one; pub use one::One;"),
        ("x/one.rs", "pub struct One; fn f() { crate::y::two::g() }"),
        ("y.rs", "pub mod two;"),
        ("y/two.rs", "pub fn g() { let _ = crate::x::One; }"),
    ]);
    assert_eq!(
        shown(sibling_cycles(&cousins.graph()).0),
        vec!["in crate: x -> y -> x"]
    );
    assert_eq!(
        shown(any_cycles(&cousins.graph())),
        vec!["x::one -> y::two -> x::one"]
    );

    // Through a parent: p::a -> p (its own item) -> p::b -> p::a. No two siblings
    // form a cycle, so only the check between any modules sees it.
    let through_parent = crate_of(&[
        ("lib.rs", "mod p;"),
        (
            "p/mod.rs",
            "mod a; mod b; pub struct Shared; fn run() { b::go() }",
        ),
        ("p/a.rs", "pub fn f() -> super::Shared { super::Shared }"),
        ("p/b.rs", "pub fn go() { super::a::f(); }"),
    ]);
    assert!(sibling_cycles(&through_parent.graph()).0.is_empty());
    assert_eq!(
        shown(any_cycles(&through_parent.graph())),
        vec!["p -> p::b -> p::a -> p"]
    );

    // Allowed: a parent and its child using each other, and a parent's re-exports.
    let allowed = crate_of(&[
        ("lib.rs", "mod p;"),
        (
            "p/mod.rs",
            "mod a; pub use a::f; pub struct Shared; fn run() { a::f() }",
        ),
        ("p/a.rs", "pub fn f() -> super::Shared { super::Shared }"),
    ]);
    assert!(any_cycles(&allowed.graph()).is_empty());
}

#[test]
fn the_root_exports_at_most_25_names() {
    let crates = crates();
    let brute = &crates[0];
    let mut names: BTreeSet<String> = brute.modules[&Vec::new()]
        .pub_uses
        .iter()
        .cloned()
        .collect();
    // `#[macro_export]` macros are exported at the root, wherever they are defined.
    for module in brute.modules.values() {
        for name in &module.exported_macros {
            if !name.starts_with("__") {
                names.insert(name.clone());
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
        // Every file of the provider's module, its tests' files too.
        let providers = Path::new(ROOT).join("brute/src/providers");
        let mut files = rs_files(&providers.join(provider));
        files.push(providers.join(format!("{provider}.rs")));
        files.retain(|f| f.is_file());
        let mut out = Vec::new();
        for path in files {
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
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
