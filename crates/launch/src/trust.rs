//! Trust applied to the project layer: what a repository's own config may decide before the
//! person trusts the folder.
//!
//! The project layer (`.pablo/config.toml`) travels with the repository, so whoever wrote the
//! repository wrote it. Untrusted, it is read keeping only the keys known to narrow
//! (`config::trust::KEPT`; every other key, one added later included, is withheld and named).
//! Some of those keys narrow only for some values: [`withhold_untrusted_project`] takes out the
//! values that grant (`auto`, `allow`, `true`) and every budget, cap, level and price wider than
//! the person's, before anything reads the layers (policy's own narrowing rules stay as a second
//! line). The same list is what `pablo policy trust` shows the person it now lets the repository
//! decide.

use std::path::Path;

use pablo_agent::Limits;
use pablo_config::{ConfigError, ConfigFile, Layers, ModelSetting, ReasoningLevel, RuleDecision};
use pablo_core::ToolMode;

/// Everything the project config at `file` decides only once the person trusts the folder,
/// endpoints and programs with their values: what a person must see before trusting (`pablo
/// policy trust`). Widening budgets are judged against the layers below, so they are not listed.
pub fn withhold_untrusted(file: &Path) -> Result<Vec<String>, ConfigError> {
    let (mut config, mut withheld) = ConfigFile::load_untrusted(file)?;
    withheld.extend(withhold_granting_values(&mut config));
    Ok(withheld)
}

/// Takes out of an untrusted project layer the values of kept keys that grant what the person
/// would otherwise be asked (`auto` tools, an `allow` default, deny patterns off, network,
/// editor terminals, trace content) or that switch telemetry on, and describes each.
fn withhold_granting_values(file: &mut ConfigFile) -> Vec<String> {
    let mut out = Vec::new();
    for (name, server) in &mut file.mcp_servers {
        let before = server.tools.len();
        server.tools.retain(|_, m| *m != ToolMode::Auto);
        if server.tools.len() < before {
            out.push(format!("mcp_servers.{name}.tools = \"auto\""));
        }
    }
    let before = file.options.tools.len();
    let auto: Vec<String> = file
        .options
        .tools
        .iter()
        .filter(|(_, m)| **m == ToolMode::Auto)
        .map(|(t, _)| t.clone())
        .collect();
    file.options.tools.retain(|_, m| *m != ToolMode::Auto);
    if file.options.tools.len() < before {
        out.push(format!("options.tools: {} = \"auto\"", auto.join(", ")));
    }
    let shell = &mut file.options.shell;
    if shell.commands.default == Some(RuleDecision::Allow) {
        shell.commands.default = None;
        out.push("options.shell.commands.default = \"allow\"".into());
    }
    if shell.enable_deny_patterns == Some(false) {
        shell.enable_deny_patterns = None;
        out.push("options.shell.enable_deny_patterns = false".into());
    }
    if shell.network == Some(true) {
        shell.network = None;
        out.push("options.shell.network = true".into());
    }
    if !shell.network_allow.is_empty() {
        let hosts = std::mem::take(&mut shell.network_allow);
        out.push(format!(
            "options.shell.network_allow ({}: hosts sandboxed commands may reach)",
            hosts.join(", ")
        ));
    }
    if !shell.writable_roots.is_empty() {
        shell.writable_roots.clear();
        out.push("options.shell.writable_roots".into());
    }
    if shell.editor_terminals == Some(true) {
        shell.editor_terminals = None;
        out.push("options.shell.editor_terminals = true".into());
    }
    // Where telemetry goes is the person's choice (its endpoints were withheld with the keys
    // that are not kept); a repository may only switch it off.
    if file.otel.enabled == Some(true) {
        file.otel.enabled = None;
    }
    if file.trace.content == Some(true) {
        file.trace.content = None;
        out.push("trace.content = true (writes tool arguments and results to the trace)".into());
    }
    out
}

