//! The statistics behind `csv.analyze`: delimiter sniffing, RFC 4180 parsing through the `csv`
//! crate, cell typing (number, boolean, ISO date, text) and the exact per-column figures.
//!
//! Kept apart from the tool's schema and wording so the figures can be computed (and benched,
//! and property-tested) on bytes alone, with no workspace or tool context.

use serde::{Deserialize, Serialize};

use pablo_core::{Coded, ErrorCode};

pub const MAX_BYTES: u64 = 10 * 1024 * 1024;
pub(crate) const MAX_ROWS: usize = 200_000;
pub(crate) const MAX_COLUMNS: usize = 200;
/// Most frequent values listed for a text column.
pub(crate) const TOP_VALUES: usize = 5;
/// Non-numeric values named in a mostly-numeric column's warning.
const EXAMPLES: usize = 3;
/// Candidate delimiters, in order of preference on a tie.
pub(crate) const DELIMITERS: [u8; 4] = [b',', b';', b'\t', b'|'];
/// How much of the file delimiter detection looks at.
const SNIFF_BYTES: usize = 64 * 1024;
const SNIFF_RECORDS: usize = 20;
/// Rows read before their cells are added, column by column.
const BATCH_ROWS: usize = 1024;

/// Why a file could not be analyzed.
#[derive(Debug, thiserror::Error)]
pub enum CsvError {
    #[error("{path}: {rows} data rows or more, over the limit of {limit}")]
    TooManyRows {
        path: String,
        rows: usize,
        limit: usize,
    },
    #[error("{path}: {columns} columns, over the limit of {limit}")]
    TooManyColumns {
        path: String,
        columns: usize,
        limit: usize,
    },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
    #[error("{path}: the file is empty (no header row)")]
    Empty { path: String },
    #[error(
        "{path}: {extension:?} files are not analyzed; use a .csv, .tsv or delimited .txt file"
    )]
    Format { path: String, extension: String },
}

impl Coded for CsvError {
    fn code(&self) -> ErrorCode {
        match self {
            CsvError::TooManyRows { .. } => ErrorCode::TooManyRows,
            CsvError::TooManyColumns { .. } => ErrorCode::TooManyColumns,
            CsvError::Invalid { .. } => ErrorCode::CsvInvalid,
            CsvError::Empty { .. } => ErrorCode::CsvEmpty,
            CsvError::Format { .. } => ErrorCode::UnsupportedFormat,
        }
    }
}

/// How to read the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvOptions {
    /// `None`: detect among `, ; tab |`.
    pub(crate) delimiter: Option<u8>,
    pub(crate) has_header: bool,
}

impl Default for CsvOptions {
    fn default() -> Self {
        Self {
            delimiter: None,
            has_header: true,
        }
    }
}

/// The figures of one column. Fields that do not apply to its type are absent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct ColumnStats {
    pub(crate) name: String,
    pub(crate) index: usize,
    /// `numeric`, `boolean`, `date`, `text` or `empty`.
    #[serde(rename = "type")]
    pub(crate) kind: String,
    /// Non-empty cells.
    pub(crate) values: u64,
    /// Empty (or blank) cells.
    pub(crate) missing: u64,
    /// Distinct non-empty values, compared as text after trimming.
    pub(crate) distinct: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) min: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) max: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) sum: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) mean: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) median: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) q1: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) q3: Option<f64>,
    /// Sample standard deviation (n − 1); absent with fewer than two values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) stddev: Option<f64>,
    #[serde(rename = "true", skip_serializing_if = "Option::is_none")]
    pub(crate) true_count: Option<u64>,
    #[serde(rename = "false", skip_serializing_if = "Option::is_none")]
    pub(crate) false_count: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) first: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) last: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) top: Option<Vec<TopValue>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TopValue {
    pub(crate) value: String,
    pub(crate) count: u64,
}

