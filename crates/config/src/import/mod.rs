//! `pablo import-config`: a person's Claude Code or Codex setup, read as the typed documents
//! those tools write (`settings.json`, `.mcp.json`, `config.toml`), turned into a pablo config
//! with a report of what was mapped, what was not and why. The config is checked here exactly as
//! `pablo config validate` checks a file, so what is written is accepted; where it goes (the
//! person's own config by default) is the command's business.

mod claude;
mod codex;
mod rules;

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use super::{ConfigError, ConfigFile, HookEntry, ModelSetting, ModelTable};

/// The tool whose setup is imported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportFrom {
    Claude,
    Codex,
}

impl std::fmt::Display for ImportFrom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ImportFrom::Claude => "Claude Code",
            ImportFrom::Codex => "Codex",
        })
    }
}

/// An imported config and its report.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The pablo config, as TOML that `pablo config validate` accepts.
    pub toml: String,
    /// The files read, in order.
    pub sources: Vec<PathBuf>,
    /// What each source setting became.
    pub mapped: Vec<String>,
    /// What could not be mapped, each with why.
    pub unmapped: Vec<String>,
    /// What else the person should know (instructions, agents, skills, trust).
    pub notes: Vec<String>,
}

impl std::fmt::Display for Imported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "read:")?;
        for s in &self.sources {
            writeln!(f, "  {}", s.display())?;
        }
        for (title, items) in [
            ("mapped", &self.mapped),
            ("not mapped", &self.unmapped),
            ("notes", &self.notes),
        ] {
            if items.is_empty() {
                writeln!(f, "{title}: none")?;
                continue;
            }
            writeln!(f, "{title} ({}):", items.len())?;
            for item in items {
                writeln!(f, "  - {item}")?;
            }
        }
        Ok(())
    }
}

/// Reads the setup of `from` for the person whose home is `home`: theirs (the user config's
/// equivalent), or with `project` the workspace's (the project config's equivalent), and makes
/// the pablo config of it. A project's settings are never folded into the person's own config:
/// there they would apply in every folder.
pub fn import_config(
    from: ImportFrom,
    home: &Path,
    workspace: &Path,
    project: bool,
) -> Result<Imported, ConfigError> {
    let mut draft = Draft {
        project,
        home: home.to_path_buf(),
        workspace: workspace.to_path_buf(),
        ..Draft::default()
    };
    match from {
        ImportFrom::Claude => claude_setup(&mut draft, home, workspace)?,
        ImportFrom::Codex => codex_setup(&mut draft, home, workspace)?,
    }
    if draft.sources.is_empty() {
        return Err(ConfigError::NothingToImport {
            message: format!(
                "no {from} settings found (looked for {}){}",
                draft
                    .looked
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                if project {
                    ""
                } else {
                    "; --project imports this folder's settings"
                }
            ),
        });
    }
    if project {
        draft.note(
            "a project config counts only once you trust the folder (`pablo policy trust`); \
             until then its hooks, servers and grants are ignored",
        );
    }
    let toml = draft.render(from)?;
    Ok(Imported {
        toml,
        sources: draft.sources,
        mapped: draft.mapped,
        unmapped: draft.unmapped,
        notes: draft.notes,
    })
}

fn claude_setup(draft: &mut Draft, home: &Path, workspace: &Path) -> Result<(), ConfigError> {
    let dir = std::env::var_os("CLAUDE_CONFIG_DIR")
        .filter(|v| !v.is_empty())
        .map_or_else(|| home.join(".claude"), PathBuf::from);
    let (settings, mcp, settings_project) = if draft.project {
        let p = workspace.join(".claude");
        (p.join("settings.json"), workspace.join(".mcp.json"), true)
    } else {
        (dir.join("settings.json"), home.join(".claude.json"), false)
    };
    if let Some(s) = draft.read(&settings, claude::read_settings)? {
        let label = draft.label(&settings);
        claude::apply_settings(draft, s, &label, settings_project);
    }
    if let Some(m) = draft.read(&mcp, claude::read_mcp)? {
        let label = draft.label(&mcp);
        claude::apply_mcp(draft, m, &label);
    }
    let local = workspace.join(".claude/settings.local.json");
    if draft.project && local.is_file() {
        draft.note(&format!(
            "{} not read: your personal settings of this project do not belong in a project \
             config (import what you want of them by hand into your own)",
            local.display()
        ));
    }
    if !draft.project {
        let found: Vec<String> = [
            workspace.join(".claude/settings.json"),
            workspace.join(".mcp.json"),
        ]
        .iter()
        .filter(|p| p.is_file())
        .map(|p| p.display().to_string())
        .collect();
        if !found.is_empty() {
            draft.note(&format!(
                "this folder's {} not read: in your own config it would apply in every folder; \
                 `pablo import-config --from claude --project` writes it to .pablo/config.toml",
                found.join(" and ")
            ));
        }
    }
    instructions(draft, workspace, "CLAUDE.md");
    if dir.join("CLAUDE.md").is_file() {
        draft.unmapped(
            &dir.join("CLAUDE.md").display().to_string(),
            "pablo has no instructions file of yours for every project; keep them in each \
             project's AGENTS.md",
        );
    }
    draft.note(
        "Claude Code's skills already load as they are: ~/.claude/skills/ always, a project's \
         .claude/skills/ once the folder is trusted (docs/skills.md)",
    );
    let agent_dir = if draft.project {
        workspace.join(".claude/agents")
    } else {
        dir.join("agents")
    };
    agents(draft, &agent_dir);
    Ok(())
}

