//! csv.analyze: property tests against a reference computation on generated tables (quotes,
//! doubled quotes, delimiters and line breaks inside fields, CRLF), the limits and path rules
//! through the real tool. (The run of the binary with no flags is in `tests/catalog/csv.rs`.)
//!
//! They were among pablo's own tests (`src/tests/catalog_csv.rs`, on the catalog fixture of
//! `src/tests/catalog.rs`) until the catalog became a crate: they test this tool alone, so they
//! live beside it and its figures stay crate-private. `Fixture` is that fixture cut to what they
//! use.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use pablo_core::{EventSink, ToolFailure};
use pablo_workspace::Workspace;
use proptest::prelude::*;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{Analysis, CsvAnalyze, CsvOptions, MAX_COLUMNS, MAX_ROWS};
use crate::{Catalog, Host, ToolContext, csv_analyze};

/// A workspace, a session state directory outside it, and a catalog of the tools under test.
struct Fixture {
    tmp: tempfile::TempDir,
    catalog: Catalog,
    host: Arc<Host>,
}

impl Fixture {
    fn new(register: impl FnOnce(&mut Catalog, &Arc<Workspace>)) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("ws")).unwrap();
        let ws = Arc::new(Workspace::open(&tmp.path().join("ws")).unwrap());
        let mut catalog = Catalog::new();
        register(&mut catalog, &ws);
        let host = Host::new(
            ws,
            tmp.path().join("data/sessions/s1"),
            &pablo_config::ShellOptions::default(),
        );
        Self {
            tmp,
            catalog,
            host: Arc::new(host),
        }
    }

    fn ws(&self) -> PathBuf {
        self.tmp.path().join("ws")
    }

    fn put(&self, p: &str, bytes: impl AsRef<[u8]>) {
        let path = self.ws().join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    /// validate → preview → commit, as the agent calls a tool.
    async fn call(&self, tool: &str, args: Value) -> Result<Value, ToolFailure> {
        let t = self.catalog.get(tool).unwrap();
        if let Some(v) = self.catalog.validator(t.name()) {
            v.validate(t.name(), &args)?;
        }
        let ctx = ToolContext {
            call_id: "call-1".into(),
            cancel: CancellationToken::new(),
            events: EventSink::discard(),
            host: self.host.clone(),
        };
        let preview = t.preview(&args, &ctx).await?;
        t.commit(&args, &preview, &ctx).await
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Int,
    Decimal,
    Bool,
    Date,
    Text,
    MostlyNumeric,
}

fn cell(kind: Kind) -> BoxedStrategy<String> {
    let text = prop::collection::vec(
        prop::sample::select(vec![
            'a', 'b', 'Z', ' ', ',', ';', '\t', '|', '"', '\n', '\r', 'é', '1', '.', '\'',
        ]),
        0..8,
    )
    .prop_map(|cs| cs.into_iter().collect::<String>());
    let missing = prop::sample::select(vec!["", " ", "  \t"]).prop_map(str::to_string);
    let value: BoxedStrategy<String> = match kind {
        Kind::Int => (-1000i64..1000).prop_map(|v| v.to_string()).boxed(),
        Kind::Decimal => (-100_000i64..100_000)
            .prop_map(|v| format!("{:.2}", v as f64 / 100.0))
            .boxed(),
        Kind::Bool => prop::sample::select(vec!["true", "FALSE", "yes", "No"])
            .prop_map(str::to_string)
            .boxed(),
        Kind::Date => (1990u32..2030, 1u32..=12, 1u32..=28)
            .prop_map(|(y, m, d)| format!("{y:04}-{m:02}-{d:02}"))
            .boxed(),
        Kind::Text => text.boxed(),
        Kind::MostlyNumeric => prop_oneof![
            8 => (-50i64..50).prop_map(|v| format!(" {v} ")),
            1 => prop::sample::select(vec!["n/a", "-", "?"]).prop_map(str::to_string),
        ]
        .boxed(),
    };
    prop_oneof![6 => value, 1 => missing].boxed()
}

#[derive(Debug, Clone)]
struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

fn table() -> impl Strategy<Value = Table> {
    let kind = prop::sample::select(vec![
        Kind::Int,
        Kind::Decimal,
        Kind::Bool,
        Kind::Date,
        Kind::Text,
        Kind::MostlyNumeric,
    ]);
    (prop::collection::vec(kind, 1..=5), 0usize..30).prop_flat_map(|(kinds, n)| {
        let header = prop::collection::vec(
            prop::collection::vec(
                prop::sample::select(vec!['n', 'm', ' ', ',', '"', '\n']),
                0..5,
            )
            .prop_map(|cs| cs.into_iter().collect::<String>()),
            kinds.len(),
        );
        let row: Vec<BoxedStrategy<String>> = kinds.iter().map(|k| cell(*k)).collect();
        (header, prop::collection::vec(row, n)).prop_map(|(header, rows)| Table { header, rows })
    })
}

/// RFC 4180 as a careful writer does it: quote a field holding a quote, a line break or any
/// candidate delimiter, double the quotes inside; a lone empty field is quoted so the line is
/// not blank.
fn write_csv(t: &Table, delim: char, crlf: bool, final_newline: bool) -> String {
    let eol = if crlf { "\r\n" } else { "\n" };
    let field = |f: &str, alone: bool| {
        if f.contains(['"', '\n', '\r', ',', ';', '\t', '|']) || (alone && f.is_empty()) {
            format!("\"{}\"", f.replace('"', "\"\""))
        } else {
            f.to_string()
        }
    };
    let line = |cells: &[String]| {
        cells
            .iter()
            .map(|c| field(c, cells.len() == 1))
            .collect::<Vec<_>>()
            .join(&delim.to_string())
    };
    let mut out = line(&t.header);
    for r in &t.rows {
        out.push_str(eol);
        out.push_str(&line(r));
    }
    if final_newline {
        out.push_str(eol);
    }
    out
}

/// The reference: every figure computed straight from the generated cells, by the spec's words.
fn check_against_reference(t: &Table, a: &Analysis) -> Result<(), TestCaseError> {
    let number = regex::Regex::new(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$").unwrap();
    let date = regex::Regex::new(r"^\d{4}-\d{2}-\d{2}$").unwrap();
    prop_assert_eq!(a.rows as usize, t.rows.len());
    prop_assert_eq!(a.columns.len(), t.header.len());
    let mut warned = 0;
    for (i, c) in a.columns.iter().enumerate() {
        let expect_name = match t.header[i].trim() {
            "" => format!("column {}", i + 1),
            n => n.to_string(),
        };
        prop_assert_eq!(&c.name, &expect_name);
        let values: Vec<&str> = t
            .rows
            .iter()
            .map(|r| r[i].trim())
            .filter(|v| !v.is_empty())
            .collect();
        prop_assert_eq!(c.values as usize, values.len());
        prop_assert_eq!(c.missing as usize, t.rows.len() - values.len());
        let distinct: HashSet<&str> = values.iter().copied().collect();
        prop_assert_eq!(c.distinct as usize, distinct.len());
        let nums: Vec<f64> = values
            .iter()
            .filter(|v| number.is_match(v))
            .map(|v| v.parse::<f64>().unwrap())
            .collect();
        let bools = values.iter().all(|v| {
            matches!(
                v.to_ascii_lowercase().as_str(),
                "true" | "false" | "yes" | "no"
            )
        });
        let dates = values.iter().all(|v| date.is_match(v));
        let kind = if values.is_empty() {
            "empty"
        } else if nums.len() == values.len() {
            "numeric"
        } else if bools {
            "boolean"
        } else if dates {
            "date"
        } else {
            "text"
        };
        prop_assert_eq!(c.kind.as_str(), kind, "column {}", i);
        match kind {
            "numeric" => {
                let mut s = nums.clone();
                s.sort_by(f64::total_cmp);
                let n = s.len() as f64;
                let sum: f64 = s.iter().sum();
                let mean = sum / n;
                let q = |p: f64| {
                    let h = (s.len() - 1) as f64 * p;
                    let lo = h.floor() as usize;
                    let hi = (lo + 1).min(s.len() - 1);
                    s[lo] + (h - lo as f64) * (s[hi] - s[lo])
                };
                let close = |got: Option<f64>, want: f64| {
                    got.is_some_and(|g| (g - want).abs() <= 1e-9 * want.abs().max(1.0))
                };
                prop_assert_eq!(c.min, Some(s[0]));
                prop_assert_eq!(c.max, Some(s[s.len() - 1]));
                prop_assert!(close(c.sum, sum), "sum {:?} vs {}", c.sum, sum);
                prop_assert!(close(c.mean, mean), "mean {:?} vs {}", c.mean, mean);
                prop_assert!(close(c.median, q(0.5)), "median {:?}", c.median);
                prop_assert!(close(c.q1, q(0.25)), "q1 {:?}", c.q1);
                prop_assert!(close(c.q3, q(0.75)), "q3 {:?}", c.q3);
                if s.len() > 1 {
                    let var = s.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
                    prop_assert!(close(c.stddev, var.sqrt()), "sd {:?}", c.stddev);
                } else {
                    prop_assert_eq!(c.stddev, None);
                }
            }
            "boolean" => {
                let t_count = values
                    .iter()
                    .filter(|v| matches!(v.to_ascii_lowercase().as_str(), "true" | "yes"))
                    .count() as u64;
                prop_assert_eq!(c.true_count, Some(t_count));
                prop_assert_eq!(c.false_count, Some(values.len() as u64 - t_count));
            }
            "date" => {
                prop_assert_eq!(c.first.as_deref(), values.iter().min().copied());
                prop_assert_eq!(c.last.as_deref(), values.iter().max().copied());
            }
            "text" => {
                let mut counts: HashMap<&str, u64> = HashMap::new();
                for v in &values {
                    *counts.entry(v).or_default() += 1;
                }
                let mut top: Vec<(&str, u64)> = counts.into_iter().collect();
                top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
                top.truncate(csv_analyze::TOP_VALUES);
                let got: Vec<(&str, u64)> = c
                    .top
                    .as_ref()
                    .unwrap()
                    .iter()
                    .map(|t| (t.value.as_str(), t.count))
                    .collect();
                prop_assert_eq!(got, top);
                if nums.len() * 2 > values.len() {
                    warned += 1;
                    let odd = values.iter().find(|v| !number.is_match(v)).unwrap();
                    let (name, odd) = (format!("{:?}", c.name), format!("{odd:?}"));
                    prop_assert!(
                        a.warnings
                            .iter()
                            .any(|w| w.contains(&name) && w.contains(&odd)),
                        "no warning naming {} and {} in {:?}",
                        name,
                        odd,
                        a.warnings
                    );
                }
            }
            _ => {}
        }
    }
    prop_assert_eq!(a.warnings.len(), warned);
    Ok(())
}

proptest! {
    // 256 cases by default; PROPTEST_CASES asks for more.
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
    ))]

    #[test]
    fn generated_tables_match_the_reference_computation(
        t in table(),
        delim in prop::sample::select(vec![',', ';', '\t', '|']),
        crlf in any::<bool>(),
        final_newline in any::<bool>(),
        detect in any::<bool>(),
    ) {
        let text = write_csv(&t, delim, crlf, final_newline);
        let options = CsvOptions {
            delimiter: (!detect).then_some(delim as u8),
            has_header: true,
        };
        let a = csv_analyze::analyze(text.as_bytes(), &options, "gen.csv")
            .map_err(|e| TestCaseError::fail(format!("{e} in {text:?}")))?;
        if t.header.len() > 1 {
            prop_assert_eq!(&a.delimiter, &delim.to_string());
        }
        check_against_reference(&t, &a)?;
    }
}

