//! The import graph has no cycle, between files or between whole modules, and the agent's
//! `Conversation` is plain state: the checks that keep each file's dependencies in its `use`
//! lines, where the scan of [`super`] sees them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

use super::{Scan, display, rust_files, scan, top};

/// Files of one module must not import each other round a cycle. A `mod.rs` declaring or
/// re-exporting its children is containment, not use, so edges from a module file to its own
/// descendants through `mod`/`pub use` are not counted; any other use is.
#[test]
fn files_of_one_module_form_no_import_cycle() {
    let scan = scan();
    let file_of = |m: &[String]| -> Option<PathBuf> {
        scan.krate
            .module_of(m)
            .and_then(|p| scan.krate.modules.get(p))
            .map(|m| m.file.clone())
    };
    let aliases = reexports(&scan);
    let mut edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for (file, r) in &scan.references {
        let to = seen_through(&aliases, &r.to);
        if r.in_test || top(&r.from) != top(&to) || names_its_variants(file) {
            continue;
        }
        let Some(target) = file_of(&to) else {
            continue;
        };
        if &target == file {
            continue;
        }
        // A parent's use of its own child file: containment, unless the child uses the parent
        // back, which the child's edge records.
        let Some(target_module) = scan.krate.module_of(&to) else {
            continue;
        };
        let from_module = scan.krate.module_of(&r.from).unwrap_or(&[]);
        if target_module.starts_with(from_module) && is_module_root(file) {
            continue;
        }
        edges.entry(file.clone()).or_default().insert(target);
    }
    let cycles = find_cycles(&edges);
    assert!(
        cycles.is_empty(),
        "import cycles between files of one module:\n{}",
        cycles
            .iter()
            .map(|c| c
                .iter()
                .map(|f| display(f))
                .collect::<Vec<_>>()
                .join(" -> "))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Whole modules must not import each other round a cycle either. The file graph above cannot
/// see a cycle that enters a folder module through its root: `turn.rs` uses `call::Pipeline`
/// (in `call/mod.rs`), and `call/commit.rs` using `subagent.rs`, which uses `turn.rs`, closes a
/// cycle there only through the root's use of its own children, which is containment. So here
/// each folder module counts as one node among its siblings (`call/` beside `turn.rs`), at every
/// depth: an edge joins the two siblings, under the deepest module holding both files, that
/// contain its ends. A module root's uses of what it contains are still containment.
#[test]
fn modules_form_no_import_cycle_among_their_siblings() {
    let scan = scan();
    // The module path of each file (inline modules share their file: the shortest path is it).
    let mut path_of: BTreeMap<PathBuf, Vec<String>> = BTreeMap::new();
    for (path, m) in &scan.krate.modules {
        let shorter = path_of.get(&m.file).is_none_or(|p| path.len() < p.len());
        if shorter {
            path_of.insert(m.file.clone(), path.clone());
        }
    }
    let file_of = |m: &[String]| -> Option<PathBuf> {
        scan.krate
            .module_of(m)
            .and_then(|p| scan.krate.modules.get(p))
            .map(|m| m.file.clone())
    };
    // A node is a module path under the module (the level) whose children it is among.
    type Node = (Vec<String>, Vec<String>);
    let mut edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    let as_key =
        |(level, node): &Node| PathBuf::from(format!("{}: {}", level.join("::"), node.join("::")));
    let aliases = reexports(&scan);
    for (file, r) in &scan.references {
        let to = seen_through(&aliases, &r.to);
        if r.in_test || top(&r.from) != top(&to) || names_its_variants(file) {
            continue;
        }
        let (Some(from), Some(to)) = (
            path_of.get(file),
            file_of(&to).and_then(|t| path_of.get(&t)),
        ) else {
            continue;
        };
        let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
        // The root of a module using what it contains, or a file using itself.
        if common == from.len() {
            continue;
        }
        let level = from[..common].to_vec();
        let source = from[..=common].to_vec();
        let target = to[..(common + 1).min(to.len())].to_vec();
        edges
            .entry(as_key(&(level.clone(), source)))
            .or_default()
            .insert(as_key(&(level, target)));
    }
    let cycles = find_cycles(&edges);
    assert!(
        cycles.is_empty(),
        "import cycles between modules (LEVEL: MODULE):\n{}",
        cycles
            .iter()
            .map(|c| c
                .iter()
                .map(|n| n.display().to_string())
                .collect::<Vec<_>>()
                .join(" -> "))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Files that define a closed sum type over their siblings' types, whose uses of those siblings
/// are the variants it is made of, not a dependency of the kind the cycle tests look for: the
/// tools' `ToolResult` is one variant per tool, each holding that tool's own result type (kept in
/// the tool's file, with its schema, preview and commit), and every tool returns a `ToolResult`.
/// Only this file's edges are left out: a tool file using another tool file is still counted.
const CLOSED_SUM_TYPES: &[&str] = &["crates/tools/src/result.rs"];

fn names_its_variants(file: &Path) -> bool {
    CLOSED_SUM_TYPES.iter().any(|f| file.ends_with(f))
}

/// What a module root's `use` of its own descendants makes visible under the root's name: the
/// item `agent::Isolator` of `pub use isolation::Isolator;` in `lib.rs` is
/// `agent::isolation::Isolator`. A child that names it through its parent (`super::Isolator`)
/// uses `isolation.rs`, not `lib.rs`, and the cycle tests must see that edge: without it,
/// `shared.rs` using `super::Isolator` and `isolation.rs` using `shared::Shared` was a cycle
/// neither test saw. A glob (`pub use x::*`) names no item and is not followed.
fn reexports(scan: &Scan) -> BTreeMap<Vec<String>, Vec<String>> {
    let mut aliases = BTreeMap::new();
    for (file, r) in &scan.references {
        let Some(target) = scan.krate.module_of(&r.to) else {
            continue;
        };
        let names_an_item = r.to.len() > target.len();
        let below = target.len() > r.from.len() && target.starts_with(&r.from);
        if r.in_test || !is_module_root(file) || !names_an_item || !below {
            continue;
        }
        if let Some(name) = r.to.last() {
            let mut alias = r.from.clone();
            alias.push(name.clone());
            aliases.insert(alias, r.to.clone());
        }
    }
    aliases
}

/// `to` with a leading path that a re-export stands for replaced by what it re-exports
/// (`agent::Isolator::new` → `agent::isolation::Isolator::new`).
fn seen_through(aliases: &BTreeMap<Vec<String>, Vec<String>>, to: &[String]) -> Vec<String> {
    (1..=to.len())
        .rev()
        .find_map(|n| {
            aliases.get(&to[..n]).map(|target| {
                let mut path = target.clone();
                path.extend_from_slice(&to[n..]);
                path
            })
        })
        .unwrap_or_else(|| to.to_vec())
}

#[test]
fn a_path_through_a_re_export_is_the_path_of_what_it_re_exports() {
    let path = |p: &str| p.split("::").map(str::to_string).collect::<Vec<_>>();
    let aliases = BTreeMap::from([(path("agent::Isolator"), path("agent::isolation::Isolator"))]);
    assert_eq!(
        seen_through(&aliases, &path("agent::Isolator::new")),
        path("agent::isolation::Isolator::new")
    );
    assert_eq!(
        seen_through(&aliases, &path("agent::shared::Shared")),
        path("agent::shared::Shared")
    );
    // The real scan knows the agent's re-exports.
    assert_eq!(
        reexports(&scan()).get(&path("agent::Isolator")),
        Some(&path("agent::isolation::Isolator"))
    );
}

/// `mod.rs`, `lib.rs`, or `NAME.rs` beside a `NAME/` folder of its children (the 2018 layout).
fn is_module_root(file: &Path) -> bool {
    file.file_name()
        .is_some_and(|n| n == "mod.rs" || n == "lib.rs")
        || file.with_extension("").is_dir()
}

/// Every elementary cycle found by a depth-first search (one per back edge), shortest first.
fn find_cycles(edges: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    fn dfs(
        node: &PathBuf,
        edges: &BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        stack: &mut Vec<PathBuf>,
        done: &mut BTreeSet<PathBuf>,
        out: &mut Vec<Vec<PathBuf>>,
    ) {
        if let Some(pos) = stack.iter().position(|n| n == node) {
            let mut cycle = stack[pos..].to_vec();
            cycle.push(node.clone());
            out.push(cycle);
            return;
        }
        if done.contains(node) {
            return;
        }
        stack.push(node.clone());
        for next in edges.get(node).into_iter().flatten() {
            dfs(next, edges, stack, done, out);
        }
        stack.pop();
        done.insert(node.clone());
    }
    let mut out = Vec::new();
    let mut done = BTreeSet::new();
    for node in edges.keys() {
        dfs(node, edges, &mut Vec::new(), &mut done, &mut out);
    }
    out.sort_by_key(Vec::len);
    out
}

/// The cycle finder itself, on a made-up graph.
#[test]
fn the_cycle_finder_finds_a_three_file_cycle() {
    let a = PathBuf::from("a.rs");
    let b = PathBuf::from("b.rs");
    let c = PathBuf::from("c.rs");
    let mut edges = BTreeMap::new();
    edges.insert(a.clone(), BTreeSet::from([b.clone()]));
    edges.insert(b.clone(), BTreeSet::from([c.clone()]));
    edges.insert(c.clone(), BTreeSet::from([a.clone()]));
    let cycles = find_cycles(&edges);
    assert_eq!(cycles.len(), 1);
    assert_eq!(cycles[0].len(), 4);
}

/// Where a file implements a type named `name` (inherent or trait `impl` blocks, inline modules
/// and test code included): the line of each block.
fn impl_blocks_of(name: &str, ast: &syn::File) -> Vec<usize> {
    struct Impls<'a> {
        name: &'a str,
        lines: Vec<usize>,
    }
    impl<'ast> Visit<'ast> for Impls<'_> {
        fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
            if let syn::Type::Path(p) = &*item.self_ty
                && p.path.segments.last().is_some_and(|s| s.ident == self.name)
            {
                self.lines.push(item.impl_token.span.start().line);
            }
            syn::visit::visit_item_impl(self, item);
        }
    }
    let mut impls = Impls {
        name,
        lines: Vec::new(),
    };
    impls.visit_file(ast);
    impls.lines
}

/// The agent's `Conversation` is plain state (issue 45 item 1): its data and constructor, in one
/// `impl` block of `conversation.rs`. Methods of it in other files let the stages of a turn call
/// each other through `self`, round cycles the import scan above cannot see; as functions of
/// the parts they use, every stage names what it depends on in its `use` lines.
#[test]
fn the_agents_conversation_is_plain_state_implemented_in_one_file() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/agent/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut blocks = Vec::new();
    for file in &files {
        let ast = syn::parse_file(&std::fs::read_to_string(file).unwrap()).unwrap();
        for line in impl_blocks_of("Conversation", &ast) {
            blocks.push(format!("{}:{line}", display(file)));
        }
    }
    let home = "crates/agent/src/conversation.rs:";
    assert!(
        blocks.len() == 1 && blocks[0].starts_with(home),
        "`impl Conversation` must be one block in {}; found:\n{}",
        home.trim_end_matches(':'),
        blocks.join("\n")
    );
}

/// The scan above, on made-up code: an inherent and a trait block, one of them in an inline
/// module, are both found; another type's block and a mere mention are not.
#[test]
fn the_impl_scan_finds_blocks_in_modules_and_of_traits() {
    let ast: syn::File = syn::parse_str(
        "struct Conversation; impl Conversation { fn f(&self) {} } \
         mod m { impl Clone for super::Conversation { fn clone(&self) -> Self { todo!() } } } \
         impl Other { fn g(c: &Conversation) {} }",
    )
    .unwrap();
    assert_eq!(impl_blocks_of("Conversation", &ast), vec![1, 1]);
}
