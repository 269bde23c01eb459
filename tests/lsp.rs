//! Integration tests: language servers (docs/lsp.md), against pyright from npm and ruff from
//! PyPI (installed under tests/lsp_servers by .ci/run).
//!
//! The hub is driven directly where a test needs to look at the server's process (none may
//! outlive its session) or time its answers; everything else goes through the real `pablo`
//! binary against a scripted provider on 127.0.0.1.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use pablo::config::LspServerEntry;
use pablo::lsp::{LspHub, LspSetup};
use pablo::protocol::{PreviewDiagnostics, Severity};

use crate::support::lsp::{pyright_or_skip, pyright_table, ruff_or_skip, ruff_table};

/// A hub over `workspace` with the servers of `toml` (`[lsp.NAME]` tables).
fn hub(workspace: &Path, toml: &str) -> Arc<LspHub> {
    let file: pablo::config::ConfigFile = toml::from_str(toml).unwrap();
    let entries = file
        .lsp
        .into_iter()
        .map(|(name, config)| LspServerEntry {
            name,
            config,
            source: "test".into(),
        })
        .collect();
    let setup = LspSetup {
        entries,
        env: vec![
            ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
            ("HOME".into(), workspace.join(".home").display().to_string()),
        ],
        sandbox: Default::default(),
        log_dir: workspace.join(".logs"),
    };
    Arc::new(LspHub::new(&workspace.canonicalize().unwrap(), setup))
}

const GOOD: &str = "def greet(name: str) -> str:\n    return \"hi \" + name\n\n\nprint(greet(\"x\"))\n";
const BAD: &str = "def greet(name: str) -> str:\n    return \"hi \" + name\n\n\nprint(greet(42))\n";

fn ready(d: PreviewDiagnostics) -> pablo::protocol::DiagnosticsDelta {
    match d {
        PreviewDiagnostics::Ready(r) => r,
        other => panic!("no answer: {other:?}"),
    }
}

#[tokio::test]
async fn pyright_reports_the_type_error_an_edit_introduces_and_the_fix_that_removes_it() {
    let Some((node, script)) = pyright_or_skip("pyright_reports_…") else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("app.py"), GOOD).unwrap();
    let hub = hub(ws.path(), &pyright_table(&node, &script, 30_000));
    let r = ready(hub.check_change("app.py", Some(GOOD), BAD).await);
    assert_eq!(r.servers, ["pyright"]);
    assert_eq!(r.introduced.len(), 1, "{r:?}");
    let e = &r.introduced[0];
    assert_eq!((e.line, e.severity), (5, Severity::Error), "{e:?}");
    assert!(e.message.contains("Literal[42]"), "{e:?}");
    assert_eq!(r.summary(), "introduces 1 error");
    // The file on disk was not touched: the server had the text as an unsaved version.
    assert_eq!(std::fs::read_to_string(ws.path().join("app.py")).unwrap(), GOOD);
    // The other way round, the same error is fixed.
    let r = ready(hub.check_change("app.py", Some(BAD), GOOD).await);
    assert!(r.introduced.is_empty(), "{r:?}");
    assert_eq!(r.summary(), "fixes 1");
    // After a commit, the file's own diagnostics list the error.
    let after = hub
        .file_diagnostics("app.py", BAD, Duration::from_secs(30))
        .await;
    assert_eq!(after.diagnostics.len(), 1, "{after:?}");
    assert_eq!(after.diagnostics[0].source.as_deref(), Some("Pyright"));
}

#[tokio::test]
async fn ruff_server_reports_an_unused_import_beside_pyright() {
    let (Some((node, script)), Some(ruff)) = (
        pyright_or_skip("ruff_server_reports_…"),
        ruff_or_skip("ruff_server_reports_…"),
    ) else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("m.py"), GOOD).unwrap();
    let toml = format!(
        "{}{}",
        pyright_table(&node, &script, 30_000),
        ruff_table(&ruff, 30_000)
    );
    let hub = hub(ws.path(), &toml);
    let new = format!("import os\n{GOOD}");
    let r = ready(hub.check_change("m.py", Some(GOOD), &new).await);
    assert_eq!(r.servers, ["pyright", "ruff"], "{r:?}");
    assert!(
        r.introduced
            .iter()
            .any(|d| d.source.as_deref() == Some("Ruff") && d.code.as_deref() == Some("F401")),
        "{r:?}"
    );
}