/// The whole analysis.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Analysis {
    /// The delimiter used, as text (`","`, `";"`, `"\t"`, `"|"`).
    pub(crate) delimiter: String,
    pub(crate) delimiter_detected: bool,
    pub(crate) has_header: bool,
    /// Data rows (the header not counted).
    pub rows: u64,
    pub(crate) columns: Vec<ColumnStats>,
    pub(crate) warnings: Vec<String>,
}

/// How the first records of `sample` split with delimiter `d`: the field count of each record,
/// and how many fields break RFC 4180 with that delimiter (a quote inside an unquoted field, or
/// text after a closing quote), which is how a wrong delimiter usually shows.
fn sniff(sample: &[u8], d: u8, cut: bool) -> (Vec<usize>, usize) {
    let mut counts = Vec::new();
    let mut malformed = 0;
    let mut fields = 1;
    let mut i = 0;
    let n = sample.len();
    let mut at_field_start = true;
    let mut record_open = false;
    while i < n && counts.len() <= SNIFF_RECORDS {
        let b = sample[i];
        if at_field_start && b == b'"' {
            // A quoted field: to the closing quote (a doubled quote is part of the text).
            i += 1;
            loop {
                match sample.get(i) {
                    None => break,
                    Some(b'"') if sample.get(i + 1) == Some(&b'"') => i += 2,
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(_) => i += 1,
                }
            }
            if i >= n && cut {
                // The sample ends inside this field: the record is incomplete.
                return (counts, malformed);
            }
            match sample.get(i) {
                None | Some(b'\n' | b'\r') => {}
                Some(&c) if c == d => {}
                Some(_) => malformed += 1,
            }
            at_field_start = false;
            record_open = true;
            continue;
        }
        if b == d {
            fields += 1;
            at_field_start = true;
            record_open = true;
        } else if b == b'\n' || b == b'\r' {
            if record_open || !at_field_start || fields > 1 {
                counts.push(fields);
            }
            if b == b'\r' && sample.get(i + 1) == Some(&b'\n') {
                i += 1;
            }
            fields = 1;
            at_field_start = true;
            record_open = false;
        } else {
            if b == b'"' {
                malformed += 1;
            }
            at_field_start = false;
            record_open = true;
        }
        i += 1;
    }
    if i >= n && record_open && !cut {
        counts.push(fields);
    }
    counts.truncate(SNIFF_RECORDS);
    (counts, malformed)
}

/// Picks the delimiter whose first records agree on a field count above one and that breaks the
/// fewest fields, preferring more fields, then the order of [`DELIMITERS`]. Quotes are honoured
/// (a comma inside a quoted field is not a separator). Falls back to `,`.
pub(crate) fn detect_delimiter(bytes: &[u8]) -> u8 {
    let cut = bytes.len() > SNIFF_BYTES;
    let sample = &bytes[..bytes.len().min(SNIFF_BYTES)];
    // (malformed fields, fewer fields is worse, order): the smallest wins.
    let mut best: Option<((usize, std::cmp::Reverse<usize>), u8)> = None;
    for &d in &DELIMITERS {
        let (counts, malformed) = sniff(sample, d, cut);
        let Some(&first) = counts.first() else {
            continue;
        };
        if first < 2 || counts.iter().any(|&c| c != first) {
            continue;
        }
        let score = (malformed, std::cmp::Reverse(first));
        if best.is_none_or(|(b, _)| score < b) {
            best = Some((score, d));
        }
    }
    best.map_or(b',', |(_, d)| d)
}

/// A number as a cell holds it: optional sign, digits with an optional decimal point, an
/// optional exponent; nothing else (no spaces, `inf`, `NaN`, hex or thousands separators), and
/// finite.
#[cfg(test)]
fn parse_number(s: &str) -> Option<f64> {
    parse_number_bytes(s.as_bytes())
}