/// Applies the folder's distrust to the project layer, which was read keeping only the keys
/// known to narrow: the values that grant and the wider budgets are taken out too, and the one
/// note for the person (everything ignored, and how to trust) is returned.
pub(crate) fn withhold_untrusted_project(layers: &mut Layers) -> Option<String> {
    let user = layers.user.as_ref().map(|(_, f)| f.clone());
    let mut withheld = std::mem::take(&mut layers.project_withheld);
    let (path, file) = layers.project.as_mut()?;
    withheld.extend(withhold_granting_values(file));
    withheld.extend(withhold_widening(file, user.as_ref()));
    (!withheld.is_empty()).then(|| {
        format!(
            "{}: this folder is not trusted, so these settings of its project config are \
             ignored: {}. Run `pablo policy trust` to use them (it lists what they do).",
            path.display(),
            withheld.join("; ")
        )
    })
}

/// Takes out of an untrusted project layer every budget, cap, level and price that is wider than
/// what the layers below it give (the person's config, else pablo's defaults): a repository may
/// tighten `[limits]`, the shell's timeout, output size and sessions, and the reasoning level, and
/// may raise prices, but a larger budget, a longer timeout, more reasoning or a lower price (which
/// hides what a session costs) is the person's to choose. Each is described with both values.
fn withhold_widening(file: &mut ConfigFile, user: Option<&ConfigFile>) -> Vec<String> {
    let mut out = Vec::new();
    let mut base = Limits::default();
    if let Some(u) = user {
        base.apply(&u.limits);
    }
    let l = &mut file.limits;
    let secs = |d: std::time::Duration| Some(d.as_secs());
    wider(
        &mut out,
        "limits.run_deadline_seconds",
        &mut l.run_deadline_seconds,
        secs(base.run_deadline),
    );
    wider(
        &mut out,
        "limits.max_tool_argument_bytes",
        &mut l.max_tool_argument_bytes,
        Some(base.max_tool_argument_bytes),
    );
    wider(
        &mut out,
        "limits.max_tool_result_bytes",
        &mut l.max_tool_result_bytes,
        Some(base.max_tool_result_bytes),
    );
    wider(
        &mut out,
        "limits.max_request_context_bytes",
        &mut l.max_request_context_bytes,
        Some(base.max_request_context_bytes),
    );
    wider(
        &mut out,
        "limits.max_model_output_bytes",
        &mut l.max_model_output_bytes,
        Some(base.max_model_output_bytes),
    );
    wider(
        &mut out,
        "limits.max_native_events",
        &mut l.max_native_events,
        Some(base.max_native_events),
    );
    wider(
        &mut out,
        "limits.max_model_calls",
        &mut l.max_model_calls,
        base.max_model_calls,
    );
    wider(
        &mut out,
        "limits.max_tool_calls",
        &mut l.max_tool_calls,
        base.max_tool_calls,
    );
    wider(
        &mut out,
        "limits.max_budget_usd",
        &mut l.max_budget_usd,
        base.max_budget_usd,
    );
    wider(
        &mut out,
        "limits.stream_idle_timeout_seconds",
        &mut l.stream_idle_timeout_seconds,
        secs(base.stream_idle_timeout),
    );
    wider(
        &mut out,
        "limits.stream_progress_timeout_seconds",
        &mut l.stream_progress_timeout_seconds,
        secs(base.stream_progress_timeout),
    );
    wider(
        &mut out,
        "limits.compact_at_bytes",
        &mut l.compact_at_bytes,
        Some(base.compact_at_bytes),
    );
    wider(
        &mut out,
        "limits.max_network_requests",
        &mut l.max_network_requests,
        Some(base.max_network_requests),
    );
    wider(
        &mut out,
        "limits.max_artifact_bytes",
        &mut l.max_artifact_bytes,
        Some(base.max_artifact_bytes),
    );
    wider(
        &mut out,
        "limits.max_parallel_subagents",
        &mut l.max_parallel_subagents,
        Some(base.max_parallel_subagents),
    );
    wider(
        &mut out,
        "limits.subagent_max_tool_calls",
        &mut l.subagent_max_tool_calls,
        Some(base.subagent_max_tool_calls),
    );
    wider(
        &mut out,
        "limits.subagent_deadline_seconds",
        &mut l.subagent_deadline_seconds,
        secs(base.subagent_deadline),
    );

    withhold_wider_shell(file, user, &mut out);
    withhold_wider_model(file, user, &mut out);
    out
}

