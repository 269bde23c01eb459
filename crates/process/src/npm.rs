//! What npm and npx would take from a workspace's `.npmrc` and must not, when pablo starts a
//! program for the person (a hook, an MCP server) in a folder the person has not trusted.
//!
//! npm reads its settings from the command line, then the environment, then the project's
//! `.npmrc`, then the person's, then the global one: a setting given in the environment outranks
//! the project's file. So every setting through which a project file could decide what code npm
//! fetches or runs is given here, with the value the person would get without that file:
//!
//! - the programs it runs (`script-shell`, `shell`, `node-options`, `git`) and the person's own
//!   file (`userconfig`): set by [`super::env::untrusted_program_env`];
//! - where packages come from: `registry`, and every scoped `@scope:registry` the workspace's
//!   file names, from the person's `~/.npmrc`, else npm's public registry;
//! - where packages are cached and installed globally, and the global config file: `cache`,
//!   `prefix`, `globalconfig`, from the person's file, else npm's defaults (`~/.npm`, the prefix
//!   of the `node` on the `PATH`).
//!
//! npx also runs a package found in the project's own `node_modules` before fetching one; that
//! is answered where an MCP server is started ([`npx_argv`]), since only a command-line
//! `--prefix` moves the project npm looks in.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// npm's public registry, its default.
const PUBLIC_REGISTRY: &str = "https://registry.npmjs.org/";

/// The settings of an `.npmrc` (`key = value` lines; `;` and `#` start comments), or none.
fn read_npmrc(path: &Path) -> BTreeMap<String, String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return BTreeMap::new();
    };
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            if line.starts_with(';') || line.starts_with('#') {
                return None;
            }
            let (k, v) = line.split_once('=')?;
            let (k, v) = (k.trim(), v.trim());
            (!k.is_empty()).then(|| (k.to_string(), v.trim_matches('"').to_string()))
        })
        .collect()
}

/// The environment settings (`npm_config_*` names and values) that keep npm from taking where
/// packages come from, are cached or installed from the `.npmrc` of `workspace`. `home` is where
/// the person's own `.npmrc` lies; `path` the `PATH` that finds `node` (npm's default prefix is
/// the directory above `node`'s).
pub fn pins(workspace: &Path, home: Option<&Path>, path: &str) -> Vec<(String, String)> {
    let project = read_npmrc(&workspace.join(".npmrc"));
    let mine = home
        .map(|h| read_npmrc(&h.join(".npmrc")))
        .unwrap_or_default();
    let registry = mine
        .get("registry")
        .cloned()
        .unwrap_or_else(|| PUBLIC_REGISTRY.to_string());
    let mut out = vec![("npm_config_registry".to_string(), registry.clone())];
    for key in project
        .keys()
        .filter(|k| k.starts_with('@') && k.ends_with(":registry"))
    {
        let value = mine.get(key).cloned().unwrap_or_else(|| registry.clone());
        out.push((format!("npm_config_{key}"), value));
    }
    let prefix = mine
        .get("prefix")
        .map(PathBuf::from)
        .or_else(|| node_prefix(path));
    if let Some(cache) = mine
        .get("cache")
        .map(PathBuf::from)
        .or_else(|| home.map(|h| h.join(".npm")))
    {
        out.push(("npm_config_cache".into(), cache.display().to_string()));
    }
    if let Some(prefix) = &prefix {
        out.push(("npm_config_prefix".into(), prefix.display().to_string()));
    }
    if let Some(global) = mine
        .get("globalconfig")
        .map(PathBuf::from)
        .or_else(|| prefix.map(|p| p.join("etc/npmrc")))
    {
        out.push((
            "npm_config_globalconfig".into(),
            global.display().to_string(),
        ));
    }
    out
}

/// npm's default prefix: the directory above the one holding the `node` found on `path`.
fn node_prefix(path: &str) -> Option<PathBuf> {
    let node = path
        .split(':')
        .filter(|d| d.starts_with('/'))
        .map(|d| Path::new(d).join("node"))
        .find(|n| n.is_file())?;
    let real = std::fs::canonicalize(node).ok()?;
    Some(real.parent()?.parent()?.to_path_buf())
}

/// The command line of an MCP server started in a folder not trusted: when the program is
/// `npx`, a `--prefix` naming `neutral` (an empty directory of pablo's) is put first, so that npx
/// neither runs a package the workspace's `node_modules` holds under the server's name nor reads
/// the workspace's `.npmrc`; the server itself still runs in its own working directory.
pub fn npx_argv(program: &str, args: &[String], neutral: &Path) -> Vec<String> {
    let mut argv = vec![program.to_string()];
    let is_npx = Path::new(program)
        .file_name()
        .is_some_and(|n| n == "npx" || n == "npx-cli.js");
    if is_npx
        && !args
            .iter()
            .any(|a| a == "--prefix" || a.starts_with("--prefix="))
    {
        argv.push(format!("--prefix={}", neutral.display()));
    }
    argv.extend(args.iter().cloned());
    argv
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_npmrc_cannot_choose_the_registry_the_cache_or_the_prefix() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        let home = d.path().join("home");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(
            ws.join(".npmrc"),
            "registry=http://evil.test/\n@modelcontextprotocol:registry = http://evil.test/\n\
             cache=./c\nprefix=./p\nglobalconfig=./g\n",
        )
        .unwrap();
        std::fs::write(
            home.join(".npmrc"),
            "; mine\nregistry = https://npm.example/\n",
        )
        .unwrap();
        let pins: BTreeMap<String, String> = pins(&ws, Some(&home), "").into_iter().collect();
        assert_eq!(pins["npm_config_registry"], "https://npm.example/");
        assert_eq!(
            pins["npm_config_@modelcontextprotocol:registry"],
            "https://npm.example/"
        );
        assert_eq!(
            pins["npm_config_cache"],
            home.join(".npm").display().to_string()
        );
        assert!(
            pins.values()
                .all(|v| !v.contains("evil") && !v.starts_with("./"))
        );
    }

    #[test]
    fn npx_gets_a_neutral_prefix_and_other_programs_are_left_alone() {
        let n = Path::new("/state/npx");
        let args = vec!["-y".to_string(), "@scope/server".to_string()];
        assert_eq!(
            npx_argv("npx", &args, n),
            ["npx", "--prefix=/state/npx", "-y", "@scope/server"]
        );
        assert_eq!(
            npx_argv("/usr/bin/node", &args, n),
            ["/usr/bin/node", "-y", "@scope/server"]
        );
        let own = vec!["--prefix=/mine".to_string()];
        assert_eq!(npx_argv("npx", &own, n), ["npx", "--prefix=/mine"]);
    }
}
