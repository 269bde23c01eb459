//! Config errors: every problem of a file named by its line and key, found in the TOML document.

use std::path::{Path, PathBuf};

use pablo_core::{Coded, ErrorCode};

/// A config file that cannot be used. Every problem is named with the file, the line and the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: cannot read: {message}")]
    Read { path: PathBuf, message: String },
    #[error("{}", render_problems(path, problems))]
    Invalid {
        path: PathBuf,
        problems: Vec<ConfigProblem>,
    },
    /// Settings of `PABLO_` variables or `-c` that cannot be used, each naming where it came from.
    #[error("{}", problems.join("\n"))]
    Overrides { problems: Vec<String> },
    /// A file of another tool's setup that `pablo import-config` cannot read.
    #[error("{path}: cannot import: {message}")]
    ImportSource { path: PathBuf, message: String },
    /// `pablo import-config` found none of the files it reads.
    #[error("{message}")]
    NothingToImport { message: String },
}

/// One problem of a config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    /// 1-based.
    pub line: usize,
    /// The dotted key (`options.shell.timeout_seconds`, `options.shell.commands.allow[0]`); none
    /// for a syntax error.
    pub key: Option<String>,
    pub message: String,
}

pub(super) fn render_problems(path: &Path, problems: &[ConfigProblem]) -> String {
    problems
        .iter()
        .map(|p| match &p.key {
            Some(k) => format!("{}:{}: {k}: {}", path.display(), p.line, p.message),
            None => format!("{}:{}: {}", path.display(), p.line, p.message),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl Coded for ConfigError {
    fn code(&self) -> ErrorCode {
        match self {
            ConfigError::Read { .. } => ErrorCode::ConfigUnreadable,
            ConfigError::Invalid { .. } | ConfigError::Overrides { .. } => ErrorCode::ConfigInvalid,
            ConfigError::ImportSource { .. } => ErrorCode::ImportSourceInvalid,
            ConfigError::NothingToImport { .. } => ErrorCode::ImportSourceMissing,
        }
    }
}

/// Stop collecting after this many problems (a file of garbage is one problem too many).
pub(super) const MAX_PROBLEMS: usize = 100;

/// One step of a key path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Seg {
    Key(String),
    Index(usize),
}

/// One key of a dotted path as written: bare when it can be, quoted otherwise (`"fs.write"`).
pub fn key_segment(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        format!("{k:?}")
    }
}

pub(super) fn key_text(path: &[Seg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&key_segment(k));
            }
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

pub(super) type DocTable<'i> = toml::de::DeTable<'i>;
pub(super) type DocValue<'i> = toml::de::DeValue<'i>;

/// Every key and array element of `table` with the spans of its key and value.
pub(super) fn nodes(
    table: &DocTable<'_>,
    prefix: &mut Vec<Seg>,
    out: &mut Vec<(Vec<Seg>, std::ops::Range<usize>, std::ops::Range<usize>)>,
) {
    for (k, v) in table.iter() {
        prefix.push(Seg::Key(k.get_ref().to_string()));
        out.push((prefix.clone(), k.span(), v.span()));
        value_nodes(v.get_ref(), prefix, out);
        prefix.pop();
    }
}

pub(super) fn value_nodes(
    value: &DocValue<'_>,
    prefix: &mut Vec<Seg>,
    out: &mut Vec<(Vec<Seg>, std::ops::Range<usize>, std::ops::Range<usize>)>,
) {
    match value {
        DocValue::Table(t) => nodes(t, prefix, out),
        DocValue::Array(a) => {
            for (i, item) in a.iter().enumerate() {
                prefix.push(Seg::Index(i));
                out.push((prefix.clone(), item.span(), item.span()));
                value_nodes(item.get_ref(), prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

/// The key whose key or value holds `span` most tightly.
pub(super) fn locate(doc: &DocTable<'_>, span: &std::ops::Range<usize>) -> Option<Vec<Seg>> {
    let mut all = Vec::new();
    nodes(doc, &mut Vec::new(), &mut all);
    let contains = |r: &std::ops::Range<usize>| r.start <= span.start && span.end <= r.end;
    all.into_iter()
        .filter_map(|(path, k, v)| {
            let fit = [k, v]
                .into_iter()
                .filter(|r| contains(r))
                .map(|r| r.end - r.start)
                .min()?;
            Some((fit, std::cmp::Reverse(path.len()), path))
        })
        .min_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)))
        .map(|(_, _, path)| path)
}

/// The span of the value at `path`.
pub(super) fn span_at(doc: &DocTable<'_>, path: &[Seg]) -> Option<std::ops::Range<usize>> {
    let (Seg::Key(first), rest) = path.split_first()? else {
        return None;
    };
    let mut cur = doc.get(first.as_str())?;
    for seg in rest {
        cur = match (seg, cur.get_ref()) {
            (Seg::Key(k), DocValue::Table(t)) => t.get(k.as_str())?,
            (Seg::Index(i), DocValue::Array(a)) => a.get(*i)?,
            _ => return None,
        };
    }
    Some(cur.span())
}

/// Removes the entry at `path`; false when there is none.
pub(super) fn remove_at(doc: &mut DocTable<'_>, path: &[Seg]) -> bool {
    match path {
        [Seg::Key(k)] => doc.remove(k.as_str()).is_some(),
        [Seg::Key(k), rest @ ..] => match doc.get_mut(k.as_str()) {
            Some(v) => remove_in(v.get_mut(), rest),
            None => false,
        },
        _ => false,
    }
}

pub(super) fn remove_in(value: &mut DocValue<'_>, path: &[Seg]) -> bool {
    match (value, path) {
        (DocValue::Table(t), _) => remove_at(t, path),
        (DocValue::Array(a), [Seg::Index(i)]) if *i < a.len() => {
            let mut kept = toml::de::DeArray::new();
            for (j, item) in a.iter().enumerate() {
                if j != *i {
                    kept.push(item.clone());
                }
            }
            *a = kept;
            true
        }
        (DocValue::Array(a), [Seg::Index(i), rest @ ..]) => match a.get_mut(*i) {
            Some(item) => remove_in(item.get_mut(), rest),
            None => false,
        },
        _ => false,
    }
}
