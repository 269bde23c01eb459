//! Which servers a session has: the built-in list (the common servers, used when their program
//! is on the command `PATH`) under the config layers' `[lsp.NAME]`, and which of them covers a
//! file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use pablo_config::lsp::{LSP_STARTUP_TIMEOUT_SECONDS, LSP_WAIT_MS};
use pablo_config::{LspServerConfig, LspServerEntry};

/// A server as the session will start it.
#[derive(Debug, Clone)]
pub struct ServerDef {
    pub name: String,
    pub argv: Vec<String>,
    /// Language ids and extensions (lowercase, no dot).
    pub filetypes: Vec<String>,
    pub root_markers: Vec<String>,
    pub initialization_options: Option<Value>,
    pub env: Vec<(String, String)>,
    pub wait: Duration,
    pub startup_timeout: Duration,
}

/// name, program, arguments, file types, root markers.
type Builtin = (
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    &'static [&'static str],
);

/// The servers pablo knows without config, used when their program is on the `PATH`.
const BUILTINS: &[Builtin] = &[
    (
        "pyright",
        "pyright-langserver",
        &["--stdio"],
        &["python"],
        &["pyrightconfig.json", "pyproject.toml", "setup.py"],
    ),
    (
        "basedpyright",
        "basedpyright-langserver",
        &["--stdio"],
        &["python"],
        &["pyrightconfig.json", "pyproject.toml", "setup.py"],
    ),
    (
        "ruff",
        "ruff",
        &["server"],
        &["python"],
        &["pyproject.toml", "ruff.toml", ".ruff.toml"],
    ),
    (
        "rust-analyzer",
        "rust-analyzer",
        &[],
        &["rust"],
        &["Cargo.toml"],
    ),
    (
        "typescript-language-server",
        "typescript-language-server",
        &["--stdio"],
        &[
            "typescript",
            "typescriptreact",
            "javascript",
            "javascriptreact",
        ],
        &["tsconfig.json", "jsconfig.json", "package.json"],
    ),
    ("gopls", "gopls", &[], &["go"], &["go.mod"]),
    (
        "clangd",
        "clangd",
        &[],
        &["c", "cpp"],
        &["compile_commands.json", "compile_flags.txt"],
    ),
];

/// The servers that only read the files they are shown: they may start in a folder that is not
/// trusted. Every other server may run the project's own code — rust-analyzer runs build scripts
/// and proc macros, gopls runs the go command, typescript-language-server loads tsserver plugins
/// from the project's `node_modules`, clangd follows the project's compile commands — so, sandbox
/// or not, it waits until the person trusts the folder (`pablo policy trust`): a repository is
/// untrusted input and nothing in it runs unasked.
pub const READS_ONLY: &[&str] = &["pyright", "basedpyright", "ruff"];

/// `defs` split for a folder: those that may start, and the names of those that wait for trust.
pub fn withhold_untrusted(
    defs: Vec<ServerDef>,
    project_trusted: bool,
) -> (Vec<ServerDef>, Vec<String>) {
    if project_trusted {
        return (defs, Vec::new());
    }
    let (kept, withheld): (Vec<_>, Vec<_>) = defs
        .into_iter()
        .partition(|d| READS_ONLY.contains(&d.name.as_str()));
    (kept, withheld.into_iter().map(|d| d.name).collect())
}