fn parse_number_bytes(b: &[u8]) -> Option<f64> {
    let mut i = 0;
    let negative = b.first() == Some(&b'-');
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    // The digits as one integer while they fit, for the exact path below.
    let mut mantissa: u64 = 0;
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        mantissa = mantissa
            .wrapping_mul(10)
            .wrapping_add(u64::from(b[i] - b'0'));
        i += 1;
    }
    let mut digits = i - int_start;
    let mut fraction = 0;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let frac_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            mantissa = mantissa
                .wrapping_mul(10)
                .wrapping_add(u64::from(b[i] - b'0'));
            i += 1;
        }
        fraction = i - frac_start;
        digits += fraction;
    }
    if digits == 0 {
        return None;
    }
    let mut exponent = false;
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        exponent = true;
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let exp_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == exp_start {
            return None;
        }
    }
    if i != b.len() {
        return None;
    }
    // Up to 15 digits the integer is below 2^53, so exact as an f64, and so is 10^k for the
    // k ≤ 15 digits after the point: one IEEE division of two exact values rounds correctly,
    // giving the very value the full parser gives (Clinger's fast path). Everything else goes to
    // the full parser.
    if !exponent && digits <= 15 {
        let magnitude = mantissa as f64 / POWERS_OF_TEN[fraction];
        return Some(if negative { -magnitude } else { magnitude });
    }
    std::str::from_utf8(b)
        .ok()?
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
}

/// 10^0 … 10^15, each exact as an f64.
const POWERS_OF_TEN: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

fn parse_bool(s: &[u8]) -> Option<bool> {
    if s.eq_ignore_ascii_case(b"true") || s.eq_ignore_ascii_case(b"yes") {
        Some(true)
    } else if s.eq_ignore_ascii_case(b"false") || s.eq_ignore_ascii_case(b"no") {
        Some(false)
    } else {
        None
    }
}

#[cfg(test)]
/// An ISO 8601 calendar date (`2024-03-01`) or date-time (`2024-03-01T12:30`, seconds,
/// fractions, `Z` or `±HH:MM` optional; a space may stand for the `T`), as nanoseconds since the
/// epoch for ordering. A date-time without an offset is ordered as if it were UTC.
pub(crate) fn parse_iso_date(s: &str) -> Option<i128> {
    parse_iso_date_bytes(s.as_bytes())
}

fn parse_iso_date_bytes(b: &[u8]) -> Option<i128> {
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = b.get(r)?;
        if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        Some(part.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
    };
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let year = i32::try_from(num(0..4)?).ok()?;
    let month = time::Month::try_from(u8::try_from(num(5..7)?).ok()?).ok()?;
    let day = u8::try_from(num(8..10)?).ok()?;
    let date = time::Date::from_calendar_date(year, month, day).ok()?;
    if b.len() == 10 {
        return Some(date.midnight().assume_utc().unix_timestamp_nanos());
    }
    if !(b[10] == b'T' || b[10] == b' ') || b.len() < 16 || b[13] != b':' {
        return None;
    }
    let hour = u8::try_from(num(11..13)?).ok()?;
    let minute = u8::try_from(num(14..16)?).ok()?;
    let mut i = 16;
    let mut second = 0u8;
    let mut nanos = 0u32;
    if b.get(i) == Some(&b':') {
        second = u8::try_from(num(i + 1..i + 3)?).ok()?;
        i += 3;
        if b.get(i) == Some(&b'.') || b.get(i) == Some(&b',') {
            let start = i + 1;
            i = start;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let frac = b.get(start..i)?;
            if frac.is_empty() {
                return None;
            }
            let mut n: u32 = 0;
            for (k, d) in frac.iter().take(9).enumerate() {
                n += u32::from(d - b'0') * 10u32.pow(8 - k as u32);
            }
            nanos = n;
        }
    }
    let time = time::Time::from_hms_nano(hour, minute, second, nanos).ok()?;
    let local = time::PrimitiveDateTime::new(date, time);
    let offset = match b.get(i..) {
        Some([]) => time::UtcOffset::UTC,
        Some([b'Z' | b'z']) => time::UtcOffset::UTC,
        Some([sign @ (b'+' | b'-'), rest @ ..]) => {
            let (h, m) = match rest {
                [h1, h2, b':', m1, m2] | [h1, h2, m1, m2] => {
                    let d = |x: &u8| x.is_ascii_digit().then(|| i8::try_from(x - b'0').ok())?;
                    (d(h1)? * 10 + d(h2)?, d(m1)? * 10 + d(m2)?)
                }
                [h1, h2] => {
                    let d = |x: &u8| x.is_ascii_digit().then(|| i8::try_from(x - b'0').ok())?;
                    (d(h1)? * 10 + d(h2)?, 0)
                }
                _ => return None,
            };
            let (h, m) = if *sign == b'-' { (-h, -m) } else { (h, m) };
            time::UtcOffset::from_hms(h, m, 0).ok()?
        }
        _ => return None,
    };
    Some(local.assume_offset(offset).unix_timestamp_nanos())
}

