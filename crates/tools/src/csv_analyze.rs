//! `csv.analyze` (provider name `analyze_csv`): exact statistics of a delimited file.
//!
//! A model that reads a table and adds numbers up in its head gets them wrong; this tool parses
//! the file (RFC 4180 through the `csv` crate: quoted fields, doubled quotes, delimiters and line
//! breaks inside quotes, CRLF or LF) and computes every figure, so a report can quote numbers
//! that were computed rather than guessed. The file is read through the workspace handle, with the
//! same path rules as `fs.read`, and at most 10 MiB, 200,000 rows and 200 columns of it.
//!
//! Per column: its type, how many values and missing (empty) cells, how many distinct values.
//! A column is numeric only when every non-empty value is a number; then min, max, sum, mean,
//! median, quartiles (linear interpolation between closest ranks, as R's type 7 and NumPy's
//! default) and the sample standard deviation (n − 1). Boolean columns get counts, ISO-date
//! columns their first and last date, text columns their most frequent values. A column that is
//! mostly numbers with a few other values is reported as text, with a warning naming examples,
//! because silently dropping the odd values would make every figure wrong.

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::wording::{self, Args as CallArgs};
use super::{Tool, ToolContext, ToolResult, blocking, parse_args};
use pablo_core::{ErrorCode, ToolFailure, ToolKind, ToolName};
use pablo_protocol::Preview;
use pablo_protocol::describe::{CallView, ResultView, plural};
use pablo_workspace::Workspace;

mod stats;
#[cfg(test)]
mod tests;

pub use stats::{Analysis, CsvError, CsvOptions, MAX_BYTES, analyze};
pub(crate) use stats::{ColumnStats, MAX_COLUMNS, MAX_ROWS, TOP_VALUES};

pub(crate) struct CsvAnalyze {
    workspace: Arc<Workspace>,
}

impl CsvAnalyze {
    pub(crate) fn new(workspace: Arc<Workspace>) -> Self {
        Self { workspace }
    }
}

#[derive(Deserialize)]
struct Args {
    path: String,
    delimiter: Option<String>,
    has_header: Option<bool>,
}

fn delimiter_arg(raw: Option<&str>) -> Result<Option<u8>, ToolFailure> {
    match raw {
        None => Ok(None),
        Some(",") => Ok(Some(b',')),
        Some(";") => Ok(Some(b';')),
        Some("\t" | "tab" | "\\t") => Ok(Some(b'\t')),
        Some("|") => Ok(Some(b'|')),
        Some(other) => Err(ToolFailure::new(
            ErrorCode::InvalidArguments,
            format!("csv.analyze: delimiter {other:?} is not one of \",\", \";\", \"tab\", \"|\""),
        )),
    }
}

