//! The language servers' verdict in the approval prompt of a file change: `checking…` while
//! they work, then what the change introduces and fixes, with each message at its line. The
//! prompt keeps the verdict on the whole change and the one on the subset of hunks last asked
//! about, and shows whichever matches the hunks accepted now.

use ratatui::text::{Line, Span};

use super::text::wrap_line;
use super::theme;
use pablo_protocol::{Diagnostic, PreviewDiagnostics, Severity};

/// The most messages of each kind the prompt lists (the servers' reports are bounded too).
const MAX_SHOWN: usize = 8;

#[derive(Debug, Default, Clone)]
pub(crate) struct ApprovalDiagnostics {
    whole: Option<PreviewDiagnostics>,
    subset: Option<(Vec<usize>, PreviewDiagnostics)>,
    /// Bumped on every update, so the laid-out body is laid out again.
    pub(crate) version: u64,
}

impl ApprovalDiagnostics {
    /// Keeps what the agent said of `hunks` (`None`: the whole change).
    pub(crate) fn update(&mut self, hunks: Option<Vec<usize>>, d: PreviewDiagnostics) {
        match hunks {
            None => self.whole = Some(d),
            Some(h) => self.subset = Some((h, d)),
        }
        self.version += 1;
    }

    /// Whether any server checks this change (then a toggle of hunks asks again).
    pub(crate) fn active(&self) -> bool {
        self.whole.is_some()
    }

    /// The verdict that matches the hunks accepted now: the whole change's, the subset's, or
    /// `checking` while the subset's is awaited.
    fn shown(&self, accepted: &[bool]) -> Option<PreviewDiagnostics> {
        let whole = self.whole.as_ref()?;
        if accepted.iter().all(|a| *a) {
            return Some(whole.clone());
        }
        let wanted: Vec<usize> = (0..accepted.len()).filter(|i| accepted[*i]).collect();
        match &self.subset {
            Some((h, d)) if *h == wanted => Some(d.clone()),
            _ => Some(PreviewDiagnostics::Checking {
                servers: Vec::new(),
            }),
        }
    }

    /// The prompt's lines for the hunks accepted now (none when no server covers the file).
    pub(crate) fn lines(&self, accepted: &[bool], width: usize) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        let Some(d) = self.shown(accepted) else {
            return out;
        };
        let label = Span::styled("diagnostics: ", theme::dim());
        match d {
            PreviewDiagnostics::Checking { servers } => {
                let by = if servers.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", servers.join(", "))
                };
                out.push(Line::from(vec![
                    label,
                    Span::styled(format!("checking…{by}"), theme::dim()),
                ]));
            }
            PreviewDiagnostics::Unavailable { reason } => {
                let line = Line::from(vec![
                    label,
                    Span::styled(format!("not checked: {reason}"), theme::warn()),
                ]);
                wrap_line(&line, width, 2, &mut out);
            }
            PreviewDiagnostics::Ready(r) => {
                let introduces_errors = r.introduced.iter().any(|d| d.severity == Severity::Error)
                    || r.introduced_omitted > 0;
                let style = if introduces_errors {
                    theme::error()
                } else if !r.introduced.is_empty() {
                    theme::warn()
                } else {
                    theme::ok()
                };
                out.push(Line::from(vec![
                    label,
                    Span::styled(r.summary(), style),
                    Span::styled(format!("  ({})", r.servers.join(", ")), theme::dim()),
                ]));
                for d in r.introduced.iter().take(MAX_SHOWN) {
                    push_diagnostic(d, "+", width, &mut out);
                }
                for d in r.fixed.iter().take(MAX_SHOWN) {
                    push_diagnostic(d, "fixed", width, &mut out);
                }
                let more = r.introduced.len().saturating_sub(MAX_SHOWN)
                    + r.fixed.len().saturating_sub(MAX_SHOWN)
                    + r.introduced_omitted
                    + r.fixed_omitted;
                if more > 0 {
                    out.push(Line::from(Span::styled(
                        format!("  … {more} more"),
                        theme::dim(),
                    )));
                }
                for u in &r.unavailable {
                    let line = Line::from(Span::styled(format!("  {u}"), theme::warn()));
                    wrap_line(&line, width, 4, &mut out);
                }
            }
        }
        out
    }
}

/// `  + L5 error  Argument of type … (Pyright)`: the first line of the message, wrapped.
fn push_diagnostic(d: &Diagnostic, mark: &str, width: usize, out: &mut Vec<Line<'static>>) {
    let fixed = mark == "fixed";
    let style = match (fixed, d.severity) {
        (true, _) => theme::dim(),
        (false, Severity::Error) => theme::error(),
        (false, _) => theme::warn(),
    };
    let first = d.message.lines().next().unwrap_or_default().to_string();
    let source = d
        .source
        .as_ref()
        .map(|s| format!(" ({s})"))
        .unwrap_or_default();
    let line = Line::from(vec![
        Span::styled(
            format!("  {mark} L{} {} ", d.line, d.severity.label()),
            style,
        ),
        Span::raw(first),
        Span::styled(source, theme::dim()),
    ]);
    wrap_line(&line, width, 4, out);
}