fn codex_setup(draft: &mut Draft, home: &Path, workspace: &Path) -> Result<(), ConfigError> {
    let dir = std::env::var_os("CODEX_HOME")
        .filter(|v| !v.is_empty())
        .map_or_else(|| home.join(".codex"), PathBuf::from);
    let path = if draft.project {
        workspace.join(".codex/config.toml")
    } else {
        dir.join("config.toml")
    };
    if let Some(c) = draft.read(&path, codex::read_config)? {
        let label = draft.label(&path);
        codex::apply(draft, c, &label);
    }
    instructions(draft, workspace, "AGENTS.md");
    if dir.join("AGENTS.md").is_file() {
        draft.unmapped(
            &dir.join("AGENTS.md").display().to_string(),
            "pablo has no instructions file of yours for every project; keep them in each \
             project's AGENTS.md",
        );
    }
    Ok(())
}

/// What pablo makes of the project's instruction files (`CLAUDE.md` is Claude Code's).
fn instructions(draft: &mut Draft, workspace: &Path, theirs: &str) {
    let agents_md = workspace.join("AGENTS.md").is_file();
    let claude_md = workspace.join("CLAUDE.md").is_file();
    if agents_md {
        draft.note(
            "pablo reads this project's AGENTS.md as it is (each one from the repository root \
             down to the workspace)",
        );
    }
    if claude_md && theirs == "CLAUDE.md" {
        draft.note(if agents_md {
            "pablo does not read CLAUDE.md: what it holds beyond AGENTS.md, move into AGENTS.md"
        } else {
            "pablo reads AGENTS.md, not CLAUDE.md: `git mv CLAUDE.md AGENTS.md`, then \
             `ln -s AGENTS.md CLAUDE.md` keeps Claude Code reading the same file"
        });
    }
}

/// Claude Code's agent files: the format pablo reads, in a folder pablo does not look in.
fn agents(draft: &mut Draft, dir: &Path) {
    let target = if draft.project {
        ".pablo/agents/ (read once the folder is trusted)".to_string()
    } else {
        super::Dirs::discover()
            .map(|d| d.config.join("agents").display().to_string())
            .unwrap_or_else(|_| "$XDG_CONFIG_HOME/pablo/agents".into())
    };
    let count = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "md"))
                .count()
        })
        .unwrap_or(0);
    if count > 0 {
        let label = draft.label(dir);
        draft.note(&format!(
            "{count} agent file(s) in {label}: pablo reads Claude Code's agent format, but not \
             from this folder: copy them to {target}"
        ));
    }
}

/// `${NAME}` (the whole value): the variable it names.
fn env_var_reference(value: &str) -> Option<&str> {
    value
        .strip_prefix("${")
        .and_then(|v| v.strip_suffix('}'))
        .filter(|v| super::mcp::is_env_name(v))
}

/// A JSON document of type `T`, or `None` when there is no such file.
fn read_json<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, ConfigError> {
    let Some(text) = read_text(path)? else {
        return Ok(None);
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| ConfigError::ImportSource {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
}

fn read_text(path: &Path) -> Result<Option<String>, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ConfigError::ImportSource {
            path: path.to_path_buf(),
            message: e.to_string(),
        }),
    }
}

/// The config being made, and the report of how.
#[derive(Debug, Default)]
pub(super) struct Draft {
    pub(super) file: ConfigFile,
    model: ModelTable,
    /// The target is a project config (some settings are read from the person's own only).
    pub(super) project: bool,
    /// `.mcp.json` servers Claude Code's settings switch off.
    pub(super) skipped_servers: Vec<String>,
    home: PathBuf,
    workspace: PathBuf,
    sources: Vec<PathBuf>,
    looked: Vec<PathBuf>,
    mapped: Vec<String>,
    unmapped: Vec<String>,
    notes: Vec<String>,
}

impl Draft {
    pub(super) fn mapped(&mut self, what: &str) {
        self.mapped.push(what.to_string());
    }

