//! What `benches/lsp.rs` measures; see [`super`].
//!
//! A session's language-server hub built from `[lsp]` config text: the check the approval prompt
//! runs on a previewed edit, and the checks an edit and a read make when no server is configured.

use std::path::Path;
use std::sync::Arc;

use crate::config::LspServerEntry;
use crate::lsp::{LspHub, LspSetup};
use crate::protocol::PreviewDiagnostics;

/// The hub of a trusted workspace whose servers are the `[lsp.NAME]` tables of `toml` (nothing
/// else from the config layers), with `PATH` as the whole command environment, the default
/// sandbox settings and the servers' logs in `workspace/.logs`.
pub struct LspBenchHub {
    hub: Arc<LspHub>,
}

impl LspBenchHub {
    pub fn new(workspace: &Path, toml: &str, path: &str) -> Self {
        let entries = LspServerEntry::from_config_text(toml, Path::new("bench.toml"))
            .expect("the bench's [lsp] config parses");
        let setup = LspSetup {
            entries,
            env: vec![("PATH".into(), path.into())],
            sandbox: Default::default(),
            log_dir: workspace.join(".logs"),
            project_trusted: true,
        };
        Self {
            hub: Arc::new(LspHub::new(workspace, setup)),
        }
    }

    /// How many servers the hub has (the built-ins found on `PATH` included).
    pub fn server_count(&self) -> usize {
        self.hub.server_names().len()
    }

    /// One check as the approval prompt runs it, on `rt`: `old` and `new` sent as unsaved
    /// versions of `rel`, both answers awaited and compared. Panics unless the servers answered
    /// (a check that timed out or found no server is not what the bench measures).
    pub fn check_change_ready(
        &self,
        rt: &tokio::runtime::Runtime,
        rel: &str,
        old: &str,
        new: &str,
    ) {
        let r = rt.block_on(self.hub.check_change(rel, Some(old), new));
        assert!(matches!(r, PreviewDiagnostics::Ready(_)), "{r:?}");
    }

    /// What an edit and a read of `rel` ask the hub: whether a server covers it, and a warm-up of
    /// the servers that do (needs a runtime entered); whether it is covered.
    pub fn covers_and_warm(&self, rel: &str) -> bool {
        let covered = self.hub.covers(rel);
        self.hub.warm(rel);
        covered
    }
}