/// The distinct values of one column with how often each occurs. A value of up to
/// [`INLINE`] bytes is kept in its slot of the table, a longer one once in a buffer the slot
/// points into: no allocation per value, and finding a value seen before reads one slot (its hash,
/// length and bytes compared at once), not a key somewhere else in memory.
struct Distinct {
    hasher: foldhash::fast::RandomState,
    long: Vec<u8>,
    table: hashbrown::HashTable<Slot>,
}

/// Values at most this long live in their slot.
const INLINE: usize = 16;

struct Slot {
    hash: u64,
    /// At most 10 MiB (the file's limit).
    len: u32,
    /// At most 200,000 rows.
    count: u32,
    /// The value, zero-padded, when it fits; else its offset in [`Distinct::long`].
    key: [u8; INLINE],
}

impl Slot {
    fn value<'a>(&'a self, long: &'a [u8]) -> &'a [u8] {
        let len = self.len as usize;
        if len <= INLINE {
            &self.key[..len]
        } else {
            let mut at = [0u8; 8];
            at.copy_from_slice(&self.key[..8]);
            let at = u64::from_le_bytes(at) as usize;
            &long[at..at + len]
        }
    }
}

impl Default for Distinct {
    fn default() -> Self {
        Self {
            // Seeded per process, so a file cannot be made of values that all collide.
            hasher: foldhash::fast::RandomState::default(),
            long: Vec::new(),
            table: hashbrown::HashTable::new(),
        }
    }
}

impl Distinct {
    fn add(&mut self, value: &[u8]) {
        use std::hash::BuildHasher;
        let hash = self.hasher.hash_one(value);
        let len = value.len() as u32;
        if value.len() <= INLINE {
            let mut key = [0u8; INLINE];
            key[..value.len()].copy_from_slice(value);
            // Fixed-size comparisons: no call into `memcmp` per cell.
            match self
                .table
                .find_mut(hash, |s| s.hash == hash && s.len == len && s.key == key)
            {
                Some(slot) => slot.count += 1,
                None => {
                    self.table.insert_unique(
                        hash,
                        Slot {
                            hash,
                            len,
                            count: 1,
                            key,
                        },
                        |s| s.hash,
                    );
                }
            }
            return;
        }
        let Self { long, table, .. } = self;
        match table.find_mut(hash, |s| {
            s.hash == hash && s.len == len && s.value(long) == value
        }) {
            Some(slot) => slot.count += 1,
            None => {
                let mut key = [0u8; INLINE];
                key[..8].copy_from_slice(&(long.len() as u64).to_le_bytes());
                long.extend_from_slice(value);
                table.insert_unique(
                    hash,
                    Slot {
                        hash,
                        len,
                        count: 1,
                        key,
                    },
                    |s| s.hash,
                );
            }
        }
    }