/// The servers of a session: each built-in whose program is on `path_var` (basedpyright only
/// when pyright is not), then the layers' tables over them; switched-off ones left out.
pub fn resolve(
    entries: &[LspServerEntry],
    path_var: &str,
    rustup_home: Option<&Path>,
) -> Vec<ServerDef> {
    let mut configs: Vec<(String, LspServerConfig)> = Vec::new();
    let mut have_pyright = false;
    for (name, program, args, filetypes, markers) in BUILTINS {
        if *name == "basedpyright" && have_pyright {
            continue;
        }
        let configured = entries
            .iter()
            .any(|e| e.name == *name && e.config.command.is_some());
        if !configured && !installed(program, path_var, rustup_home) {
            continue;
        }
        have_pyright |= *name == "pyright";
        let list = |l: &[&str]| Some(l.iter().map(|s| s.to_string()).collect());
        configs.push((
            name.to_string(),
            LspServerConfig {
                command: Some(program.to_string()),
                args: list(args),
                filetypes: list(filetypes),
                root_markers: list(markers),
                ..LspServerConfig::default()
            },
        ));
    }
    for e in entries {
        match configs.iter_mut().find(|(n, _)| *n == e.name) {
            Some((_, c)) => c.merge(&e.config),
            None => configs.push((e.name.clone(), e.config.clone())),
        }
    }
    configs
        .into_iter()
        .filter(|(_, c)| c.enabled != Some(false))
        .filter_map(|(name, c)| {
            let command = c.command.clone()?;
            let mut argv = vec![command];
            argv.extend(c.args.clone().unwrap_or_default());
            Some(ServerDef {
                name,
                argv,
                filetypes: c
                    .filetypes
                    .unwrap_or_default()
                    .iter()
                    .map(|f| f.trim_start_matches('.').to_ascii_lowercase())
                    .collect(),
                root_markers: c.root_markers.unwrap_or_default(),
                initialization_options: c.initialization_options,
                env: c.env.into_iter().collect(),
                wait: Duration::from_millis(c.wait_ms.unwrap_or(LSP_WAIT_MS)),
                startup_timeout: Duration::from_secs(
                    c.startup_timeout_seconds
                        .filter(|s| *s > 0)
                        .unwrap_or(LSP_STARTUP_TIMEOUT_SECONDS),
                ),
            })
        })
        .collect()
}

/// Whether `program` is on the `PATH` and is the program itself: rustup puts a proxy for
/// `rust-analyzer` on the `PATH` whether or not the component is installed, and the proxy only
/// prints an error; it counts when some toolchain has the real program.
fn installed(program: &str, path_var: &str, rustup_home: Option<&Path>) -> bool {
    let Some(found) = find_program(program, path_var) else {
        return false;
    };
    let is_proxy =
        std::fs::canonicalize(&found).is_ok_and(|p| p.file_name().is_some_and(|n| n == "rustup"));
    if !is_proxy {
        return true;
    }
    let Some(toolchains) = rustup_home.map(|h| h.join("toolchains")) else {
        return false;
    };
    std::fs::read_dir(toolchains).is_ok_and(|dir| {
        dir.flatten()
            .any(|t| t.path().join("bin").join(program).is_file())
    })
}

