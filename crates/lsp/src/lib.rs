//! Language servers: what they say about a file before an edit lands (the approval prompt shows
//! the errors it would introduce) and after (the model reads the errors it left), and what they
//! know of the code (`lsp.query`).
//!
//! A server is started the first time a file it covers is read or edited, never before, so a
//! session that touches no such file pays nothing. It runs like an approved command: in the
//! command environment (no secret) and the command sandbox (workspace-write at most, no
//! network), since a server may run the project's code (rust-analyzer runs build scripts). It
//! ends with the session (its process group is killed, and it cannot outlive pablo: see
//! `process::server`), and one that dies is started again a bounded number of times.
//!
//! Protocol types come from `lsp-types` (the maintained crate of the LSP structures, used by
//! most Rust servers and clients); the framing is pablo's own (`frame`), bounded.

mod client;
mod convert;
mod frame;
mod jsonrpc;
mod query;
mod servers;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use client::{ClientSpec, LspClient, Unanswered, file_uri};
use pablo_config::LspServerEntry;
use pablo_core::EventSink;
use pablo_process::sandbox::{Sandbox, SandboxSettings};
use pablo_protocol::{
    Diagnostic, DiagnosticsDelta, Event, FileDiagnostics, LspServerView, LspState,
    PreviewDiagnostics, SandboxChoice, SandboxProfile,
};
use servers::ServerDef;

pub use client::seconds;
pub use query::{LocateKind, LocationHit, SymbolHit};

/// How many times a server that died is started again in one session.
const MAX_RESTARTS: u32 = 3;

/// What the hub of a session is built from.
pub struct LspSetup {
    /// The servers the config layers define or adjust (the built-ins are added here).
    pub entries: Vec<LspServerEntry>,
    /// The command environment (no secret); its `PATH` finds the built-ins.
    pub env: Vec<(String, String)>,
    /// The session's command sandbox settings.
    pub sandbox: SandboxSettings,
    /// Where the servers' stderr logs go.
    pub log_dir: PathBuf,
    /// Whether the folder is trusted: until it is, only servers that do not run the project's
    /// code start ([`servers::READS_ONLY`]).
    pub project_trusted: bool,
}

/// The language servers of one session.
pub struct LspHub {
    workspace: PathBuf,
    defs: Vec<ServerDef>,
    env: Vec<(String, String)>,
    sandbox: Sandbox,
    log_dir: PathBuf,
    /// Servers left out because the folder is not trusted and they run the project's code.
    withheld: Vec<String>,
    slots: parking_lot::Mutex<HashMap<(usize, PathBuf), Arc<Slot>>>,
    /// Each server's state as `/status` shows it (the servers of `defs`, then the withheld).
    views: parking_lot::Mutex<Vec<LspServerView>>,
    /// Where a change of state is said, once the session runs.
    events: parking_lot::Mutex<Option<EventSink>>,
}

/// One server at one root: started on first use, restarted when it dies (bounded).
#[derive(Default)]
struct Slot {
    state: tokio::sync::Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    client: Option<Arc<LspClient>>,
    restarts: u32,
    /// Why it will not be started again in this session.
    failed: Option<String>,
}

impl LspHub {
    /// A hub with no server: every question is answered at once with nothing.
    pub fn empty() -> Self {
        Self {
            workspace: PathBuf::new(),
            defs: Vec::new(),
            env: Vec::new(),
            sandbox: Sandbox::off(),
            log_dir: PathBuf::new(),
            withheld: Vec::new(),
            slots: parking_lot::Mutex::default(),
            views: parking_lot::Mutex::default(),
            events: parking_lot::Mutex::default(),
        }
    }