fn csv_fixture() -> Fixture {
    Fixture::new(|c, ws| c.register(Arc::new(CsvAnalyze::new(ws.clone()))).unwrap())
}

#[tokio::test]
async fn a_file_is_analyzed_through_the_workspace_with_quotes_and_crlf() {
    let f = csv_fixture();
    f.put(
        "data/sales.csv",
        "region;amount;note\r\n\"North\";10.5;\"said \"\"hi\"\"; left\"\r\nSouth;4.5;\"two\r\nlines\"\r\n",
    );
    let out = f
        .call("csv.analyze", json!({"path": "data/sales.csv"}))
        .await
        .unwrap();
    assert_eq!(out["path"], "data/sales.csv");
    assert_eq!(out["delimiter"], ";");
    assert_eq!(out["rows"], 2);
    let amount = &out["columns"][1];
    assert_eq!(amount["type"], "numeric");
    assert_eq!(amount["sum"], 15.0);
    assert_eq!(amount["mean"], 7.5);
    let notes = out["columns"][2]["top"].as_array().unwrap();
    let texts: Vec<&str> = notes.iter().map(|n| n["value"].as_str().unwrap()).collect();
    assert!(texts.contains(&"said \"hi\"; left"), "{texts:?}");
    assert!(texts.contains(&"two\r\nlines"), "{texts:?}");
}