/// `program` as the command `PATH` finds it (absolute entries only).
fn find_program(program: &str, path_var: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    if program.contains('/') {
        return Some(PathBuf::from(program));
    }
    path_var
        .split(':')
        .filter(|d| d.starts_with('/'))
        .map(|d| Path::new(d).join(program))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The LSP language id of a file, from its extension (the extension itself when unknown).
pub fn language_id(rel: &str) -> String {
    let ext = Path::new(rel)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let id = match ext.as_str() {
        "py" | "pyi" => "python",
        "rs" => "rust",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "go" => "go",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" => "cpp",
        other => other,
    };
    id.to_string()
}

impl ServerDef {
    /// Whether this server is for `rel` (by its language id or its extension).
    pub fn covers(&self, rel: &str) -> bool {
        let ext = Path::new(rel)
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        let id = language_id(rel);
        self.filetypes
            .iter()
            .any(|f| *f == id || ext.as_deref() == Some(f.as_str()))
    }

    /// The root the server runs at for `rel`: the nearest directory at or above the file, inside
    /// the workspace, that holds one of the root markers; else the workspace.
    pub fn root_for(&self, workspace: &Path, rel: &str) -> PathBuf {
        let mut dir = Path::new(rel).parent();
        while let Some(d) = dir {
            if d.as_os_str().is_empty() {
                break;
            }
            let abs = workspace.join(d);
            if self
                .root_markers
                .iter()
                .any(|m| std::fs::symlink_metadata(abs.join(m)).is_ok())
            {
                return abs;
            }
            dir = d.parent();
        }
        workspace.to_path_buf()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, text: &str) -> LspServerEntry {
        LspServerEntry {
            name: name.into(),
            config: toml::from_str(text).unwrap(),
            source: "test".into(),
        }
    }

    #[test]
    fn a_configured_server_covers_its_language_and_extensions() {
        let defs = resolve(
            &[entry(
                "py",
                "command = \"x\"\nfiletypes = [\"python\", \".PYX\"]",
            )],
            "/nonexistent",
            None,
        );
        assert_eq!(defs.len(), 1);
        assert!(defs[0].covers("a/b.py"));
        assert!(defs[0].covers("c.pyi"));
        assert!(defs[0].covers("c.pyx"));
        assert!(!defs[0].covers("c.rs"));
        assert!(!defs[0].covers("Makefile"));
    }

    #[test]
    fn builtins_need_their_program_on_the_path_and_can_be_switched_off() {
        let dir = tempfile::tempdir().unwrap();
        let prog = dir.path().join("ruff");
        std::fs::write(&prog, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = dir.path().display().to_string();
        assert!(resolve(&[], "/nonexistent", None).is_empty());
        let defs = resolve(&[], &path, None);
        assert_eq!(defs.len(), 1);
        assert_eq!(defs[0].argv, ["ruff", "server"]);
        assert!(resolve(&[entry("ruff", "enabled = false")], &path, None).is_empty());
        let slow = resolve(&[entry("ruff", "wait_ms = 9000")], &path, None);
        assert_eq!(slow[0].wait, Duration::from_secs(9));
    }

    #[test]
    fn in_an_untrusted_folder_only_servers_that_run_no_project_code_may_start() {
        let dir = tempfile::tempdir().unwrap();
        use std::os::unix::fs::PermissionsExt;
        for prog in ["ruff", "gopls", "clangd"] {
            let p = dir.path().join(prog);
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let path = dir.path().display().to_string();
        let mine = entry("mine", "command = \"/usr/bin/mine\"\nfiletypes = [\"x\"]");
        let names = |d: &[ServerDef]| d.iter().map(|d| d.name.clone()).collect::<Vec<_>>();
        let (kept, withheld) =
            withhold_untrusted(resolve(std::slice::from_ref(&mine), &path, None), false);
        assert_eq!(names(&kept), ["ruff"]);
        assert_eq!(withheld, ["gopls", "clangd", "mine"]);
        let (kept, withheld) = withhold_untrusted(resolve(&[mine], &path, None), true);
        assert_eq!(names(&kept), ["ruff", "gopls", "clangd", "mine"]);
        assert!(withheld.is_empty());
    }

    #[test]
    fn a_rustup_proxy_counts_only_when_a_toolchain_has_the_program() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("rustup"), "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(bin.join("rustup"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        std::os::unix::fs::symlink("rustup", bin.join("rust-analyzer")).unwrap();
        let path = bin.display().to_string();
        let home = dir.path().join("rustup-home");
        assert!(resolve(&[], &path, Some(&home)).is_empty());
        let tc = home.join("toolchains/stable/bin");
        std::fs::create_dir_all(&tc).unwrap();
        std::fs::write(tc.join("rust-analyzer"), "").unwrap();
        assert_eq!(resolve(&[], &path, Some(&home))[0].name, "rust-analyzer");
    }

    #[test]
    fn the_root_is_the_nearest_marked_directory_inside_the_workspace() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.path().join("pkg/src")).unwrap();
        std::fs::write(ws.path().join("pkg/pyproject.toml"), "").unwrap();
        let d = &resolve(
            &[entry(
                "py",
                "command = \"x\"\nfiletypes = [\"python\"]\nroot_markers = [\"pyproject.toml\"]",
            )],
            "",
            None,
        )[0];
        assert_eq!(d.root_for(ws.path(), "pkg/src/a.py"), ws.path().join("pkg"));
        assert_eq!(d.root_for(ws.path(), "other/a.py"), ws.path());
    }
}
