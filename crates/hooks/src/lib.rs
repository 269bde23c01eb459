//! Hooks: the person's own programs, run around prompts, tool calls and file changes.
//!
//! A hook is configured (`[[hooks.EVENT]]`), not chosen by the model: the model has no tool that
//! can add or change one, the project layer's hooks count only in a trusted folder, and `.pablo/`
//! stays out of every command's reach. This module settles the layers into [`Hooks`] (each
//! entry's matchers compiled once, so a call that matches nothing costs a few regex checks),
//! runs a matching hook ([`run`]) and reads its answer ([`answer`]) in the protocol Claude Code's
//! hooks speak, so their scripts port. What an answer does to a turn is the agent's business.

pub mod answer;
pub mod input;
pub mod run;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use regex::Regex;

pub use answer::{HookAnswer, HookDecision};
pub use input::{EventInput, HookInput};
pub use run::HookRun;

use pablo_config::{HookEntry, Layers, OnFailure};

/// The default time a hook may run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The events a hook may be attached to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookEvent {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    FileChanged,
    Stop,
    PreCompact,
    Notification,
}

impl HookEvent {
    pub const ALL: [HookEvent; 8] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::FileChanged,
        HookEvent::Stop,
        HookEvent::PreCompact,
        HookEvent::Notification,
    ];

    /// pablo's spelling, as in `[[hooks.pre_tool_use]]`.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "session_start",
            HookEvent::UserPromptSubmit => "user_prompt_submit",
            HookEvent::PreToolUse => "pre_tool_use",
            HookEvent::PostToolUse => "post_tool_use",
            HookEvent::FileChanged => "file_changed",
            HookEvent::Stop => "stop",
            HookEvent::PreCompact => "pre_compact",
            HookEvent::Notification => "notification",
        }
    }

    /// Claude Code's spelling (`hook_event_name`), so its scripts that switch on it port.
    pub(crate) fn claude_name(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::FileChanged => "FileChanged",
            HookEvent::Stop => "Stop",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::Notification => "Notification",
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// Whether a failure of the hook may stop what it guards (`on_failure` counts).
    pub fn guards(self) -> bool {
        matches!(self, HookEvent::PreToolUse | HookEvent::UserPromptSubmit)
    }
}

/// One configured hook, ready to match and run.
#[derive(Debug, Clone)]
pub struct Hook {
    pub name: String,
    pub command: String,
    /// Anchored at both ends.
    matcher: Option<Regex>,
    command_matcher: Option<Regex>,
    pub timeout: Duration,
    pub on_failure: OnFailure,
    /// Where it was defined (`user config /home/…/config.toml`).
    pub source: String,
    /// The entry as written (for `pablo hooks list`).
    pub entry: HookEntry,
}

impl Hook {
    fn compile(entry: &HookEntry, source: &str) -> Result<Self, String> {
        let regex = |p: &Option<String>, anchored: bool| -> Result<Option<Regex>, String> {
            p.as_deref()
                .map(|p| {
                    let text = if anchored {
                        format!("^(?:{p})$")
                    } else {
                        p.to_string()
                    };
                    Regex::new(&text).map_err(|e| format!("{p:?} is not a regular expression: {e}"))
                })
                .transpose()
        };
        Ok(Self {
            name: entry.display_name(),
            command: entry.command.clone(),
            matcher: regex(&entry.matcher, true)?,
            command_matcher: regex(&entry.command_matcher, false)?,
            timeout: entry
                .timeout_ms
                .map(Duration::from_millis)
                .unwrap_or(DEFAULT_TIMEOUT),
            on_failure: entry.on_failure.unwrap_or_default(),
            source: source.to_string(),
            entry: entry.clone(),
        })
    }

    /// A program of the person's run on its own, not at an event (the status line's command):
    /// no matcher, `timeout` to run.
    pub fn program(name: &str, command: &str, timeout: Duration, source: &str) -> Self {
        let entry = HookEntry {
            name: Some(name.to_string()),
            matcher: None,
            command_matcher: None,
            command: command.to_string(),
            timeout_ms: Some(timeout.as_millis() as u64),
            on_failure: None,
        };
        Self {
            name: name.to_string(),
            command: command.to_string(),
            matcher: None,
            command_matcher: None,
            timeout,
            on_failure: OnFailure::Allow,
            source: source.to_string(),
            entry,
        }
    }

    /// Whether the hook has a `command_matcher` (it needs the parsed shell command).
    pub(crate) fn looks_into_commands(&self) -> bool {
        self.command_matcher.is_some()
    }

