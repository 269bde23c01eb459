use super::*;
use proptest::strategy::Strategy as _;

fn run(text: &str) -> Analysis {
    analyze(text.as_bytes(), &CsvOptions::default(), "t.csv").unwrap()
}

#[test]
fn numbers_get_every_statistic() {
    let a = run("x\n1\n2\n3\n4\n");
    let c = &a.columns[0];
    assert_eq!(c.kind, "numeric");
    assert_eq!(
        (c.min, c.max, c.sum, c.mean),
        (Some(1.0), Some(4.0), Some(10.0), Some(2.5))
    );
    // Type-7 quantiles of 1..4: 1.75, 2.5, 3.25.
    assert_eq!((c.q1, c.median, c.q3), (Some(1.75), Some(2.5), Some(3.25)));
    let sd = c.stddev.unwrap();
    assert!((sd - (5.0f64 / 3.0).sqrt()).abs() < 1e-12, "{sd}");
}

#[test]
fn a_single_value_has_no_standard_deviation() {
    let c = &run("x\n7\n").columns[0];
    assert_eq!(c.stddev, None);
    assert_eq!(c.median, Some(7.0));
}

#[test]
fn types_are_told_apart() {
    let a = run(
        "n,b,d,t,e\n1,true,2024-01-02,apple,\n2.5,NO,2023-12-31T23:59:59Z,pear,\n-3e2,yes,2024-01-02 10:00,apple,\n",
    );
    let kinds: Vec<&str> = a.columns.iter().map(|c| c.kind.as_str()).collect();
    assert_eq!(kinds, ["numeric", "boolean", "date", "text", "empty"]);
    assert_eq!(a.columns[1].true_count, Some(2));
    assert_eq!(a.columns[1].false_count, Some(1));
    assert_eq!(a.columns[2].first.as_deref(), Some("2023-12-31T23:59:59Z"));
    assert_eq!(a.columns[2].last.as_deref(), Some("2024-01-02 10:00"));
    let top = a.columns[3].top.as_ref().unwrap();
    assert_eq!(
        top[0],
        TopValue {
            value: "apple".into(),
            count: 2
        }
    );
    assert_eq!(a.columns[4].missing, 3);
}

#[test]
fn a_mostly_numeric_column_is_text_with_a_warning_naming_examples() {
    let a = run("v\n1\n2\nn/a\n4\n5\n-\n");
    let c = &a.columns[0];
    assert_eq!(c.kind, "text");
    assert_eq!(c.sum, None);
    assert_eq!(a.warnings.len(), 1);
    let w = &a.warnings[0];
    assert!(w.contains("\"n/a\"") && w.contains("\"-\""), "{w}");
    assert!(w.contains("4 of 6"), "{w}");
}

#[test]
fn missing_cells_do_not_stop_a_column_being_numeric() {
    let c = &run("a,b\n1,x\n,y\n3,z\n").columns[0];
    assert_eq!(c.kind, "numeric");
    assert_eq!((c.values, c.missing), (2, 1));
    assert_eq!(c.mean, Some(2.0));
}

#[test]
fn delimiters_are_detected_with_quotes_honoured() {
    assert_eq!(detect_delimiter(b"a;b;c\n1;2;3\n"), b';');
    assert_eq!(detect_delimiter(b"a\tb\n1\t2\n"), b'\t');
    assert_eq!(detect_delimiter(b"a|b\n1|2\n"), b'|');
    // Commas inside quotes do not count; semicolons separate.
    assert_eq!(detect_delimiter(b"\"x,y\";b\n\"1,2\";3\n"), b';');
    assert_eq!(detect_delimiter(b"single\nvalue\n"), b',');
    // Both split the one record in two; only ';' leaves every field well-formed.
    assert_eq!(detect_delimiter(b";\",\""), b';');
    assert_eq!(detect_delimiter(b"a,\"x;y\"\r\n1,\"2;3\"\r\n"), b',');
    // Quoted line breaks do not end a record.
    assert_eq!(detect_delimiter(b"a|b\n\"x\ny\"|2\n"), b'|');
}

#[test]
fn numbers_are_strict() {
    for ok in ["1", "-1", "+1.5", ".5", "5.", "1e3", "1E-3", "007"] {
        assert!(parse_number(ok).is_some(), "{ok}");
    }
    for bad in [
        "", "-", ".", "1e", "1,5", "inf", "NaN", "0x10", "1 2", "1e999", "½",
    ] {
        assert!(parse_number(bad).is_none(), "{bad}");
    }
}