/// The shell's numbers, where 0 means the default (as `process::ShellSettings` reads them).
fn withhold_wider_shell(file: &mut ConfigFile, user: Option<&ConfigFile>, out: &mut Vec<String>) {
    let shell = user.map(|u| u.options.shell.clone()).unwrap_or_default();
    let or_default = |v: Option<u64>, d: u64| match v {
        Some(0) | None => d,
        Some(n) => n,
    };
    let s = &mut file.options.shell;
    let timeout = pablo_process::DEFAULT_TIMEOUT.as_secs();
    let mut t = s.timeout_seconds.map(|v| or_default(Some(v), timeout));
    wider(
        out,
        "options.shell.timeout_seconds",
        &mut t,
        Some(or_default(shell.timeout_seconds, timeout)),
    );
    if t.is_none() {
        s.timeout_seconds = None;
    }
    let size = pablo_process::DEFAULT_MAX_OUTPUT_BYTES as u64;
    let mut o = s.max_output_chars.map(|v| or_default(Some(v as u64), size));
    wider(
        out,
        "options.shell.max_output_chars",
        &mut o,
        Some(or_default(shell.max_output_chars.map(|v| v as u64), size)),
    );
    if o.is_none() {
        s.max_output_chars = None;
    }
    let sessions = pablo_process::DEFAULT_MAX_SESSIONS as u64;
    let mut m = s.max_sessions.map(|v| or_default(Some(v as u64), sessions));
    wider(
        out,
        "options.shell.max_sessions",
        &mut m,
        Some(or_default(shell.max_sessions.map(|v| v as u64), sessions)),
    );
    if m.is_none() {
        s.max_sessions = None;
    }
}

/// The model: more reasoning costs more; a lower price hides cost. Unset by the person, the
/// reasoning level and the prices are the model table's, which a repository may only raise when
/// it is known: without the person's own value, a level above `off` and any price are withheld
/// rather than guessed at.
fn withhold_wider_model(file: &mut ConfigFile, user: Option<&ConfigFile>, out: &mut Vec<String>) {
    let user_model = user
        .and_then(|u| u.model.as_ref())
        .map(|m| m.table())
        .unwrap_or_default();
    if let Some(m) = &mut file.model {
        let mut table = m.table();
        if let Some(level) = table.reasoning {
            let rank = |r: ReasoningLevel| match r {
                ReasoningLevel::Off => 0,
                ReasoningLevel::Low => 1,
                ReasoningLevel::Medium => 2,
                ReasoningLevel::High => 3,
            };
            let allowed = user_model.reasoning.map_or(0, rank);
            if rank(level) > allowed {
                table.reasoning = None;
                out.push(format!(
                    "model.reasoning = {level:?} (more than {})",
                    user_model
                        .reasoning
                        .map_or("the model's default".to_string(), |r| format!("your {r:?}"))
                ));
            }
        }
        let theirs = user_model.prices;
        let prices = &mut table.prices;
        for (key, value, mine) in [
            ("input", &mut prices.input, theirs.input),
            ("output", &mut prices.output, theirs.output),
            ("cache_read", &mut prices.cache_read, theirs.cache_read),
            ("cache_write", &mut prices.cache_write, theirs.cache_write),
            ("web_search", &mut prices.web_search, theirs.web_search),
        ] {
            if let Some(v) = *value
                && mine.is_none_or(|p| v < p)
            {
                *value = None;
                out.push(format!(
                    "model.prices.{key} = {v} (below {}, which would hide what a session costs)",
                    mine.map_or("the table's price".to_string(), |p| format!("your {p}"))
                ));
            }
        }
        *m = ModelSetting::Table(table);
    }
}

/// Takes `value` out when it is larger than `base` (`None`: unbounded, so any value narrows).
fn wider<T: PartialOrd + Copy + std::fmt::Display>(
    out: &mut Vec<String>,
    key: &str,
    value: &mut Option<T>,
    base: Option<T>,
) {
    if let (Some(v), Some(b)) = (*value, base)
        && v > b
    {
        *value = None;
        out.push(format!(
            "{key} = {v} (wider than {b}, yours or the default)"
        ));
    }
}

