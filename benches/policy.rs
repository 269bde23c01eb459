//! Parse + decide throughput over the policy corpus (tests/fixtures/policy_corpus.rs).
//!
//! Two figures: the deny-by-default allow-list engine and the interactive default (built in
//! `benches/support/policy_engines.rs`), each over the
//! whole corpus per iteration; commands per second = corpus size / time per iteration.
//!
//! With `PABLO_BENCH_PARSER=helper` the bench starts the way the `pablo` binary does
//! (`pablo_policy::isolate_shell_parser`), so every parse of a text that is not plain words goes
//! to a helper process (this bench binary, started as one) over its pipes: the path of the shipped
//! binary. Without it, parses run in process, as the library does. Plain words are split in
//! process on both paths. The helper's answers are kept by text, so after the first pass over the
//! corpus every parse is a lookup; `corpus_interactive_default_new_texts` measures the same engine
//! with every text new (a comment no earlier pass had), and `corpus_parsed_texts_new` the same for
//! the texts that are not plain words only: every one of those a round trip.

// A bench is test code: a failed setup should stop it loudly.
#![allow(clippy::unwrap_used)]

use criterion::{Criterion, Throughput, criterion_group};
#[path = "support/policy_engines.rs"]
mod policy_engines;
use pablo_policy::isolate_shell_parser;
use policy_engines::PolicyEngines;

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
    // Every text new: each command with a comment no earlier pass had, so no parse is a kept one.
    let mut pass = 0u64;
    g.bench_function("corpus_interactive_default_new_texts", |b| {
        b.iter(|| {
            pass += 1;
            for (cmd, _) in CORPUS {
                let text = format!("{cmd} # {pass}");
                std::hint::black_box(engines.check_default(&text));
            }
        })
    });
    // The same, for the texts that are not plain words only: each one a round trip to the helper
    // with `PABLO_BENCH_PARSER=helper` (plain words are split in process on either path).
    let parsed: Vec<&str> = CORPUS
        .iter()
        .map(|(cmd, _)| *cmd)
        .filter(|cmd| !pablo_policy::plain::is_plain(&format!("{cmd} # 0")))
        .collect();
    g.throughput(Throughput::Elements(parsed.len() as u64));
    g.bench_function("corpus_parsed_texts_new", |b| {
        b.iter(|| {
            pass += 1;
            for cmd in &parsed {
                let text = format!("{cmd} # {pass}");
                std::hint::black_box(engines.check_default(&text));
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench);

fn main() {
    if std::env::var_os("PABLO_BENCH_PARSER").is_some_and(|v| v == "helper") {
        // Started as the helper, this process serves parses and ends here.
        if let Some(code) = isolate_shell_parser() {
            std::process::exit(i32::from(code != std::process::ExitCode::SUCCESS));
        }
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
