//! Trust: what a repository's own config may decide before the person trusts the folder.
//!
//! The project layer (`.pablo/config.toml`) travels with the repository, so whoever wrote the
//! repository wrote it. Before anything reads the layers, [`withhold_untrusted_project`] takes
//! out of an untrusted project layer everything that decides where requests go, which secret
//! is sent, what runs, or grants (policy's own narrowing rules stay as a second line); the same
//! list is what `pablo policy trust` shows the person it now lets the repository decide.

use crate::config::{ConfigFile, Layers, ModelSetting, RuleDecision};
use crate::core::ToolMode;

/// Takes out of a project layer every setting that counts only once the person trusts the
/// folder, because it decides where requests go, which secret is sent, what runs, or grants
/// what the person would otherwise be asked (docs/policy.md, *Trust*), and describes each,
/// endpoints and programs with their values: what a person must see before trusting, and what
/// an untrusted folder is told was ignored. What is left only narrows.
pub fn withhold_untrusted(file: &mut ConfigFile) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(p) = file.provider.take() {
        out.push(format!("provider = {p:?}"));
    }
    if let Some(u) = file.base_url.take() {
        out.push(format!("base_url = {u:?} (where requests and the key go)"));
    }
    if let Some(v) = file.api_key_env.take() {
        out.push(format!("api_key_env = {v:?} (which secret is sent)"));
    }
    if let Some(m) = &mut file.model {
        let mut table = m.table();
        if let Some(name) = table.name.take() {
            out.push(format!("model = {name:?}"));
        }
        if let Some(w) = table.wire_api.take() {
            out.push(format!("model.wire_api = {w:?}"));
        }
        *m = ModelSetting::Table(table);
    }
    for (name, server) in &mut file.mcp_servers {
        if let Some(c) = server.command.take() {
            let mut line = vec![c];
            line.append(&mut server.args);
            out.push(format!(
                "mcp_servers.{name} (starts the program `{}`)",
                line.join(" ")
            ));
        }
        if let Some(u) = server.url.take() {
            out.push(format!("mcp_servers.{name} (connects to {u})"));
        }
        server.env.clear();
        server.env_vars.clear();
        server.cwd = None;
        server.bearer_token_env = None;
        server.headers.clear();
        server.required = None;
        server.startup_timeout_seconds = None;
        server.tool_timeout_seconds = None;
        let before = server.tools.len();
        server.tools.retain(|_, m| *m != ToolMode::Auto);
        if server.tools.len() < before {
            out.push(format!("mcp_servers.{name}.tools = \"auto\""));
        }
    }
    for (name, server) in &mut file.lsp {
        if let Some(c) = server.command.take() {
            let mut line = vec![c];
            line.extend(server.args.take().unwrap_or_default());
            out.push(format!(
                "lsp.{name} (starts the program `{}`)",
                line.join(" ")
            ));
        }
    }
    for (event, hook) in file.hooks.take_all() {
        out.push(format!(
            "hooks.{event} {} (runs the program `{}`)",
            hook.display_name(),
            hook.command
        ));
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
    if let Some(l) = shell.launcher.take() {
        out.push(format!(
            "options.shell.launcher = {l:?} (runs every command)"
        ));
    }
    if !shell.commands.allow.is_empty() {
        let ids: Vec<String> = shell.commands.allow.drain(..).map(|r| r.id).collect();
        out.push(format!("options.shell.commands.allow ({})", ids.join(", ")));
    }
    if shell.commands.default == Some(RuleDecision::Allow) {
        shell.commands.default = None;
        out.push("options.shell.commands.default = \"allow\"".into());
    }
    if !shell.custom_allow_patterns.is_empty() {
        shell.custom_allow_patterns.clear();
        out.push("options.shell.custom_allow_patterns".into());
    }
    if shell.enable_deny_patterns == Some(false) {
        shell.enable_deny_patterns = None;
        out.push("options.shell.enable_deny_patterns = false".into());
    }
    if !shell.env.inherit.is_empty() || !shell.env.set.is_empty() {
        shell.env.inherit.clear();
        shell.env.set.clear();
        out.push("options.shell.env inherit/set (passes more of your environment)".into());
    }
    if shell.network == Some(true) {
        shell.network = None;
        out.push("options.shell.network = true".into());
    }
    if !shell.writable_roots.is_empty() {
        shell.writable_roots.clear();
        out.push("options.shell.writable_roots".into());
    }
    if shell.editor_terminals == Some(true) {
        shell.editor_terminals = None;
        out.push("options.shell.editor_terminals = true".into());
    }
    if !file.options.fetch.allowed_domains.is_empty() {
        let domains = std::mem::take(&mut file.options.fetch.allowed_domains);
        out.push(format!(
            "options.fetch.allowed_domains ({})",
            domains.join(", ")
        ));
    }
    // Where telemetry goes is the person's choice; a repository may only switch it off.
    let otel = std::mem::take(&mut file.otel);
    if otel.enabled == Some(false) {
        file.otel.enabled = Some(false);
    }
    let mut otel_rest = otel.clone();
    otel_rest.enabled = None;
    if !otel_rest.is_empty() {
        let target = [
            &otel.endpoint,
            &otel.traces_endpoint,
            &otel.metrics_endpoint,
        ]
        .into_iter()
        .flatten()
        .map(|u| format!(" (sends telemetry to {u})"))
        .next()
        .unwrap_or_default();
        out.push(format!("otel{target}"));
    }
    if file.trace.content == Some(true) {
        file.trace.content = None;
        out.push("trace.content = true (writes tool arguments and results to the trace)".into());
    }
    out
}

/// Applies the folder's trust to the project layer: untrusted, every setting of
/// [`withhold_untrusted`] is taken out, and the one note for the person (which keys were
/// ignored, and how to trust) is returned.
pub(crate) fn withhold_untrusted_project(layers: &mut Layers) -> Option<String> {
    let (path, file) = layers.project.as_mut()?;
    let withheld = withhold_untrusted(file);
    (!withheld.is_empty()).then(|| {
        format!(
            "{}: this folder is not trusted, so these settings of its project config are \
             ignored: {}. Run `pablo policy trust` to use them (it lists what they do).",
            path.display(),
            withheld.join("; ")
        )
    })
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
    use std::path::{Path, PathBuf};

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
"#;
        let mut file = ConfigFile::parse(text, Path::new("p.toml")).unwrap();
        let said = withhold_untrusted(&mut file).join("\n");
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
        ] {
            assert!(said.contains(key), "{key} not said:\n{said}");
        }
        assert!(file.provider.is_none() && file.base_url.is_none());
        assert!(file.api_key_env.is_none() && file.options.shell.launcher.is_none());
        assert!(file.mcp_servers["evil"].command.is_none());
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
        assert!(withhold_untrusted(&mut file).is_empty());
    }

    #[test]
    fn the_note_names_the_file_and_a_project_that_only_narrows_gets_none() {
        let mut layers = Layers {
            project: Some((
                PathBuf::from("/ws/.pablo/config.toml"),
                ConfigFile::parse("base_url = \"http://e/v1\"\n", Path::new("p")).unwrap(),
            )),
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