#[async_trait]
impl Tool for CsvAnalyze {
    fn name(&self) -> &'static str {
        ToolName::CsvAnalyze.native()
    }

    fn provider_name(&self) -> &'static str {
        ToolName::CsvAnalyze.provider()
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn description(&self) -> String {
        format!(
            "Compute exact statistics of a .csv, .tsv or delimited .txt file in the workspace, so \
             reports quote computed numbers. RFC 4180 parsing; the delimiter is detected among \
             , ; tab | unless given; the first row is the header unless has_header is false. Per \
             column: type (numeric, boolean, date, text, empty), values, missing, distinct; \
             numeric columns (every non-empty value a number) get min, max, sum, mean, median, \
             q1, q3 (linear interpolation) and the sample standard deviation; boolean columns \
             counts; ISO-date columns first and last; text columns their {TOP_VALUES} most \
             frequent values. Limits: {MAX_BYTES} bytes, {MAX_ROWS} rows, {MAX_COLUMNS} columns."
        )
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path relative to the workspace."},
                "delimiter": {"type": "string", "enum": [",", ";", "tab", "|"], "description": "The field delimiter; detected when absent."},
                "has_header": {"type": "boolean", "description": "Whether the first row names the columns (default true)."}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    async fn preview(&self, args: &Value, _ctx: &ToolContext) -> Result<Preview, ToolFailure> {
        let args: Args = parse_args(self.name(), args)?;
        delimiter_arg(args.delimiter.as_deref())?;
        let rel = self.workspace.parse_file(&args.path)?;
        let ext = rel
            .file_name()
            .and_then(|n| n.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()))
            .unwrap_or_default();
        if !matches!(ext.as_str(), "csv" | "tsv" | "txt") {
            return Err(CsvError::Format {
                path: rel.to_string(),
                extension: if ext.is_empty() {
                    "extensionless".into()
                } else {
                    format!(".{ext}")
                },
            }
            .into());
        }
        self.workspace.check_not_credential(&rel)?;
        Ok(Preview::Read {
            path: rel.to_string(),
        })
    }

    async fn commit_result(
        &self,
        args: &Value,
        preview: &Preview,
        _ctx: &ToolContext,
    ) -> Result<ToolResult, ToolFailure> {
        let args: Args = parse_args(self.name(), args)?;
        let delimiter = delimiter_arg(args.delimiter.as_deref())?;
        let Preview::Read { path } = preview else {
            return Err(ToolFailure::new(
                ErrorCode::Internal,
                "csv.analyze was committed without its read preview",
            ));
        };
        let rel = self.workspace.parse_file(path)?;
        let options = CsvOptions {
            delimiter,
            has_header: args.has_header.unwrap_or(true),
        };
        let workspace = self.workspace.clone();
        let shown = rel.to_string();
        let analysis = blocking(move || -> Result<Analysis, ToolFailure> {
            let file = workspace.read_file_capped(&rel, MAX_BYTES)?;
            Ok(analyze(&file.bytes, &options, &rel.to_string())?)
        })
        .await?;
        Ok(CsvResult {
            analysis,
            path: shown,
        }
        .into())
    }
}

/// What `csv.analyze` returns: the analysis, then the file it is of.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CsvResult {
    #[serde(flatten)]
    pub(crate) analysis: Analysis,
    pub(crate) path: String,
}

pub(crate) fn show_call(args: CallArgs<'_>) -> CallView {
    let title = format!("Analyze {}", args.clipped("path").unwrap_or_default());
    wording::call(args, title, args.text("path"))
}

/// `prices.csv: 3 rows, 2 columns`, then a line per column with its type and key figures.
pub(crate) fn show_result(data: &Value) -> Option<ResultView> {
    let r: CsvResult = wording::typed(data)?;
    let a = &r.analysis;
    let path = if data.get("path").is_some() {
        r.path.as_str()
    } else {
        "the file"
    };
    let headline = format!(
        "{path}: {}, {}",
        plural(a.rows, "row"),
        plural(a.columns.len() as u64, "column")
    );
    let mut body: Vec<String> = a.columns.iter().map(column_line).collect();
    body.extend(a.warnings.iter().map(|w| format!("warning: {w}")));
    Some(ResultView::lines(headline, body))
}

/// `price: numeric, 3 values, 0 missing, min 10, max 30, mean 20, median 20`.
fn column_line(c: &ColumnStats) -> String {
    let kind = if c.kind.is_empty() { "?" } else { &c.kind };
    let name = if c.name.is_empty() { "?" } else { &c.name };
    let mut parts = vec![
        format!("{name}: {kind}"),
        format!("{} values", c.values),
        format!("{} missing", c.missing),
    ];
    match kind {
        "numeric" => parts.extend(
            [
                ("min", c.min),
                ("max", c.max),
                ("mean", c.mean),
                ("median", c.median),
            ]
            .iter()
            .filter_map(|(k, v)| v.map(|v| format!("{k} {v}"))),
        ),
        "boolean" => parts.push(format!(
            "{} true, {} false",
            c.true_count.unwrap_or(0),
            c.false_count.unwrap_or(0)
        )),
        "date" => parts.push(format!(
            "{} to {}",
            c.first.as_deref().unwrap_or("?"),
            c.last.as_deref().unwrap_or("?")
        )),
        _ => parts.push(format!("{} distinct", c.distinct)),
    }
    parts.join(", ")
}