    fn len(&self) -> usize {
        self.table.len()
    }

    /// Each value with its count, in no particular order.
    fn iter(&self) -> impl Iterator<Item = (&[u8], u64)> {
        self.table
            .iter()
            .map(|s| (s.value(&self.long), u64::from(s.count)))
    }
}

/// Whitespace as `str::trim` sees it, for the ASCII range.
fn is_ascii_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// A cell without its surrounding whitespace, as `str::trim` would cut it. ASCII is cut byte by
/// byte; when an end is not ASCII (it may be a no-break or other Unicode space) the cell goes
/// through `str::trim` itself.
fn trim_cell(raw: &[u8]) -> &[u8] {
    let mut start = 0;
    let mut end = raw.len();
    while start < end && is_ascii_space(raw[start]) {
        start += 1;
    }
    while end > start && is_ascii_space(raw[end - 1]) {
        end -= 1;
    }
    let cut = &raw[start..end];
    match (cut.first(), cut.last()) {
        (Some(&first), Some(&last)) if first >= 0x80 || last >= 0x80 => {
            match std::str::from_utf8(cut) {
                Ok(s) => s.trim().as_bytes(),
                Err(_) => cut,
            }
        }
        _ => cut,
    }
}

/// A value of the file as text. The file was checked to be UTF-8 as a whole and fields are cut at
/// ASCII bytes, so this never needs to replace anything.
fn text(value: &[u8]) -> String {
    String::from_utf8_lossy(value).into_owned()
}

/// Running figures of one column.
#[derive(Default)]
struct Column {
    missing: u64,
    values: u64,
    numbers: Vec<f64>,
    /// Non-numeric values seen (distinct, first few), for the mostly-numeric warning.
    not_numbers: Vec<String>,
    not_number_count: u64,
    all_bool: bool,
    trues: u64,
    falses: u64,
    all_date: bool,
    first: Option<(i128, String)>,
    last: Option<(i128, String)>,
    distinct: Distinct,
    distinct_by: DistinctBy,
}

/// How a column counts its distinct values. While every value is a number written the one way
/// its value is written (see [`canonical_fraction`]) with as many digits after the point, two
/// values are equal exactly when their texts are: the column keeps the numbers anyway (for its
/// quantiles), so it counts them from those at the end and skips a hash-table probe per cell
/// (the probes of columns of ids and prices were most of the analysis: cache misses in tables
/// larger than the cache). The first value that is not such a number fills the table from the
/// numbers (their texts are those numbers written with that many digits) and it goes on there.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum DistinctBy {
    /// By the numbers, no value yet.
    #[default]
    Numbers,
    /// By the numbers, every value so far with this many digits after the point.
    NumbersWith(usize),
    /// In [`Distinct`].
    Table,
}

/// The count of digits after the point when `v` is a number written the one way its value is:
/// an optional `-`, no leading zero, digits after a point only if there is one (at least one),
/// no exponent, at most 15 digits in all (so the value is an exact integer over a power of ten,
/// and two different ones differ as `f64`s), and not minus zero.
fn canonical_fraction(v: &[u8]) -> Option<usize> {
    let digits = v.strip_prefix(b"-").unwrap_or(v);
    let (int, fraction) = match digits.iter().position(|&b| b == b'.') {
        Some(p) => (&digits[..p], Some(&digits[p + 1..])),
        None => (digits, None),
    };
    if int.is_empty() || !int.iter().all(u8::is_ascii_digit) || (int.len() > 1 && int[0] == b'0') {
        return None;
    }
    let fraction = match fraction {
        None => 0,
        Some(f) if !f.is_empty() && f.iter().all(u8::is_ascii_digit) => f.len(),
        Some(_) => return None,
    };
    if int.len() + fraction > 15 {
        return None;
    }
    if digits.len() != v.len() && digits.iter().all(|&b| b == b'0' || b == b'.') {
        return None;
    }
    Some(fraction)
}

