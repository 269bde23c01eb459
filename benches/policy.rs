//! Parse + decide throughput over the policy corpus (tests/fixtures/policy_corpus.rs).
//!
//! Two figures: the deny-by-default allow-list engine and the interactive default, each over the
//! whole corpus per iteration; commands per second = corpus size / time per iteration.

// A bench is test code: a failed setup should stop it loudly.
#![allow(clippy::unwrap_used)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pablo::config::{ConfigFile, Dirs, Layers};
use pablo::policy::{CliFlags, PolicyEngine, cli};

const CORPUS: &[(&str, &str)] = include!("../tests/fixtures/policy_corpus.rs");

const ALLOW_LIST: &str = r#"
[options.shell.commands]
default = "deny"
allow = [
  { id = "t.git-status", executable = "git", args = ["status"], match = "prefix" },
  { id = "t.wc", executable = "wc", args = [], match = "prefix" },
  { id = "t.ls", executable = "ls", args = [], match = "prefix" },
]
"#;

fn engines(root: &std::path::Path) -> (PolicyEngine, PolicyEngine) {
    let ws = root.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let ws = std::fs::canonicalize(ws).unwrap();
    let dirs = Dirs {
        config: root.join("config"),
        data: root.join("data"),
        state: root.join("state"),
    };
    let layers = Layers {
        explicit: Some((
            "bench.toml".into(),
            ConfigFile::parse(ALLOW_LIST, std::path::Path::new("bench.toml")).unwrap(),
        )),
        ..Default::default()
    };
    let strict = PolicyEngine::build(&ws, &dirs, &layers, None, CliFlags::default()).unwrap();
    let open =
        PolicyEngine::build(&ws, &dirs, &Layers::default(), None, CliFlags::default()).unwrap();
    (strict, open)
}

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let (strict, open) = engines(tmp.path());
    let mut g = c.benchmark_group("policy");
    g.throughput(Throughput::Elements(CORPUS.len() as u64));
    g.bench_function("corpus_allow_list", |b| {
        b.iter(|| {
            for (cmd, _) in CORPUS {
                std::hint::black_box(cli::check(&strict, cmd));
            }
        })
    });
    g.bench_function("corpus_interactive_default", |b| {
        b.iter(|| {
            for (cmd, _) in CORPUS {
                std::hint::black_box(cli::check(&open, cmd));
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