    /// Whether the hook is for this `subject` (a tool's native name, a changed path, a
    /// notification's kind) and, for a shell command, one of its simple `commands`.
    pub fn matches(&self, subject: Option<&str>, commands: Option<&[String]>) -> bool {
        if let (Some(m), Some(s)) = (&self.matcher, subject)
            && !m.is_match(s)
        {
            return false;
        }
        match (&self.command_matcher, commands) {
            (Some(m), Some(cmds)) => cmds.iter().any(|c| m.is_match(c)),
            // A command matcher says the hook is about shell commands only.
            (Some(_), None) => false,
            (None, _) => true,
        }
    }
}

/// A hook of a layer that does not run, and why (for `pablo hooks list` and the start notes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ignored {
    pub event: &'static str,
    pub name: String,
    pub source: String,
    pub why: String,
}

/// The session's hooks, by event, and what they run with.
#[derive(Debug, Default)]
pub struct Hooks {
    by_event: [Vec<Hook>; 8],
    /// The environment every hook gets (the same clean one commands get: no key, no secret).
    env: Vec<(String, String)>,
    /// Where hooks run: the workspace.
    cwd: PathBuf,
    /// pablo's own directories, read-only to every hook (see [`Hooks::protecting`]).
    protected: Vec<PathBuf>,
    ignored: Vec<Ignored>,
    /// Warnings about hooks that do run (a program the model could rewrite).
    notes: Vec<String>,
}

impl Hooks {
    /// No hook at all.
    pub fn none() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// No hook yet (add them with [`Hooks::push`]); they will run in `cwd` with `env`.
    pub fn new(env: Vec<(String, String)>, cwd: PathBuf) -> Self {
        Self {
            env,
            cwd,
            ..Self::default()
        }
    }

    /// No hook: what runs the person's other programs (the status line's command) with the
    /// environment and place hooks get (`env` and the person's `HOME`, in `cwd`).
    pub fn for_programs(env: Vec<(String, String)>, cwd: PathBuf) -> Self {
        Self {
            env: with_home(env, std::env::var_os("HOME")),
            cwd,
            ..Self::default()
        }
    }

    /// The hooks of the layers: user, project (only when `project_trusted`), `--config`, in that
    /// order, each event's entries run in that order.
    pub fn from_layers(
        layers: &Layers,
        project_trusted: bool,
        env: Vec<(String, String)>,
        cwd: PathBuf,
    ) -> Self {
        let mut hooks = Self {
            env: with_home(env, std::env::var_os("HOME")),
            cwd,
            ..Self::default()
        };
        let layers = [
            (&layers.user, "user config", true),
            (&layers.project, "project config", project_trusted),
            (&layers.explicit, "--config", true),
            // The person's own `PABLO_` variables and `-c` settings, above the files (h34's layer).
            (&layers.overrides, "settings from", true),
        ];
        for (layer, kind, trusted) in layers {
            let Some((path, file)) = layer else { continue };
            let source = format!("{kind} {}", path.display());
            for (event, entries) in file.hooks.by_event() {
                let Some(ev) = HookEvent::parse(event) else {
                    continue;
                };
                for entry in entries {
                    let ignore = |why: String| Ignored {
                        event,
                        name: entry.display_name(),
                        source: source.clone(),
                        why,
                    };
                    if !trusted {
                        hooks.ignored.push(ignore(
                            "the folder is not trusted (trust it with `pablo policy trust`)".into(),
                        ));
                        continue;
                    }
                    match Hook::compile(entry, &source) {
                        Ok(h) => {
                            if let Some(file) = workspace_program(&h.command, &hooks.cwd) {
                                hooks.notes.push(format!(
                                    "{source}: hook {} runs {file}, a file in the workspace that \
                                     the model's commands can change; keep hook programs under \
                                     .pablo/ or outside the workspace",
                                    h.name
                                ));
                            }
                            hooks.by_event[ev.index()].push(h)
                        }
                        Err(why) => hooks.ignored.push(ignore(why)),
                    }
                }
            }
        }
        hooks
    }

    /// Adds a hook (tests and benches build sessions without config files).
    pub fn push(&mut self, event: HookEvent, entry: &HookEntry) -> Result<(), String> {
        self.by_event[event.index()].push(Hook::compile(entry, "given")?);
        Ok(())
    }

    /// Every hook of `event`, in order.
    pub fn of(&self, event: HookEvent) -> &[Hook] {
        &self.by_event[event.index()]
    }

    /// Whether any hook is attached to `event` (cheap: the common case is none).
    pub fn any(&self, event: HookEvent) -> bool {
        !self.by_event[event.index()].is_empty()
    }