impl Column {
    fn new() -> Self {
        Self {
            all_bool: true,
            all_date: true,
            ..Self::default()
        }
    }

    fn add(&mut self, raw: &[u8]) {
        let v = trim_cell(raw);
        if v.is_empty() {
            self.missing += 1;
            return;
        }
        self.values += 1;
        let number = parse_number_bytes(v);
        self.count_distinct(v, number.is_some());
        match number {
            Some(x) => {
                if self.not_number_count == 0 {
                    self.numbers.push(x);
                }
            }
            None => {
                if self.not_number_count == 0 {
                    // From now on only the count of numbers matters.
                    self.numbers = Vec::new();
                }
                self.not_number_count += 1;
                if self.not_numbers.len() < EXAMPLES
                    && !self.not_numbers.iter().any(|e| e.as_bytes() == v)
                {
                    self.not_numbers.push(text(v));
                }
            }
        }
        if self.all_bool {
            match parse_bool(v) {
                Some(true) => self.trues += 1,
                Some(false) => self.falses += 1,
                None => self.all_bool = false,
            }
        }
        if self.all_date {
            match parse_iso_date_bytes(v) {
                Some(key) => {
                    if self.first.as_ref().is_none_or(|(k, _)| key < *k) {
                        self.first = Some((key, text(v)));
                    }
                    if self.last.as_ref().is_none_or(|(k, _)| key > *k) {
                        self.last = Some((key, text(v)));
                    }
                }
                None => self.all_date = false,
            }
        }
    }

    fn count_distinct(&mut self, v: &[u8], is_number: bool) {
        let fraction = match self.distinct_by {
            DistinctBy::Table => None,
            DistinctBy::Numbers => match is_number.then(|| canonical_fraction(v)).flatten() {
                Some(f) => {
                    self.distinct_by = DistinctBy::NumbersWith(f);
                    return;
                }
                None => None,
            },
            DistinctBy::NumbersWith(f) => {
                if is_number && canonical_fraction(v) == Some(f) {
                    return;
                }
                Some(f)
            }
        };
        if let Some(f) = fraction {
            // Every value so far is in `numbers` (none was a non-number), and each one's text is
            // its number written with `f` digits after the point (at most 15 digits: exact).
            for x in &self.numbers {
                self.distinct.add(format!("{x:.f$}").as_bytes());
            }
        }
        self.distinct_by = DistinctBy::Table;
        self.distinct.add(v);
    }

    fn finish(mut self, name: String, index: usize, warnings: &mut Vec<String>) -> ColumnStats {
        let mut s = ColumnStats {
            name,
            index,
            kind: String::new(),
            values: self.values,
            missing: self.missing,
            distinct: self.distinct.len() as u64,
            min: None,
            max: None,
            sum: None,
            mean: None,
            median: None,
            q1: None,
            q3: None,
            stddev: None,
            true_count: None,
            false_count: None,
            first: None,
            last: None,
            top: None,
        };
        let numeric_count = self.values - self.not_number_count;
        if self.values == 0 {
            s.kind = "empty".into();
        } else if self.not_number_count == 0 {
            s.kind = "numeric".into();
            fill_numeric(&mut s, &mut self.numbers);
            if self.distinct_by != DistinctBy::Table {
                self.numbers.sort_unstable_by(f64::total_cmp);
                self.numbers.dedup_by(|a, b| a.to_bits() == b.to_bits());
                s.distinct = self.numbers.len() as u64;
            }
        } else if self.all_bool {
            s.kind = "boolean".into();
            s.true_count = Some(self.trues);
            s.false_count = Some(self.falses);
        } else if self.all_date {
            s.kind = "date".into();
            s.first = self.first.map(|(_, v)| v);
            s.last = self.last.map(|(_, v)| v);
        } else {
            s.kind = "text".into();
            if numeric_count * 2 > self.values {
                let examples: Vec<String> =
                    self.not_numbers.iter().map(|e| format!("{e:?}")).collect();
                warnings.push(format!(
                    "column {:?} is mostly numeric ({numeric_count} of {} values are numbers) but \
                     {} are not, e.g. {}; it is reported as text and no numeric statistics are \
                     given",
                    s.name,
                    self.values,
                    self.not_number_count,
                    examples.join(", ")
                ));
            }
        }
        if s.kind == "text" {
            let mut all: Vec<(&[u8], u64)> = self.distinct.iter().collect();
            let k = TOP_VALUES.min(all.len());
            // Byte order is the order of the text (UTF-8 sorts as its code points).
            let order = |a: &(&[u8], u64), b: &(&[u8], u64)| b.1.cmp(&a.1).then(a.0.cmp(b.0));
            if k > 0 && k < all.len() {
                all.select_nth_unstable_by(k - 1, order);
                all.truncate(k);
            }
            all.sort_unstable_by(order);
            s.top = Some(
                all.into_iter()
                    .map(|(v, c)| TopValue {
                        value: text(v),
                        count: c,
                    })
                    .collect(),
            );
        }
        s
    }
}

