//! Language servers (docs/lsp.md): how long the approval prompt waits for its diagnostics line,
//! and what pablo pays when no server is configured.
//!
//! `preview_to_diagnostics`: pyright (tests/lsp_servers, installed by `.ci/run`) warm on a
//! 1,000-line Python file; each iteration is one check as the prompt runs it — the file's current
//! text and an edited text (one line changed, a type error in every other iteration) sent as
//! unsaved versions, both answers awaited, compared. Target ≤ 1 s. Skipped, saying so, when node
//! or pyright is absent.
//!
//! `no_server`: the checks an edit and a read make when the session has no server (a hub built
//! with no `[lsp]` and nothing on the `PATH`): `covers` and `warm`, beside an empty closure as
//! the peer. Target: no measurable cost.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use std::sync::Arc;

use pablo_config::LspServerEntry;
use pablo_lsp::{LspHub, LspSetup};
use pablo_protocol::PreviewDiagnostics;

/// The hub of a trusted workspace whose servers are the `[lsp.NAME]` tables of `toml` (nothing
/// else from the config layers), with `PATH` as the whole command environment, the default
/// sandbox settings and the servers' logs in `workspace/.logs`.
struct LspBenchHub {
    hub: Arc<LspHub>,
}

impl LspBenchHub {
    fn new(workspace: &Path, toml: &str, path: &str) -> Self {
        let entries = LspServerEntry::from_config_text(toml, Path::new("bench.toml"))
            .expect("the bench's [lsp] config parses");
        let setup = LspSetup {
            entries,
            env: vec![("PATH".into(), path.into())],
            sandbox: Default::default(),
            log_dir: workspace.join(".logs"),
            project_trusted: true,
        };
        Self {
            hub: Arc::new(LspHub::new(workspace, setup)),
        }
    }

    /// How many servers the hub has (the built-ins found on `PATH` included).
    fn server_count(&self) -> usize {
        self.hub.server_names().len()
    }

    /// One check as the approval prompt runs it, on `rt`: `old` and `new` sent as unsaved
    /// versions of `rel`, both answers awaited and compared. Panics unless the servers answered
    /// (a check that timed out or found no server is not what the bench measures).
    fn check_change_ready(&self, rt: &tokio::runtime::Runtime, rel: &str, old: &str, new: &str) {
        let r = rt.block_on(self.hub.check_change(rel, Some(old), new));
        assert!(matches!(r, PreviewDiagnostics::Ready(_)), "{r:?}");
    }

    /// What an edit and a read of `rel` ask the hub: whether a server covers it, and a warm-up of
    /// the servers that do (needs a runtime entered); whether it is covered.
    fn covers_and_warm(&self, rel: &str) -> bool {
        let covered = self.hub.covers(rel);
        self.hub.warm(rel);
        covered
    }
}

fn python_file(lines: usize) -> String {
    let mut s = String::from("def greet(name: str) -> str:\n    return \"hi \" + name\n\n\n");
    let mut i = 0;
    while s.lines().count() < lines - 1 {
        s.push_str(&format!(
            "def f{i}(x: int) -> int:\n    y = x * {i}\n    return y + len(greet(\"n{i}\"))\n\n"
        ));
        i += 1;
    }
    s.push_str("print(greet(\"x\"))\n");
    s
}

fn preview_to_diagnostics(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let script = root.join("tests/lsp_servers/node_modules/pyright/langserver.index.js");
    let node = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("node"))
            .find(|p| p.is_file())
    });
    let Some(node) = node.filter(|_| script.is_file()) else {
        eprintln!("skipped preview_to_diagnostics: node or tests/lsp_servers pyright is missing");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let old = python_file(1000);
    std::fs::write(ws.join("big.py"), &old).unwrap();
    let toml = format!(
        "[lsp.pyright]\ncommand = \"{}\"\nargs = [\"{}\", \"--stdio\"]\nfiletypes = [\"python\"]\n\
         wait_ms = 30000\n",
        node.display(),
        script.display()
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    let hub = LspBenchHub::new(&ws, &toml, &std::env::var("PATH").unwrap_or_default());
    // Warm: the server is started and has analysed the file once.
    hub.check_change_ready(&rt, "big.py", &old, &old);
    let mut n = 0u64;
    let mut group = c.benchmark_group("lsp");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(30));
    group.bench_function("preview_to_diagnostics_1000_lines_pyright_warm", |b| {
        b.iter(|| {
            n += 1;
            let edited = if n.is_multiple_of(2) {
                old.replace("print(greet(\"x\"))", &format!("print(greet({n}))"))
            } else {
                old.replace("print(greet(\"x\"))", &format!("print(greet(\"{n}\"))"))
            };
            hub.check_change_ready(&rt, "big.py", &old, &edited);
        })
    });
    group.finish();
}

fn no_server(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let hub = LspBenchHub::new(dir.path(), "", "/nonexistent");
    assert_eq!(hub.server_count(), 0);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let _guard = rt.enter();
    let mut group = c.benchmark_group("lsp_no_server");
    group.bench_function("covers_and_warm", |b| {
        b.iter(|| hub.covers_and_warm(std::hint::black_box("src/app.py")))
    });
    group.bench_function("peer_empty", |b| {
        b.iter(|| std::hint::black_box("src/app.py").is_empty())
    });
    group.finish();
}

criterion_group!(benches, preview_to_diagnostics, no_server);
criterion_main!(benches);