    /// The hooks of `event` for this subject (see [`Hook::matches`]).
    pub fn matching<'a>(
        &'a self,
        event: HookEvent,
        subject: Option<&'a str>,
        commands: Option<&'a [String]>,
    ) -> impl Iterator<Item = &'a Hook> + 'a {
        self.of(event)
            .iter()
            .filter(move |h| h.matches(subject, commands))
    }

    /// The hooks of `event` whose `matcher` takes the tool `name` (their `command_matcher` not
    /// yet looked at): the first, cheap step of matching a tool call.
    pub(crate) fn matching_tool<'a>(
        &'a self,
        event: HookEvent,
        name: &'a str,
    ) -> impl Iterator<Item = &'a Hook> + 'a {
        self.of(event)
            .iter()
            .filter(move |h| h.matcher.as_ref().is_none_or(|m| m.is_match(name)))
    }

    /// The `pre_tool_use` hooks that take a call of the tool `name`. `commands` gives the call's
    /// simple commands and is called only when one of those hooks looks into commands, so a
    /// shell command is parsed only for a hook that needs it.
    pub fn pre_tool_matching(
        &self,
        name: &str,
        commands: impl FnOnce() -> Option<Vec<String>>,
    ) -> Vec<Hook> {
        let for_tool = || self.matching_tool(HookEvent::PreToolUse, name);
        let commands = if for_tool().any(Hook::looks_into_commands) {
            commands()
        } else {
            None
        };
        for_tool()
            .filter(|h| h.matches(None, commands.as_deref()))
            .cloned()
            .collect()
    }

    /// Hooks of the layers that do not run, and why.
    pub fn ignored(&self) -> &[Ignored] {
        &self.ignored
    }

    /// One note per ignored hook, and per hook whose program lies in the workspace, for the
    /// start of a session.
    pub fn warnings(&self) -> Vec<String> {
        self.ignored
            .iter()
            .map(|i| {
                format!(
                    "{}: hook {} ({}) not run: {}",
                    i.source, i.name, i.event, i.why
                )
            })
            .chain(self.notes.iter().cloned())
            .collect()
    }

    /// These hooks with pablo's own directories (`dirs`: config, data, state) read-only to
    /// every hook: a hook runs outside the command sandbox, but a program it was tricked into
    /// running (a planted `jq` on a workspace `PATH`) must not trust a folder or plant a rule.
    pub fn protecting(mut self, dirs: Vec<PathBuf>) -> Self {
        self.protected = dirs;
        self
    }

    /// Runs `hook` with `input` (a `HookInput`, or any JSON) on its stdin.
    pub async fn run(&self, hook: &Hook, input: &impl serde::Serialize) -> HookRun {
        let sandbox = pablo_process::sandbox::Sandbox::started_program(self.protected.clone());
        run::run(hook, input, &self.env, &self.cwd, sandbox).await
    }

    /// The workspace hooks run in (`cwd` of their input).
    pub fn cwd(&self) -> &std::path::Path {
        &self.cwd
    }
}

/// The hooks' environment: the commands' one, and the person's `HOME`. A hook is the person's
/// own program run outside the sandbox, like their editor: the docs write hooks as
/// `~/.config/pablo/hooks/guard.sh`, and `/bin/sh` expands that `~` from `HOME` (without it the
/// word stays literal, the hook is "not found", and as a guard it blocks every call). `HOME` is
/// a place, not a secret; the variables that are stay withheld as they are from commands.
fn with_home(
    mut env: Vec<(String, String)>,
    home: Option<std::ffi::OsString>,
) -> Vec<(String, String)> {
    let home = home
        .and_then(|h| h.into_string().ok())
        .filter(|h| h.starts_with('/'));
    if let Some(home) = home
        && !env.iter().any(|(k, _)| k == "HOME")
    {
        env.push(("HOME".into(), home));
    }
    env
}