/// Sum with Neumaier's compensation: exact to the last bit for the sums tables hold, where a
/// plain running sum drifts with every addition.
fn compensated_sum(values: impl Iterator<Item = f64>) -> f64 {
    let mut sum = 0.0f64;
    let mut c = 0.0f64;
    for x in values {
        let t = sum + x;
        if sum.abs() >= x.abs() {
            c += (sum - t) + x;
        } else {
            c += (x - t) + sum;
        }
        sum = t;
    }
    sum + c
}

#[cfg(test)]
/// The value at quantile `p` with linear interpolation between closest ranks (R type 7):
/// `h = (n − 1)·p`, `x[⌊h⌋] + (h − ⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋])`. `sorted` must be sorted.
pub(crate) fn quantile(sorted: &[f64], p: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let h = (n - 1) as f64 * p;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    Some(sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo]))
}

/// Quantile without sorting everything: selects the two ranks it needs (linear time).
fn select_quantile(values: &mut [f64], p: f64) -> Option<f64> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let h = (n - 1) as f64 * p;
    let lo = h.floor() as usize;
    let (_, &mut at_lo, rest) = values.select_nth_unstable_by(lo, f64::total_cmp);
    let at_hi = if lo + 1 < n {
        rest.iter().copied().fold(f64::INFINITY, f64::min)
    } else {
        at_lo
    };
    Some(at_lo + (h - lo as f64) * (at_hi - at_lo))
}

fn fill_numeric(s: &mut ColumnStats, values: &mut [f64]) {
    let n = values.len();
    if n == 0 {
        return;
    }
    let sum = compensated_sum(values.iter().copied());
    let mean = sum / n as f64;
    s.sum = Some(sum);
    s.mean = Some(mean);
    s.min = values.iter().copied().reduce(f64::min);
    s.max = values.iter().copied().reduce(f64::max);
    if n > 1 {
        let squares = compensated_sum(values.iter().map(|x| (x - mean) * (x - mean)));
        s.stddev = Some((squares / (n - 1) as f64).sqrt());
    }
    s.q1 = select_quantile(values, 0.25);
    s.median = select_quantile(values, 0.5);
    s.q3 = select_quantile(values, 0.75);
}

fn delimiter_text(d: u8) -> String {
    (d as char).to_string()
}

