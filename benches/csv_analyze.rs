//! csv.analyze speed: a 10 MiB file (the tool's size limit) analyzed in full.
//!
//! Target (issue 17): at most 150 ms on the 2-core build machine. The peer measured in the same
//! run is the `csv` crate alone reading every record of the same bytes (`ByteRecord`, no
//! UTF-8 check, no statistics): the floor any RFC 4180 analysis built on it starts from.
//!
//! The analysis is `pablo-tools`' own API (`csv_analyze::analyze`), as the tool runs it on a
//! file's bytes with its default options.

// Test code: a failed unwrap is a failed bench, which is what it should be; the bench says what
// it measured on stderr.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pablo_tools::csv_analyze::{CsvOptions, MAX_BYTES, analyze};

/// A sales-like table just under 10 MiB: ids, prices, quantities, a boolean, an ISO date, a
/// category, a quoted free-text note (some with delimiters and doubled quotes inside).
fn table() -> Vec<u8> {
    let mut rng = fastrand::Rng::with_seed(17);
    let categories = [
        "tools", "garden", "kitchen", "office", "toys", "books", "music", "sports",
    ];
    let mut out = String::from("id,price,quantity,in_stock,date,category,note\n");
    let mut id = 0u64;
    loop {
        id += 1;
        let note = match rng.u8(0..4) {
            0 => format!("\"said \"\"ok\"\", {}\"", rng.u32(..)),
            1 => format!("\"{} units, {} left\"", rng.u32(0..500), rng.u32(0..50)),
            _ => format!("note-{}", rng.u32(0..5000)),
        };
        let line = format!(
            "{id},{}.{:02},{},{},20{:02}-{:02}-{:02},{},{}\n",
            rng.u32(0..2000),
            rng.u32(0..100),
            rng.u32(0..1000),
            if rng.bool() { "true" } else { "false" },
            rng.u32(10..25),
            rng.u32(1..13),
            rng.u32(1..29),
            categories[rng.usize(..categories.len())],
            note
        );
        if out.len() + line.len() > MAX_BYTES as usize {
            break;
        }
        out.push_str(&line);
    }
    out.into_bytes()
}

/// The measured step: one full analysis of `bytes` (named `bench.csv`, default options); the
/// data rows it counted (the header not counted).
fn csv_analyze_rows(bytes: &[u8]) -> u64 {
    analyze(bytes, &CsvOptions::default(), "bench.csv")
        .expect("the bench table is analysed in full")
        .rows
}

fn bench(c: &mut Criterion) {
    let bytes = table();
    // The bench measures a full analysis, not a refusal.
    let rows = csv_analyze_rows(&bytes);
    eprintln!("{} bytes, {rows} rows", bytes.len());
    let mut g = c.benchmark_group("csv_10mib");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.sample_size(20);
    g.bench_function("analyze", |b| {
        b.iter(|| csv_analyze_rows(black_box(&bytes)))
    });
    g.bench_function("peer_csv_crate_read_only", |b| {
        b.iter(|| {
            let mut r = csv::ReaderBuilder::new()
                .has_headers(false)
                .from_reader(black_box(&bytes[..]));
            let mut rec = csv::ByteRecord::new();
            let mut fields = 0usize;
            while r.read_byte_record(&mut rec).unwrap() {
                fields += rec.len();
            }
            fields
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