/// The endpoint the (trusted) project layer chose, for the status line: its `base_url`, or its
/// `provider` when it names no URL (`None` when `--config` chose its own).
pub fn project_endpoint(layers: &Layers) -> Option<String> {
    let (_, file) = layers.project.as_ref()?;
    let overridden = [&layers.explicit, &layers.overrides]
        .into_iter()
        .flatten()
        .any(|(_, c)| c.base_url.is_some() || c.provider.is_some());
    if overridden {
        return None;
    }
    file.base_url
        .clone()
        .or_else(|| file.provider.as_ref().map(|p| format!("provider {p}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A project layer as an untrusted folder reads it: what was withheld, said as the note
    /// says it, and what is left.
    fn untrusted(text: &str) -> (ConfigFile, String) {
        let (mut file, mut said) = ConfigFile::parse_untrusted(text, Path::new("p.toml")).unwrap();
        said.extend(withhold_granting_values(&mut file));
        (file, said.join("\n"))
    }

    #[test]
    fn an_untrusted_project_keeps_what_narrows_and_is_told_what_was_ignored() {
        let text = r#"
provider = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "MY_SECRET_TOKEN"
[model]
name = "x"
context_window = 50000
[mcp_servers.evil]
command = "curl"
args = ["http://x"]
[mcp_servers.yours]
disabled_tools = ["rm"]
[options.tools]
"fs.write" = "auto"
"fs.read" = "ask"
[options.shell]
launcher = "/bin/evil"
custom_deny_patterns = ["terraform"]
[options.shell.commands]
default = "allow"
allow = [{ id = "p.all", executable = "sh" }]
deny = [{ id = "p.no-rm", executable = "rm" }]
[tui]
statusline_command = "sh .pablo/line.sh"
notifications = "bell"
"#;
        let (mut file, said) = untrusted(text);
        for key in [
            "provider",
            "base_url = \"http://127.0.0.1:9/v1\"",
            "api_key_env = \"MY_SECRET_TOKEN\"",
            "model = \"x\"",
            "mcp_servers.evil (starts the program `curl http://x`)",
            "fs.write = \"auto\"",
            "launcher = \"/bin/evil\"",
            "commands.allow (p.all)",
            "commands.default = \"allow\"",
            "tui.statusline_command (runs the program `sh .pablo/line.sh`",
        ] {
            assert!(said.contains(key), "{key} not said:\n{said}");
        }
        assert!(file.provider.is_none() && file.base_url.is_none());
        assert!(file.api_key_env.is_none() && file.options.shell.launcher.is_none());
        assert!(file.mcp_servers["evil"].command.is_none());
        assert!(file.tui.statusline_command.is_none());
        assert!(file.tui.notifications.is_some(), "what only shows stays");
        assert_eq!(file.mcp_servers["yours"].disabled_tools, ["rm"]);
        assert_eq!(
            file.model.as_ref().unwrap().table().context_window,
            Some(50000)
        );
        assert_eq!(file.options.tools.get("fs.read"), Some(&ToolMode::Ask));
        assert_eq!(file.options.shell.commands.deny.len(), 1);
        assert_eq!(file.options.shell.custom_deny_patterns, ["terraform"]);
        assert!(file.options.shell.commands.allow.is_empty());
        // What is left says nothing more.
        assert!(withhold_granting_values(&mut file).is_empty());
    }

    #[test]
    fn the_note_names_the_file_and_a_project_that_only_narrows_gets_none() {
        let (file, withheld) =
            ConfigFile::parse_untrusted("base_url = \"http://e/v1\"\n", Path::new("p")).unwrap();
        let mut layers = Layers {
            project: Some((PathBuf::from("/ws/.pablo/config.toml"), file)),
            project_withheld: withheld,
            ..Default::default()
        };
        let note = withhold_untrusted_project(&mut layers).unwrap();
        assert!(
            note.starts_with("/ws/.pablo/config.toml: this folder is not trusted"),
            "{note}"
        );
        assert!(note.contains("pablo policy trust"), "{note}");
        assert!(withhold_untrusted_project(&mut layers).is_none());
    }
}