/// Analyzes the bytes of a delimited file; `path` names it in messages.
pub fn analyze(bytes: &[u8], options: &CsvOptions, path: &str) -> Result<Analysis, CsvError> {
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    let invalid = |message: String| CsvError::Invalid {
        path: path.to_string(),
        message,
    };
    if let Err(e) = std::str::from_utf8(bytes) {
        return Err(invalid(format!(
            "not valid UTF-8 (invalid byte at offset {}); save the file as UTF-8",
            e.valid_up_to()
        )));
    }
    let detected = options.delimiter.is_none();
    let delimiter = options.delimiter.unwrap_or_else(|| detect_delimiter(bytes));
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .has_headers(false)
        .flexible(true)
        .from_reader(bytes);
    // Byte records: the file was checked to be UTF-8 once, above; a string record would check
    // every record again.
    let mut record = csv::ByteRecord::new();
    let read = |reader: &mut csv::Reader<&[u8]>, record: &mut csv::ByteRecord| {
        reader.read_byte_record(record).map_err(|e| {
            let line = e.position().map(|p| p.line()).unwrap_or(0);
            invalid(format!("line {line}: {e}"))
        })
    };
    if !read(&mut reader, &mut record)? {
        return Err(CsvError::Empty {
            path: path.to_string(),
        });
    }
    let width = record.len();
    if width > MAX_COLUMNS {
        return Err(CsvError::TooManyColumns {
            path: path.to_string(),
            columns: width,
            limit: MAX_COLUMNS,
        });
    }
    let names: Vec<String> = (0..width)
        .map(|i| match record.get(i).map(trim_cell) {
            Some(n) if options.has_header && !n.is_empty() => text(n),
            _ => format!("column {}", i + 1),
        })
        .collect();
    let mut columns: Vec<Column> = (0..width).map(|_| Column::new()).collect();
    let mut rows: usize = 0;
    // A row is checked as it is read; its cells are added a batch of rows at a time, one column
    // after another, so each column's work (the same parsers, the same table) runs in a loop of
    // its own rather than interleaved with every other column's.
    let check_row = |record: &csv::ByteRecord, rows: &mut usize| -> Result<(), CsvError> {
        if record.len() != width {
            let line = record.position().map(|p| p.line()).unwrap_or(0);
            if record.len() > MAX_COLUMNS {
                return Err(CsvError::TooManyColumns {
                    path: path.to_string(),
                    columns: record.len(),
                    limit: MAX_COLUMNS,
                });
            }
            return Err(invalid(format!(
                "line {line} has {} fields, but the first row has {width}; every row must have \
                 the same number of fields (is the delimiter {:?} right?)",
                record.len(),
                delimiter_text(delimiter)
            )));
        }
        *rows += 1;
        if *rows > MAX_ROWS {
            return Err(CsvError::TooManyRows {
                path: path.to_string(),
                rows: *rows,
                limit: MAX_ROWS,
            });
        }
        Ok(())
    };
    let add_batch = |columns: &mut [Column], batch: &[csv::ByteRecord]| {
        for (c, col) in columns.iter_mut().enumerate() {
            for record in batch {
                col.add(record.get(c).unwrap_or_default());
            }
        }
    };
    let mut batch: Vec<csv::ByteRecord> = Vec::with_capacity(BATCH_ROWS);
    let mut filled = 0;
    if !options.has_header {
        check_row(&record, &mut rows)?;
        batch.push(record);
        filled = 1;
    }
    loop {
        if filled == batch.len() {
            if batch.len() == BATCH_ROWS {
                add_batch(&mut columns, &batch);
                filled = 0;
            } else {
                batch.push(csv::ByteRecord::new());
            }
        }
        if !read(&mut reader, &mut batch[filled])? {
            break;
        }
        check_row(&batch[filled], &mut rows)?;
        filled += 1;
    }
    add_batch(&mut columns, &batch[..filled]);
    let mut warnings = Vec::new();
    let stats = columns
        .into_iter()
        .zip(names)
        .enumerate()
        .map(|(i, (c, n))| c.finish(n, i, &mut warnings))
        .collect();
    Ok(Analysis {
        delimiter: delimiter_text(delimiter),
        delimiter_detected: detected,
        has_header: options.has_header,
        rows: rows as u64,
        columns: stats,
        warnings,
    })
}

#[cfg(test)]
mod tests;
