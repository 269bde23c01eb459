//! What `benches/csv_analyze.rs` measures; see [`super`].
//!
//! `csv.analyze`'s full analysis of a file's bytes with the tool's default options.

use crate::tools::csv_analyze::{CsvOptions, analyze};

/// The largest file `csv.analyze` reads (the bench's table stays just under it).
pub const CSV_ANALYZE_MAX_BYTES: u64 = crate::tools::csv_analyze::MAX_BYTES;

/// The measured step: one full analysis of `bytes` (named `bench.csv`, default options); the
/// data rows it counted (the header not counted).
pub fn csv_analyze_rows(bytes: &[u8]) -> u64 {
    analyze(bytes, &CsvOptions::default(), "bench.csv")
        .expect("the bench table is analysed in full")
        .rows
}
