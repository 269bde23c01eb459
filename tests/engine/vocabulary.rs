//! Tool names and error codes are spelled once, in the tables that define them (`ToolName` and
//! `MCP_PREFIX` in `crates/core/src/names.rs`, `ErrorCode` in `crates/core/src/codes.rs`);
//! everything else names them through those types. This reads every string literal of `src/` and
//! `crates/*/src/` with a real Rust
//! parser, macro arguments included (`json!`, `format!`, `matches!`), and fails on one that
//! spells a tool name outside `crates/core/` and the catalog (`crates/tools/`), or an error code
//! outside its table. Test code is not read: a test may well write the JSON a model sends.
//! Attributes are not read either: doc comments are prose, and serde's renames are wire names.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use pablo::core::{ErrorCode, MCP_PREFIX, ToolName};
use strum::IntoEnumIterator;
use syn::visit::{self, Visit};

/// Words spelled like a code that are not a code where they appear: (file, word, what it is).
const NOT_CODES: &[(&str, &str, &str)] = &[
    (
        "crates/tools/src/fetch_rules.rs",
        "internal",
        "the `.internal` DNS suffix, refused as a local name",
    ),
    (
        "crates/tui/src/state/events.rs",
        "interrupted",
        "the notice a cancelled turn leaves in the transcript",
    ),
];

/// One string literal of non-test code: its value and line.
#[derive(Debug)]
struct Literal {
    value: String,
    line: usize,
}

#[derive(Default)]
struct Literals {
    found: Vec<Literal>,
    /// Files of modules declared `#[cfg(test)] mod name;` here (by name).
    test_modules: Vec<String>,
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        (a.path().is_ident("cfg")
            && a.meta
                .require_list()
                .is_ok_and(|l| l.tokens.to_string().trim() == "test"))
            || a.path().is_ident("test")
    })
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    use syn::Item;
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::ForeignMod(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

impl Literals {
    fn literal_tokens(&mut self, tokens: proc_macro2::TokenStream) {
        for tt in tokens {
            match tt {
                proc_macro2::TokenTree::Group(g) => self.literal_tokens(g.stream()),
                proc_macro2::TokenTree::Literal(l) => {
                    if let syn::Lit::Str(s) = syn::Lit::new(l.clone()) {
                        self.found.push(Literal {
                            value: s.value(),
                            line: l.span().start().line,
                        });
                    }
                }
                _ => {}
            }
        }
    }
}

impl<'ast> Visit<'ast> for Literals {
    fn visit_attribute(&mut self, _: &'ast syn::Attribute) {}

    fn visit_item(&mut self, item: &'ast syn::Item) {
        if is_cfg_test(item_attrs(item)) {
            if let syn::Item::Mod(m) = item
                && m.content.is_none()
            {
                self.test_modules.push(m.ident.to_string());
            }
            return;
        }
        visit::visit_item(self, item);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_cfg_test(&f.attrs) {
            visit::visit_impl_item_fn(self, f);
        }
    }

    fn visit_lit_str(&mut self, s: &'ast syn::LitStr) {
        self.found.push(Literal {
            value: s.value(),
            line: s.span().start().line,
        });
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.literal_tokens(m.tokens.clone());
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The file a `mod name;` declared in `file` lives in.
fn child_files(file: &Path, name: &str) -> [PathBuf; 2] {
    let dir = match file.file_name().and_then(|n| n.to_str()) {
        Some("mod.rs" | "lib.rs" | "main.rs") => file.parent().unwrap().to_path_buf(),
        _ => file.with_extension(""),
    };
    [
        dir.join(format!("{name}.rs")),
        dir.join(name).join("mod.rs"),
    ]
}

/// Every string literal of the non-test code of `src/` and of the workspace's crates
/// (`crates/*/src/`), by file (relative, forward slashes).
fn literals_of_src() -> Vec<(String, Literal)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    for krate in std::fs::read_dir(root.join("crates")).unwrap() {
        rust_files(&krate.unwrap().path().join("src"), &mut files);
    }
    files.sort();
    let mut scanned = Vec::new();
    let mut test_files = BTreeSet::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let ast = syn::parse_file(&text)
            .unwrap_or_else(|e| panic!("{} does not parse: {e}", file.display()));
        let mut l = Literals::default();
        l.visit_file(&ast);
        for name in &l.test_modules {
            test_files.extend(child_files(file, name));
        }
        scanned.push((file.clone(), l.found));
    }
    // A test file's own children (`snapshot_tests.rs` with `snapshot_tests/results.rs`) are tests.
    let test_dirs: Vec<PathBuf> = test_files.iter().map(|f| f.with_extension("")).collect();
    let mut out = Vec::new();
    for (file, found) in scanned {
        if test_files.contains(&file) || test_dirs.iter().any(|d| file.starts_with(d)) {
            continue;
        }
        let rel = file
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        out.extend(found.into_iter().map(|lit| (rel.clone(), lit)));
    }
    out
}

#[test]
fn no_tool_name_or_error_code_is_spelled_outside_the_tables_that_define_them() {
    let names: BTreeSet<&str> = ToolName::iter()
        .flat_map(|t| [t.native(), t.provider()])
        .chain([MCP_PREFIX])
        .collect();
    let codes: BTreeSet<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    let mut wrong = Vec::new();
    let mut excused = BTreeSet::new();
    for (file, lit) in literals_of_src() {
        let v = lit.value.as_str();
        if names.contains(v)
            && !file.starts_with("crates/core/src/")
            && !file.starts_with("crates/tools/src/")
        {
            wrong.push(format!(
                "{file}:{}: the tool name {v:?} (use pablo::core::ToolName)",
                lit.line
            ));
        }
        if codes.contains(v) && file != "crates/core/src/codes.rs" {
            match NOT_CODES.iter().find(|(f, w, _)| *f == file && *w == v) {
                Some(entry) => {
                    excused.insert(*entry);
                }
                None => wrong.push(format!(
                    "{file}:{}: the error code {v:?} (use pablo::core::ErrorCode)",
                    lit.line
                )),
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let stale: Vec<_> = NOT_CODES.iter().filter(|e| !excused.contains(e)).collect();
    assert!(
        stale.is_empty(),
        "NOT_CODES lists words no longer found: {stale:?}"
    );
}

#[test]
fn the_literal_reader_sees_macro_arguments_and_skips_tests_and_attributes() {
    let ast = syn::parse_file(
        r##"
        /// "fs.read" in prose
        #[serde(rename = "denied")]
        struct S;
        fn f() {
            let _ = "plain";
            let _ = json!({"code": "rejected"});
            let _ = matches!(x, "fs_read" | "b");
        }
        #[cfg(test)]
        mod tests { fn g() { let _ = "in a test"; } }
        #[cfg(test)]
        mod snapshot_tests;
        "##,
    )
    .unwrap();
    let mut l = Literals::default();
    l.visit_file(&ast);
    let values: Vec<&str> = l.found.iter().map(|l| l.value.as_str()).collect();
    assert_eq!(values, ["plain", "code", "rejected", "fs_read", "b"]);
    assert_eq!(l.test_modules, ["snapshot_tests"]);
}