    pub(super) fn unmapped(&mut self, what: &str, why: &str) {
        self.unmapped.push(format!("{what}: {why}"));
    }

    pub(super) fn note(&mut self, what: &str) {
        self.notes.push(what.to_string());
    }

    /// How the report names a source: `~/…` in the home directory, relative in the workspace.
    fn label(&self, path: &Path) -> String {
        if let Ok(rest) = path.strip_prefix(&self.workspace) {
            rest.display().to_string()
        } else if let Ok(rest) = path.strip_prefix(&self.home) {
            format!("~/{}", rest.display())
        } else {
            path.display().to_string()
        }
    }

    /// Reads one source with `read`, noting that it was looked for and, when it exists, read.
    fn read<T>(
        &mut self,
        path: &Path,
        read: fn(&Path) -> Result<Option<T>, ConfigError>,
    ) -> Result<Option<T>, ConfigError> {
        self.looked.push(path.to_path_buf());
        let found = read(path)?;
        if found.is_some() {
            self.sources.push(path.to_path_buf());
        }
        Ok(found)
    }

    /// The list of `[[hooks.EVENT]]` entries of pablo's `event`.
    pub(super) fn hook_list(&mut self, event: &str) -> Option<&mut Vec<HookEntry>> {
        let h = &mut self.file.hooks;
        Some(match event {
            "session_start" => &mut h.session_start,
            "user_prompt_submit" => &mut h.user_prompt_submit,
            "pre_tool_use" => &mut h.pre_tool_use,
            "post_tool_use" => &mut h.post_tool_use,
            "file_changed" => &mut h.file_changed,
            "stop" => &mut h.stop,
            "pre_compact" => &mut h.pre_compact,
            "notification" => &mut h.notification,
            _ => return None,
        })
    }

    /// The `[model]` table being filled (a plain `model = "NAME"` when only the name is set).
    pub(super) fn model(&mut self) -> &mut ModelTable {
        &mut self.model
    }

    pub(super) fn set_model_name(&mut self, name: &str) {
        self.model.name = Some(name.to_string());
    }

    /// The TOML of the config: empty tables left out, checked as `pablo config validate`
    /// checks a file.
    fn render(&mut self, from: ImportFrom) -> Result<String, ConfigError> {
        let only_name = ModelTable {
            name: self.model.name.clone(),
            ..ModelTable::default()
        };
        self.file.model = match &self.model.name {
            Some(name) if self.model == only_name => Some(ModelSetting::Name(name.clone())),
            _ if self.model == ModelTable::default() => None,
            _ => Some(ModelSetting::Table(self.model.clone())),
        };
        let invalid = |message: String| ConfigError::ImportSource {
            path: PathBuf::from("the imported config"),
            message,
        };
        let mut value = toml::Value::try_from(&self.file).map_err(|e| invalid(e.to_string()))?;
        prune(&mut value);
        let body = toml::to_string_pretty(&value).map_err(|e| invalid(e.to_string()))?;
        let mut text = format!(
            "# pablo config imported from {from} by `pablo import-config`.\n# Read: {}\n\n",
            self.sources
                .iter()
                .map(|p| self.label(p))
                .collect::<Vec<_>>()
                .join(", ")
        );
        text.push_str(&body);
        // The same check as `pablo config validate`: a translation pablo cannot read is a bug
        // here, said before anything is written.
        ConfigFile::parse(&text, Path::new("the imported config"))?;
        Ok(text)
    }
}

/// Leaves out empty tables and lists (what the person did not set), deepest first.
fn prune(value: &mut toml::Value) {
    match value {
        toml::Value::Table(t) => {
            for (_, v) in t.iter_mut() {
                prune(v);
            }
            t.retain(|_, v| match v {
                toml::Value::Table(t) => !t.is_empty(),
                toml::Value::Array(a) => !a.is_empty(),
                _ => true,
            });
        }
        toml::Value::Array(a) => a.iter_mut().for_each(prune),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_env_reference_is_a_whole_value_naming_one_variable() {
        assert_eq!(env_var_reference("${GITHUB_TOKEN}"), Some("GITHUB_TOKEN"));
        assert_eq!(env_var_reference("${A:-b}"), None);
        assert_eq!(env_var_reference("x${A}"), None);
        assert_eq!(env_var_reference("plain"), None);
    }

    #[test]
    fn empty_tables_and_lists_are_left_out_of_the_toml() {
        let mut v: toml::Value = toml::from_str("a = []\n[b]\n[c.d]\n[e]\nf = 1\n").unwrap();
        prune(&mut v);
        assert_eq!(toml::to_string(&v).unwrap().trim(), "[e]\nf = 1");
    }
}