#[tokio::test]
async fn a_given_delimiter_is_used_as_given() {
    let f = csv_fixture();
    f.put("t.tsv", "a\tb\n1\t2\n");
    let out = f
        .call("csv.analyze", json!({"path": "t.tsv", "delimiter": "tab"}))
        .await
        .unwrap();
    assert_eq!(
        (
            out["delimiter"].as_str(),
            out["delimiter_detected"].as_bool()
        ),
        (Some("\t"), Some(false))
    );
    let e = f
        .call("csv.analyze", json!({"path": "t.tsv", "delimiter": ":"}))
        .await
        .unwrap_err();
    assert_eq!(e.code, "invalid_arguments");
}

#[tokio::test]
async fn the_size_row_and_column_limits_are_refused_with_their_codes() {
    let f = csv_fixture();
    let big = format!("x\n{}", "1\n".repeat(5 * 1024 * 1024 + 1));
    assert!(big.len() as u64 > csv_analyze::MAX_BYTES);
    f.put("big.csv", &big);
    let e = f
        .call("csv.analyze", json!({"path": "big.csv"}))
        .await
        .unwrap_err();
    assert_eq!(e.code, "file_too_large");
    assert!(e.message.contains("big.csv"), "{}", e.message);

    let mut rows = String::from("n\n");
    for i in 0..=MAX_ROWS {
        rows.push_str(&format!("{i}\n"));
    }
    f.put("rows.csv", &rows);
    let e = f
        .call("csv.analyze", json!({"path": "rows.csv"}))
        .await
        .unwrap_err();
    assert_eq!(e.code, "too_many_rows");
    assert!(e.message.contains("200000"), "{}", e.message);

    let wide = format!(
        "{}\n",
        (0..=MAX_COLUMNS)
            .map(|i| format!("c{i}"))
            .collect::<Vec<_>>()
            .join(",")
    );
    f.put("wide.csv", &wide);
    let e = f
        .call("csv.analyze", json!({"path": "wide.csv"}))
        .await
        .unwrap_err();
    assert_eq!(e.code, "too_many_columns");
    assert!(e.message.contains("201 columns"), "{}", e.message);
}

#[tokio::test]
async fn paths_follow_the_rules_of_fs_read() {
    let f = csv_fixture();
    std::fs::write(f.tmp.path().join("outside.csv"), "a\n1\n").unwrap();
    std::os::unix::fs::symlink(f.tmp.path().join("outside.csv"), f.ws().join("link.csv")).unwrap();
    f.put("notes.json", "{}");
    for (path, code) in [
        ("../outside.csv", "path_refused"),
        ("/etc/hosts.csv", "path_refused"),
        ("link.csv", "path_refused"),
        ("missing.csv", "not_found"),
        ("notes.json", "unsupported_format"),
    ] {
        let e = f
            .call("csv.analyze", json!({"path": path}))
            .await
            .unwrap_err();
        assert_eq!(e.code, code, "{path}: {}", e.message);
    }
}