/// The first word of `command` that names a file of the workspace outside `.pablo/` (a
/// relative path, which hooks resolve against the workspace, or an absolute one beneath it):
/// a program there is one the model's commands may rewrite. The command is read as the shell
/// reads it, so a redirection (`>/dev/null`, `2>>log`) is not taken for a program.
fn workspace_program(command: &str, workspace: &std::path::Path) -> Option<String> {
    let words: Vec<String> = match pablo_policy::shell::parse(command) {
        Ok(parsed) => parsed
            .into_iter()
            .flat_map(|c| c.words.into_iter().map(|w| w.text))
            .collect(),
        // A command the parser refuses is still named when it names a workspace file: its
        // words, without the ones that are redirections.
        Err(_) => command
            .split_whitespace()
            .filter(|w| {
                !w.trim_start_matches(|c: char| c.is_ascii_digit())
                    .starts_with(['<', '>', '&', '|'])
            })
            .map(|w| w.trim_matches(|c| c == '"' || c == '\'').to_string())
            .collect(),
    };
    words.into_iter().find_map(|word| {
        if !word.contains('/') || word.starts_with(['~', '$', '-']) || word.contains("://") {
            return None;
        }
        let path = workspace.join(&word);
        let rel = path.strip_prefix(workspace).ok()?;
        let rel = rel.to_string_lossy();
        let rel = rel.trim_start_matches("./");
        if rel.starts_with(".pablo/") || rel.starts_with("..") {
            return None;
        }
        Some(format!("`{word}`"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pablo_config::{ConfigFile, HooksConfig};
    use std::path::Path;

    fn entry(matcher: Option<&str>, command_matcher: Option<&str>) -> HookEntry {
        HookEntry {
            name: None,
            matcher: matcher.map(str::to_string),
            command_matcher: command_matcher.map(str::to_string),
            command: "true".into(),
            timeout_ms: None,
            on_failure: None,
        }
    }

    #[test]
    fn a_matcher_is_anchored_over_the_native_tool_name() {
        let h = Hook::compile(&entry(Some(r"fs\.(write|edit)"), None), "t").unwrap();
        assert!(h.matches(Some("fs.write"), None));
        assert!(!h.matches(Some("fs.write_more"), None));
        assert!(!h.matches(Some("xfs.edit"), None));
        let all = Hook::compile(&entry(None, None), "t").unwrap();
        assert!(all.matches(Some("mcp__x__y"), None));
    }

    #[test]
    fn a_command_matcher_looks_at_each_simple_command_and_only_at_shell_calls() {
        let h = Hook::compile(&entry(Some(r"shell\.run"), Some("^git push")), "t").unwrap();
        let cmds = vec!["cd sub".to_string(), "git push --force".to_string()];
        assert!(h.matches(Some("shell.run"), Some(&cmds)));
        assert!(!h.matches(Some("shell.run"), Some(&["git status".to_string()])));
        assert!(!h.matches(Some("fs.read"), None));
    }

    #[test]
    fn a_hook_program_the_model_could_rewrite_is_named() {
        let ws = Path::new("/w");
        assert_eq!(
            workspace_program("./scripts/fmt.sh --all", ws).as_deref(),
            Some("`./scripts/fmt.sh`")
        );
        assert!(workspace_program("sh /w/tools/x.sh", ws).is_some());
        assert!(workspace_program(".pablo/hooks/fmt.sh", ws).is_none());
        assert!(workspace_program("~/.config/pablo/hooks/fmt.sh", ws).is_none());
        assert!(workspace_program("/usr/local/bin/guard", ws).is_none());
        assert!(workspace_program("cat > /dev/null; exit 2", ws).is_none());
        // A redirection is not a program, however it is written.
        assert!(workspace_program("cat >/dev/null 2>>log/err", ws).is_none());
        assert_eq!(
            workspace_program("cat 2>/dev/null; ./tools/fmt.sh >/dev/null", ws).as_deref(),
            Some("`./tools/fmt.sh`")
        );
    }

    #[test]
    fn an_untrusted_project_layer_runs_no_hook_and_says_so() {
        let file = |cmd: &str| ConfigFile {
            hooks: HooksConfig {
                pre_tool_use: vec![HookEntry {
                    command: cmd.into(),
                    ..entry(None, None)
                }],
                ..HooksConfig::default()
            },
            ..ConfigFile::default()
        };
        let layers = Layers {
            user: Some((Path::new("/u.toml").into(), file("user-guard"))),
            project: Some((Path::new("/w/.pablo/config.toml").into(), file("evil"))),
            explicit: None,
            overrides: None,
            override_origins: Default::default(),
            project_withheld: Vec::new(),
        };
        let untrusted = Hooks::from_layers(&layers, false, vec![], "/w".into());
        let names: Vec<_> = untrusted
            .of(HookEvent::PreToolUse)
            .iter()
            .map(|h| h.command.as_str())
            .collect();
        assert_eq!(names, ["user-guard"]);
        assert_eq!(untrusted.ignored().len(), 1);
        assert!(untrusted.warnings()[0].contains("not trusted"));
        let trusted = Hooks::from_layers(&layers, true, vec![], "/w".into());
        assert_eq!(trusted.of(HookEvent::PreToolUse).len(), 2);
    }
}