/// The full parser's answer for what the number syntax admits.
fn reference_number(s: &str) -> Option<f64> {
    parse_number_bytes(s.as_bytes())?;
    s.parse::<f64>().ok().filter(|v| v.is_finite())
}

#[test]
fn the_exact_path_gives_the_full_parsers_bits() {
    for s in [
        "0",
        "-0",
        "+0.0",
        "0.1",
        "0.2",
        "0.3",
        "1.5",
        "1.50",
        "999999999999999",
        "99999999999999.9",
        "0.000000000000001",
        "-123456.789012345",
        "5.",
        ".5",
        "9007199254740993",
        "1234567890123456",
        "0.30000000000000004",
    ] {
        let (got, want) = (parse_number(s).unwrap(), reference_number(s).unwrap());
        assert_eq!(got.to_bits(), want.to_bits(), "{s}");
    }
}

proptest::proptest! {
    #[test]
    fn any_decimal_parses_to_the_bits_of_the_full_parser(
        sign in "[+-]?",
        int in "[0-9]{0,17}",
        frac in proptest::option::of("[0-9]{0,17}"),
    ) {
        let s = format!("{sign}{int}{}", frac.map(|f| format!(".{f}")).unwrap_or_default());
        let got = parse_number(&s).map(f64::to_bits);
        let want = s
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .map(f64::to_bits);
        proptest::prop_assert_eq!(got, want, "{}", s);
    }

    #[test]
    fn a_cell_is_trimmed_as_str_trim_trims_it(
        cell in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::strategy::Just(" "), proptest::strategy::Just("\t"),
                proptest::strategy::Just("\u{b}"), proptest::strategy::Just("\u{c}"),
                proptest::strategy::Just("\r"), proptest::strategy::Just("\u{a0}"),
                proptest::strategy::Just("\u{85}"), proptest::strategy::Just("\u{2003}"),
                proptest::strategy::Just("\u{3000}"), proptest::strategy::Just("x"),
                proptest::strategy::Just("é"), proptest::strategy::Just("1"),
                proptest::strategy::Just("\u{1c}"),
            ],
            0..8,
        )
    ) {
        let cell: String = cell.concat();
        proptest::prop_assert_eq!(trim_cell(cell.as_bytes()), cell.trim().as_bytes());
    }
}

#[test]
fn distinct_values_are_counted_by_their_exact_bytes() {
    let mut d = Distinct::default();
    for v in ["a", "b", "a", "1.5", "1.50", "a", "", "é"] {
        d.add(v.as_bytes());
    }
    let mut all: Vec<(String, u64)> = d.iter().map(|(v, c)| (text(v), c)).collect();
    all.sort();
    let want: Vec<(String, u64)> = [
        ("", 1),
        ("1.5", 1),
        ("1.50", 1),
        ("a", 3),
        ("b", 1),
        ("é", 1),
    ]
    .into_iter()
    .map(|(v, c)| (v.to_string(), c))
    .collect();
    assert_eq!(all, want);
    assert_eq!(d.len(), 6);
}

#[test]
fn iso_dates_are_validated() {
    for ok in [
        "2024-02-29",
        "2024-01-01T00:00",
        "2024-01-01T00:00:00.5+02:00",
        "2024-01-01 12:00:00-0500",
        "2024-01-01T00:00:00z",
    ] {
        assert!(parse_iso_date(ok).is_some(), "{ok}");
    }
    for bad in [
        "2023-02-29",
        "2024-13-01",
        "2024-1-1",
        "01/02/2024",
        "2024-01-01T25:00",
        "2024-01-01T00:00+",
        "2024-01-01x",
    ] {
        assert!(parse_iso_date(bad).is_none(), "{bad}");
    }
    assert!(parse_iso_date("2024-01-01T01:00:00+02:00") < parse_iso_date("2024-01-01T00:00:00Z"));
}

#[test]
fn ragged_rows_are_refused_with_the_line() {
    let e = analyze(b"a,b\n1,2\n3\n", &CsvOptions::default(), "t.csv").unwrap_err();
    assert_eq!(e.code(), "csv_invalid");
    assert!(e.to_string().contains("line 3"), "{e}");
}