    /// The hub of a session in `workspace`. Starts nothing.
    pub fn new(workspace: &Path, setup: LspSetup) -> Self {
        let path = setup
            .env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.as_str())
            .unwrap_or(pablo_config::CLEAN_PATH);
        let var = |name: &str| {
            setup
                .env
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| PathBuf::from(v))
        };
        let rustup_home = var("RUSTUP_HOME").or_else(|| var("HOME").map(|h| h.join(".rustup")));
        let (defs, withheld) = servers::withhold_untrusted(
            servers::resolve(&setup.entries, path, rustup_home.as_deref()),
            setup.project_trusted,
        );
        // The command sandbox, never looser than workspace-write and never with the network:
        // a server is not a command the person approved.
        let profile = if setup.sandbox.profile == SandboxProfile::ReadOnly {
            SandboxProfile::ReadOnly
        } else {
            SandboxProfile::WorkspaceWrite
        };
        let choice = SandboxChoice {
            profile,
            network: false,
            known_safe: false,
            credentials_masked: false,
            degraded: None,
        };
        let sandbox = setup.sandbox.sandbox(&choice, workspace);
        let view = |name: &str, state| LspServerView {
            name: name.to_string(),
            state,
            restarts: 0,
            reason: None,
        };
        let views = defs
            .iter()
            .map(|d| view(&d.name, LspState::NotStarted))
            .chain(withheld.iter().map(|n| view(n, LspState::Withheld)))
            .collect();
        Self {
            workspace: workspace.to_path_buf(),
            defs,
            env: setup.env,
            sandbox,
            log_dir: setup.log_dir,
            withheld,
            slots: parking_lot::Mutex::default(),
            views: parking_lot::Mutex::new(views),
            events: parking_lot::Mutex::default(),
        }
    }

    /// From now on every change of a server's state goes to `events` as
    /// [`Event::LanguageServers`]; the states as they are go there at once (when there are any).
    pub fn report_to(&self, events: EventSink) {
        *self.events.lock() = Some(events);
        self.emit_views();
    }

    /// Each server's state, in config order, the withheld after.
    pub fn views(&self) -> Vec<LspServerView> {
        self.views.lock().clone()
    }

    fn emit_views(&self) {
        let servers = self.views();
        let sink = self.events.lock().clone();
        if let Some(sink) = sink
            && !servers.is_empty()
        {
            sink.send(Event::LanguageServers { servers });
        }
    }

    /// Server `i` is now in `state`.
    fn set_state(&self, i: usize, state: LspState, restarts: u32, reason: Option<String>) {
        {
            let mut views = self.views.lock();
            let Some(v) = views.get_mut(i) else { return };
            if v.state == state && v.restarts == restarts && v.reason == reason {
                return;
            }
            v.state = state;
            v.restarts = restarts;
            v.reason = reason;
        }
        self.emit_views();
    }

    /// The names of the servers this session may start.
    pub fn server_names(&self) -> Vec<String> {
        self.defs.iter().map(|d| d.name.clone()).collect()
    }

    /// The servers left out until the folder is trusted.
    pub fn withheld(&self) -> &[String] {
        &self.withheld
    }

    /// Whether some server covers `rel` (a workspace-relative path).
    pub fn covers(&self, rel: &str) -> bool {
        self.defs.iter().any(|d| d.covers(rel))
    }

    /// The names of the servers that cover `rel`.
    pub fn servers_for(&self, rel: &str) -> Vec<String> {
        self.covering(rel).map(|(_, d)| d.name.clone()).collect()
    }

    fn covering<'a>(&'a self, rel: &'a str) -> impl Iterator<Item = (usize, &'a ServerDef)> + 'a {
        self.defs
            .iter()
            .enumerate()
            .filter(move |(_, d)| d.covers(rel))
    }

    /// Starts, in the background, the servers that cover `rel` (a file was read: an edit of it
    /// may follow, and a warm server answers at once).
    pub fn warm(self: &Arc<Self>, rel: &str) {
        if !self.covers(rel) {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let ids: Vec<usize> = self.covering(rel).map(|(i, _)| i).collect();
        for i in ids {
            let hub = self.clone();
            let rel = rel.to_string();
            rt.spawn(async move {
                let _ = hub.client(i, &rel).await;
            });
        }
    }

    /// The running client of server `i` for `rel`, started (or started again) when needed.
    async fn client(&self, i: usize, rel: &str) -> Result<Arc<LspClient>, String> {
        let def = &self.defs[i];
        let root = def.root_for(&self.workspace, rel);
        let slot = self
            .slots
            .lock()
            .entry((i, root.clone()))
            .or_default()
            .clone();
        let mut state = slot.state.lock().await;
        if let Some(reason) = &state.failed {
            return Err(reason.clone());
        }
        if let Some(c) = &state.client {
            if c.alive() {
                return Ok(c.clone());
            }
            state.client = None;
            state.restarts += 1;
            if state.restarts > MAX_RESTARTS {
                let reason = format!(
                    "{} exited {} times; not started again in this session (its log: {})",
                    def.name,
                    state.restarts,
                    self.log(def).display()
                );
                state.failed = Some(reason.clone());
                self.set_state(
                    i,
                    LspState::Failed,
                    state.restarts - 1,
                    Some(reason.clone()),
                );
                return Err(reason);
            }
        }
        let spec = ClientSpec {
            name: def.name.clone(),
            argv: def.argv.clone(),
            env: self.env_for(def),
            root,
            log: self.log(def),
            sandbox: self.sandbox.clone(),
            initialization_options: def.initialization_options.clone(),
            startup_timeout: def.startup_timeout,
        };
        match LspClient::start(&spec).await {
            Ok(c) => {
                let c = Arc::new(c);
                state.client = Some(c.clone());
                self.set_state(i, LspState::Ready, state.restarts, None);
                Ok(c)
            }
            Err(e) => {
                let reason = format!(
                    "{} could not start: {e} (its log: {})",
                    def.name,
                    spec.log.display()
                );
                state.failed = Some(reason.clone());
                self.set_state(i, LspState::Failed, state.restarts, Some(reason.clone()));
                Err(reason)
            }
        }
    }

    fn log(&self, def: &ServerDef) -> PathBuf {
        self.log_dir.join(format!("{}.log", def.name))
    }

    fn env_for(&self, def: &ServerDef) -> Vec<(String, String)> {
        let mut env = self.env.clone();
        for (k, v) in &def.env {
            env.retain(|(name, _)| name != k);
            env.push((k.clone(), v.clone()));
        }
        env
    }

    /// What each server covering `rel` says of `text` as its content, in config order: its
    /// diagnostics (all severities), or why it did not answer. Each server gets its own wait
    /// after it has the text (`wait` instead, when given); `start_bound` caps the whole,
    /// start-up included.
    async fn ask(
        &self,
        rel: &str,
        text: &str,
        start_bound: Option<Duration>,
        wait: Option<Duration>,
    ) -> Vec<(String, Result<Vec<Diagnostic>, Unanswered>)> {
        let uri = match file_uri(&self.workspace.join(rel)) {
            Some(u) => u,
            None => return Vec::new(),
        };
        let lang = servers::language_id(rel);
        let asks = self.covering(rel).map(|(i, def)| {
            let uri = uri.clone();
            let lang = lang.clone();
            async move {
                let work = async {
                    let client = self.client(i, rel).await.map_err(Unanswered::Failed)?;
                    let raw = client
                        .diagnostics(&uri, &lang, text, wait.unwrap_or(def.wait))
                        .await?;
                    Ok(raw
                        .iter()
                        .map(|d| convert::diagnostic(d, &def.name))
                        .collect())
                };
                let answer = match start_bound {
                    Some(b) => tokio::time::timeout(b, work).await.unwrap_or_else(|_| {
                        Err(Unanswered::Late(format!(
                            "{}: no diagnostics within {}",
                            def.name,
                            seconds(b)
                        )))
                    }),
                    None => work.await,
                };
                (def.name.clone(), answer)
            }
        });
        futures::future::join_all(asks).await
    }

    /// What replacing `old` (`None`: the file is new) with `new` at `rel` would introduce and fix,
    /// by every server that covers it. Nothing is written: the servers get the texts as unsaved
    /// versions. A server that is slow, hung or gone is named in `unavailable`.
    pub async fn check_change(
        &self,
        rel: &str,
        old: Option<&str>,
        new: &str,
    ) -> PreviewDiagnostics {
        self.check_change_waiting(rel, old, new, None, false)
            .await
            .0
    }

    /// [`Self::check_change`], each server waited for `wait` instead of its own wait when given;
    /// also whether a server was only slow (asked again with a longer wait, it may answer).
    /// `asks_again`: the caller will ask a slow server again, and its line says so.
    pub async fn check_change_waiting(
        &self,
        rel: &str,
        old: Option<&str>,
        new: &str,
        wait: Option<Duration>,
        asks_again: bool,
    ) -> (PreviewDiagnostics, bool) {
        let before = match old {
            Some(old) => self.ask(rel, old, None, wait).await,
            None => self
                .servers_for(rel)
                .into_iter()
                .map(|n| (n, Ok(Vec::new())))
                .collect(),
        };
        let after = self.ask(rel, new, None, wait).await;
        let mut old_all = Vec::new();
        let mut new_all = Vec::new();
        let mut servers = Vec::new();
        let mut unavailable = Vec::new();
        let mut late = false;
        for ((name, b), (_, a)) in before.into_iter().zip(after) {
            match (b, a) {
                (Ok(b), Ok(a)) => {
                    old_all.extend(b);
                    new_all.extend(a);
                    servers.push(name);
                }
                (Err(e), _) | (_, Err(e)) => {
                    let slow = matches!(e, Unanswered::Late(_));
                    late |= slow;
                    unavailable.push(if slow && asks_again {
                        format!("{} (still waiting for it)", e.text())
                    } else {
                        e.text().to_string()
                    });
                }
            }
        }
        if servers.is_empty() {
            let reason = if unavailable.is_empty() {
                "no language server covers this file".into()
            } else {
                unavailable.join("; ")
            };
            return (PreviewDiagnostics::Unavailable { reason }, late);
        }
        let mut d: DiagnosticsDelta = convert::delta(old_all, new_all);
        d.servers = servers;
        d.unavailable = unavailable;
        (PreviewDiagnostics::Ready(d), late)
    }

    /// The errors and warnings of `text`, the content `rel` now has on disk, bounded; waits at
    /// most `bound` in all (a server still starting counts against it).
    pub async fn file_diagnostics(
        &self,
        rel: &str,
        text: &str,
        bound: Duration,
    ) -> FileDiagnostics {
        let mut out = FileDiagnostics::default();
        let mut all = Vec::new();
        for (name, answer) in self.ask(rel, text, Some(bound), None).await {
            match answer {
                Ok(list) => {
                    all.extend(list);
                    out.servers.push(name);
                }
                Err(e) => out.unavailable.push(e.text().to_string()),
            }
        }
        let (list, omitted) = convert::bound(convert::serious(all));
        out.diagnostics = list;
        out.omitted = omitted;
        out
    }

    /// The longest wait of the servers that cover `rel` (how long a commit waits for them).
    pub fn wait_for(&self, rel: &str) -> Duration {
        self.covering(rel)
            .map(|(_, d)| d.wait)
            .max()
            .unwrap_or_default()
    }
}
