//! Parse + decide throughput over the policy corpus (tests/fixtures/policy_corpus.rs).
//!
//! Two figures: the deny-by-default allow-list engine and the interactive default (built in
//! `pablo::harness::PolicyEngines`), each over the
//! whole corpus per iteration; commands per second = corpus size / time per iteration.

// A bench is test code: a failed setup should stop it loudly.
#![allow(clippy::unwrap_used)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pablo::harness::PolicyEngines;

const CORPUS: &[(&str, &str)] = include!("../tests/fixtures/policy_corpus.rs");

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let engines = PolicyEngines::new(tmp.path());
    let mut g = c.benchmark_group("policy");
    g.throughput(Throughput::Elements(CORPUS.len() as u64));
    g.bench_function("corpus_allow_list", |b| {
        b.iter(|| {
            for (cmd, _) in CORPUS {
                std::hint::black_box(engines.check_allow_list(cmd));
            }
        })
    });
    g.bench_function("corpus_interactive_default", |b| {
        b.iter(|| {
            for (cmd, _) in CORPUS {
                std::hint::black_box(engines.check_default(cmd));
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