#[test]
fn limits_have_their_codes() {
    let wide = format!("{}\n", vec!["c"; MAX_COLUMNS + 1].join(","));
    let e = analyze(wide.as_bytes(), &CsvOptions::default(), "w.csv").unwrap_err();
    assert_eq!(e.code(), "too_many_columns");
    let mut long = String::from("x\n");
    for i in 0..=MAX_ROWS {
        long.push_str(&format!("{i}\n"));
    }
    let e = analyze(long.as_bytes(), &CsvOptions::default(), "l.csv").unwrap_err();
    assert_eq!(e.code(), "too_many_rows");
    let ok = analyze(
        long.as_bytes()[..long.len() - "200000\n".len()].as_ref(),
        &CsvOptions::default(),
        "l.csv",
    )
    .unwrap();
    assert_eq!(ok.rows, MAX_ROWS as u64);
    for empty in [&b""[..], b"\n\n", b"\r\n"] {
        let e = analyze(empty, &CsvOptions::default(), "e.csv").unwrap_err();
        assert_eq!(e.code(), "csv_empty");
    }
    // A header of one blank cell is a header: one column, named by its place.
    let a = analyze(b" ", &CsvOptions::default(), "b.csv").unwrap();
    assert_eq!((a.rows, a.columns[0].name.as_str()), (0, "column 1"));
}

#[test]
fn quantiles_interpolate_linearly() {
    let v = [1.0, 2.0, 3.0, 4.0, 10.0];
    assert_eq!(quantile(&v, 0.5), Some(3.0));
    assert_eq!(quantile(&v, 0.25), Some(2.0));
    // h = 4 · 0.9 = 3.6: 4 + 0.6 · (10 − 4).
    let near = |x: Option<f64>, want: f64| x.is_some_and(|x| (x - want).abs() < 1e-12);
    assert!(near(quantile(&v, 0.9), 7.6));
    let mut w = v.to_vec();
    w.reverse();
    assert!(near(select_quantile(&mut w, 0.9), 7.6));
    assert_eq!(select_quantile(&mut w, 1.0), Some(10.0));
    assert_eq!(select_quantile(&mut w, 0.0), Some(1.0));
}

/// The distinct count and top values of one column, computed from the trimmed texts alone.
fn reference_distinct(cells: &[String]) -> (u64, Vec<(String, u64)>) {
    let mut counts = std::collections::HashMap::<&str, u64>::new();
    for c in cells {
        let t = c.trim();
        if !t.is_empty() {
            *counts.entry(t).or_default() += 1;
        }
    }
    let mut all: Vec<(String, u64)> = counts.iter().map(|(v, c)| (v.to_string(), *c)).collect();
    all.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    all.truncate(TOP_VALUES);
    (counts.len() as u64, all)
}

#[test]
fn canonical_numbers_are_those_whose_text_their_value_fixes() {
    for (v, want) in [
        ("0", Some(0)),
        ("12", Some(0)),
        ("-12", Some(0)),
        ("12.50", Some(2)),
        ("0.5", Some(1)),
        ("-0.5", Some(1)),
        ("999999999999999", Some(0)),
        ("1000000000000000", None),
        ("-0", None),
        ("-0.00", None),
        ("012", None),
        ("+12", None),
        (".5", None),
        ("5.", None),
        ("1e3", None),
        ("1.2.3", None),
        ("", None),
        ("-", None),
    ] {
        assert_eq!(canonical_fraction(v.as_bytes()), want, "{v:?}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
    /// Columns of numbers written every way (canonical or not, mixed digits after the point,
    /// minus zero, leading zeros, an exponent, a word at some point) count their distinct values
    /// and pick their top values as counting the texts does.
    #[test]
    fn distinct_values_and_top_values_match_counting_the_texts(
        cells in proptest::collection::vec(
            proptest::prop_oneof![
                4 => (0u32..40).prop_map(|n| n.to_string()),
                3 => (0u32..400).prop_map(|n| format!("{}.{:02}", n / 100, n % 100)),
                1 => (0u32..40).prop_map(|n| format!("-{}.{}", n / 10, n % 10)),
                1 => proptest::strategy::Just("-0".to_string()),
                1 => proptest::strategy::Just("0.0".to_string()),
                1 => (0u32..40).prop_map(|n| format!("0{n}")),
                1 => (0u32..40).prop_map(|n| format!("{n}e0")),
                1 => proptest::strategy::Just("n/a".to_string()),
                1 => proptest::strategy::Just(String::new()),
            ],
            1..120,
        )
    ) {
        let mut col = Column::new();
        for c in &cells {
            col.add(c.as_bytes());
        }
        let mut warnings = Vec::new();
        let stats = col.finish("c".into(), 0, &mut warnings);
        let (distinct, top) = reference_distinct(&cells);
        proptest::prop_assert_eq!(stats.distinct, distinct, "{:?}", cells);
        if let Some(got) = stats.top {
            let got: Vec<(String, u64)> = got.into_iter().map(|t| (t.value, t.count)).collect();
            proptest::prop_assert_eq!(got, top, "{:?}", cells);
        }
    }
}
