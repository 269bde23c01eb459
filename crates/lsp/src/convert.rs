//! A server's diagnostics in pablo's terms, and the comparison of two texts' diagnostics that
//! tells a reviewer what an edit introduces and fixes.

use std::collections::HashMap;

use pablo_protocol::{Diagnostic, DiagnosticsDelta, Severity};

/// The most diagnostics one list of a report or a result holds; the rest are counted.
pub const MAX_LISTED: usize = 20;
/// The longest message kept (servers can explain at length; the first lines say what matters).
const MAX_MESSAGE_CHARS: usize = 500;

/// One server diagnostic; `server` is the source when the diagnostic names none.
pub fn diagnostic(d: &lsp_types::Diagnostic, server: &str) -> Diagnostic {
    let severity = match d.severity {
        Some(lsp_types::DiagnosticSeverity::WARNING) => Severity::Warning,
        Some(lsp_types::DiagnosticSeverity::INFORMATION) => Severity::Information,
        Some(lsp_types::DiagnosticSeverity::HINT) => Severity::Hint,
        _ => Severity::Error,
    };
    let mut message: String = d.message.chars().take(MAX_MESSAGE_CHARS).collect();
    if message.len() < d.message.len() {
        message.push('…');
    }
    Diagnostic {
        line: d.range.start.line.saturating_add(1),
        column: d.range.start.character.saturating_add(1),
        severity,
        message,
        source: Some(d.source.clone().unwrap_or_else(|| server.to_string())),
        code: d.code.as_ref().map(|c| match c {
            lsp_types::NumberOrString::Number(n) => n.to_string(),
            lsp_types::NumberOrString::String(s) => s.clone(),
        }),
    }
}

/// Errors and warnings only: what a reviewer and the model act on.
pub fn serious(list: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut list: Vec<Diagnostic> = list
        .into_iter()
        .filter(|d| matches!(d.severity, Severity::Error | Severity::Warning))
        .collect();
    list.sort_by_key(|d| (d.severity, d.line, d.column));
    list
}

/// What `new` has that `old` has not, and the other way round. Diagnostics are matched by what
/// they say (severity, source, code, message), not where: an edit above moves the lines below.
pub fn delta(old: Vec<Diagnostic>, new: Vec<Diagnostic>) -> DiagnosticsDelta {
    let key = |d: &Diagnostic| {
        (
            d.severity,
            d.source.clone(),
            d.code.clone(),
            d.message.clone(),
        )
    };
    let old = serious(old);
    let new = serious(new);
    let mut counts: HashMap<_, i64> = HashMap::new();
    for d in &old {
        *counts.entry(key(d)).or_default() += 1;
    }
    let mut introduced = Vec::new();
    for d in new {
        match counts.get_mut(&key(&d)) {
            Some(n) if *n > 0 => *n -= 1,
            _ => introduced.push(d),
        }
    }
    // What is left of the old counts was fixed; take those old diagnostics in order.
    let mut fixed = Vec::new();
    for d in old.into_iter().rev() {
        if let Some(n) = counts.get_mut(&key(&d))
            && *n > 0
        {
            *n -= 1;
            fixed.push(d);
        }
    }
    fixed.reverse();
    let (introduced, introduced_omitted) = bound(introduced);
    let (fixed, fixed_omitted) = bound(fixed);
    DiagnosticsDelta {
        introduced,
        fixed,
        introduced_omitted,
        fixed_omitted,
        servers: Vec::new(),
        unavailable: Vec::new(),
    }
}

/// The first [`MAX_LISTED`] of `list` and how many were left out.
pub fn bound(mut list: Vec<Diagnostic>) -> (Vec<Diagnostic>, usize) {
    let omitted = list.len().saturating_sub(MAX_LISTED);
    list.truncate(MAX_LISTED);
    (list, omitted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(line: u32, sev: Severity, msg: &str) -> Diagnostic {
        Diagnostic {
            line,
            column: 1,
            severity: sev,
            message: msg.into(),
            source: Some("Pyright".into()),
            code: None,
        }
    }

    #[test]
    fn a_moved_diagnostic_is_neither_introduced_nor_fixed() {
        let old = vec![
            d(3, Severity::Error, "x is unbound"),
            d(9, Severity::Error, "bad"),
        ];
        let new = vec![
            d(5, Severity::Error, "x is unbound"),
            d(1, Severity::Error, "new one"),
            d(2, Severity::Hint, "unused"),
        ];
        let r = delta(old, new);
        assert_eq!(r.introduced, vec![d(1, Severity::Error, "new one")]);
        assert_eq!(r.fixed, vec![d(9, Severity::Error, "bad")]);
        assert_eq!(r.summary(), "introduces 1 error · fixes 1");
    }

    #[test]
    fn two_equal_errors_where_there_was_one_introduce_one() {
        let r = delta(
            vec![d(1, Severity::Error, "e")],
            vec![
                d(1, Severity::Error, "e"),
                d(4, Severity::Error, "e"),
                d(5, Severity::Warning, "w"),
            ],
        );
        assert_eq!(r.introduced.len(), 2);
        assert_eq!(r.summary(), "introduces 1 error and 1 warning");
    }

    #[test]
    fn a_long_list_is_bounded_and_counted() {
        let many: Vec<_> = (0..30)
            .map(|i| d(i, Severity::Error, &format!("e{i}")))
            .collect();
        let r = delta(Vec::new(), many);
        assert_eq!(r.introduced.len(), MAX_LISTED);
        assert_eq!(r.introduced_omitted, 10);
        assert_eq!(r.summary(), "introduces 30 errors");
    }
}
