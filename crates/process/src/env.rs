//! The environment a command gets: the person's toolchain, none of their secrets.
//!
//! A command must find what the person's own terminal finds — rustup's `cargo`, the activated
//! virtualenv's `python`, nvm's `node` — so it gets pablo's own `PATH` (minus empty and relative
//! entries, which would make the meaning of a command depend on its directory) and an allow-list
//! of toolchain variables. It must not get what would let it act as the person elsewhere: provider
//! keys and anything whose name looks like a secret are withheld whatever the config says, shell
//! start-up files are not read (no `BASH_ENV`/`ENV`), and `HOME` is not passed unless configured;
//! the toolchain homes rustup, pyenv, nvm and Go would have derived from it are passed explicitly
//! instead, when they exist.
//!
//! The environment is computed once per launch from pablo's environment and `[options.shell.env]`
//! (`inherit`, `exclude`, `set`), and the policy engine resolves command words through exactly the
//! `PATH` in it, so what `pablo policy check` says is what runs.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::ProcessError;
use pablo_config::CLEAN_PATH;

/// Only variables with this prefix may be added to a command's environment by the model.
pub const TASK_ENV_PREFIX: &str = "PABLO_TASK_";

/// Variables passed from pablo's environment when set. A trailing `*` matches a prefix.
pub const DEFAULT_INHERIT: &[&str] = &[
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TZ",
    "TMPDIR",
    "USER",
    "LOGNAME",
    "NO_COLOR",
    // Rust
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "CARGO_TARGET_DIR",
    "RUSTC_WRAPPER",
    "RUSTFLAGS",
    // Python
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV",
    "PYENV_ROOT",
    "PYENV_VERSION",
    // Node
    "NVM_DIR",
    "NVM_BIN",
    "VOLTA_HOME",
    "PNPM_HOME",
    // Go
    "GOPATH",
    "GOROOT",
    "GOBIN",
    "GOMODCACHE",
    "GOCACHE",
    "GOFLAGS",
    "GOTOOLCHAIN",
    // JVM, Ruby, version managers
    "JAVA_HOME",
    "GRADLE_USER_HOME",
    "MAVEN_HOME",
    "GEM_HOME",
    "GEM_PATH",
    "RBENV_ROOT",
    "RBENV_VERSION",
    "ASDF_DIR",
    "ASDF_DATA_DIR",
    "PKG_CONFIG_PATH",
];

// Which names look secret is the vocabulary's (`core::secrets`): config and telemetry, below
// this module, need the same answer.
pub use pablo_core::secrets::looks_secret;

/// Variables never passed: they make `/bin/sh` read a start-up file, or belong to pablo.
const NEVER: &[&str] = &[
    "BASH_ENV",
    "ENV",
    "PS4",
    "SHELLOPTS",
    "BASHOPTS",
    "IFS",
    "CDPATH",
];

/// Toolchain homes derived from `HOME` when `HOME` itself is not passed: (variable, directory
/// under HOME). Passed only when the variable is unset and the directory exists.
const HOME_DERIVED: &[(&str, &str)] = &[
    ("CARGO_HOME", ".cargo"),
    ("RUSTUP_HOME", ".rustup"),
    ("PYENV_ROOT", ".pyenv"),
    ("NVM_DIR", ".nvm"),
    ("GOPATH", "go"),
    ("GOCACHE", ".cache/go-build"),
];

/// `[options.shell.env]`, merged over the layers that may set it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvSettings {
    /// More names (or `PREFIX*` patterns) to pass from pablo's environment. `HOME` may be named.
    pub inherit: Vec<String>,
    /// Names (or patterns) never to pass, defaults included.
    pub exclude: Vec<String>,
    /// Fixed values.
    pub set: BTreeMap<String, String>,
    /// Variables that hold keys pablo itself uses (`api_key_env`): withheld by name.
    pub secret_names: Vec<String>,
}

/// Why a variable of pablo's environment is not passed (for `pablo policy check --env`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Withheld {
    pub name: String,
    pub reason: &'static str,
}

/// The base environment of every command of a launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandEnv {
    /// In order: `PATH` first, then the rest sorted by name.
    vars: Vec<(String, String)>,
    /// Secret-looking variables that config asked for and did not get, named (never valued).
    withheld: Vec<Withheld>,
}

impl Default for CommandEnv {
    /// The fixed environment of the seed: the clean `PATH` and a UTF-8 locale.
    fn default() -> Self {
        Self {
            vars: vec![
                ("PATH".into(), CLEAN_PATH.into()),
                ("LANG".into(), "C.UTF-8".into()),
            ],
            withheld: Vec::new(),
        }
    }
}

fn matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

/// `PATH` as a command gets it: empty and relative entries dropped (they depend on the command's
/// directory), duplicates dropped, the clean `PATH` when nothing is left.
pub fn command_path(parent: Option<&str>) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for entry in parent.unwrap_or("").split(':') {
        if entry.starts_with('/') && !seen.contains(&entry) {
            seen.push(entry);
        }
    }
    if seen.is_empty() {
        CLEAN_PATH.to_string()
    } else {
        seen.join(":")
    }
}

impl CommandEnv {
    /// From pablo's own environment.
    pub fn from_process(settings: &EnvSettings) -> Self {
        Self::from_vars(std::env::vars_os(), settings)
    }

    /// From a given parent environment (tests, `pablo policy check --env`).
    pub fn from_vars(
        parent: impl IntoIterator<Item = (OsString, OsString)>,
        settings: &EnvSettings,
    ) -> Self {
        let parent: BTreeMap<String, String> = parent
            .into_iter()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect();
        let excluded = |name: &str| settings.exclude.iter().any(|p| matches(p, name));
        let mut withheld = Vec::new();
        let refuse = |name: &str, settings: &EnvSettings| -> Option<&'static str> {
            if NEVER.contains(&name) || name.starts_with(TASK_ENV_PREFIX) {
                return Some("it changes how the shell starts, or belongs to pablo");
            }
            if settings.secret_names.iter().any(|s| s == name) {
                return Some("it holds pablo's provider key");
            }
            if looks_secret(name) {
                return Some("its name looks like a secret");
            }
            None
        };
        let mut vars: BTreeMap<String, String> = BTreeMap::new();
        for (name, value) in &parent {
            if name == "PATH" || excluded(name) {
                continue;
            }
            let by_default = DEFAULT_INHERIT.iter().any(|p| matches(p, name));
            let asked = settings.inherit.iter().any(|p| matches(p, name));
            if !(by_default || asked) {
                continue;
            }
            match refuse(name, settings) {
                // Only a refusal of something the person asked for is worth reporting.
                Some(reason) if asked => withheld.push(Withheld {
                    name: name.clone(),
                    reason,
                }),
                Some(_) => {}
                None => {
                    vars.insert(name.clone(), value.clone());
                }
            }
        }
        if !vars.contains_key("HOME")
            && let Some(home) = parent.get("HOME").filter(|h| h.starts_with('/'))
        {
            for (var, rel) in HOME_DERIVED {
                let dir = Path::new(home).join(rel);
                if !vars.contains_key(*var) && !excluded(var) && dir.is_dir() {
                    vars.insert((*var).to_string(), dir.to_string_lossy().into_owned());
                }
            }
        }
        for (name, value) in &settings.set {
            if name == "PATH" {
                continue;
            }
            match refuse(name, settings) {
                Some(reason) => withheld.push(Withheld {
                    name: name.clone(),
                    reason,
                }),
                None => {
                    vars.insert(name.clone(), value.clone());
                }
            }
        }
        vars.entry("LANG".into())
            .or_insert_with(|| "C.UTF-8".into());
        let path = match settings.set.get("PATH") {
            Some(p) => command_path(Some(p)),
            None => command_path(parent.get("PATH").map(String::as_str)),
        };
        let mut out = vec![("PATH".to_string(), path)];
        out.extend(vars);
        withheld.sort_by(|a, b| a.name.cmp(&b.name));
        withheld.dedup();
        Self {
            vars: out,
            withheld,
        }
    }

    /// The `PATH` commands get, which is also the one command words are resolved through.
    pub fn path(&self) -> &str {
        self.vars
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.as_str())
            .unwrap_or(CLEAN_PATH)
    }

    /// The base variables, `PATH` first.
    pub fn vars(&self) -> &[(String, String)] {
        &self.vars
    }

    /// What config asked for and did not get, and why.
    pub fn withheld(&self) -> &[Withheld] {
        &self.withheld
    }

    /// The environment of one command: the base, `TERM`, then the model's `PABLO_TASK_`
    /// additions (checked here: any other name is refused).
    pub fn for_command(
        &self,
        additions: &BTreeMap<String, String>,
        pty: bool,
    ) -> Result<Vec<(String, String)>, ProcessError> {
        let mut env = self.vars.clone();
        env.retain(|(k, _)| k != "TERM");
        env.push((
            "TERM".to_string(),
            if pty { "xterm-256color" } else { "dumb" }.to_string(),
        ));
        check_additions(additions)?;
        env.extend(additions.iter().map(|(k, v)| (k.clone(), v.clone())));
        Ok(env)
    }
}

/// The base environment of a program pablo starts on the person's behalf (an MCP server over
/// stdio, a language server, a hook) in a folder the person has not trusted: `base` (the
/// commands' environment) without anything that would make the program take its configuration or
/// its code from the workspace, where an approved command may have planted them.
///
/// - `PATH` loses the entries inside the workspace (`.venv/bin`, `node_modules/.bin`): a planted
///   `jq` there would be the `jq` a hook runs. Every other variable whose value names a path
///   inside the workspace (`VIRTUAL_ENV`, `PYTHONPATH`, `RUSTC_WRAPPER`, …) is left out too.
/// - npm and npx take from a project `.npmrc` none of the settings that name a program
///   (`script-shell`, `shell`, `node-options`, `git`, `userconfig`) or where packages come from
///   (`registry` and scoped registries, `cache`, `prefix`, `globalconfig`; [`super::npm`]): the
///   environment outranks every config file, so these are set to npm's defaults and the
///   person's own file.
/// - rustup's proxies (`rustfmt`, `cargo`) use the person's toolchain, not a `rust-toolchain.toml`
///   (whose `path =` names any directory of programs): `RUSTUP_TOOLCHAIN` is pinned to the
///   person's own choice for this folder (their `rustup override`, else their default), read
///   from rustup's settings outside the workspace.
/// - Python does not put the current directory first on `sys.path` (`PYTHONSAFEPATH=1`), so
///   `python3 -m server` imports the installed module, not a planted `server.py`.
pub fn untrusted_program_env(base: &[(String, String)], workspace: &Path) -> Vec<(String, String)> {
    let real = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    let inside = |entry: &str| {
        let p = Path::new(entry);
        p.is_absolute()
            && (p.starts_with(workspace)
                || p.starts_with(&real)
                || std::fs::canonicalize(p).is_ok_and(|c| c.starts_with(&real)))
    };
    let mut out = Vec::with_capacity(base.len() + 3);
    for (name, value) in base {
        if name == "PATH" {
            let kept: Vec<&str> = value.split(':').filter(|e| !inside(e)).collect();
            let path = if kept.is_empty() {
                CLEAN_PATH.to_string()
            } else {
                kept.join(":")
            };
            out.push((name.clone(), path));
        } else if !value.split(':').any(inside) {
            out.push((name.clone(), value.clone()));
        }
    }
    // Where the program will look for the person's own settings: the kept environment's
    // `HOME`, else (with no `HOME`, as commands get by default) the account's home directory.
    let var = |out: &[(String, String)], name: &str| {
        out.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| PathBuf::from(v))
    };
    let home = var(&out, "HOME").or_else(account_home);
    let rustup_home = var(&out, "RUSTUP_HOME").or_else(|| home.as_ref().map(|h| h.join(".rustup")));
    let pinned = out.iter().any(|(k, _)| k == "RUSTUP_TOOLCHAIN");
    let path = out
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let npm_pins = super::npm::pins(&real, home.as_deref(), &path);
    let mut add = |name: &str, value: String| {
        out.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        out.push((name.to_string(), value));
    };
    // npm reads the project's `.npmrc` below the environment, so the settings through which it
    // would run a program of the workspace's choosing are set here (an empty value counts as
    // unset to npm, hence the blank `node-options`); `userconfig` keeps the person's own file
    // the one npm reads next.
    add("npm_config_script_shell", "/bin/sh".into());
    add("npm_config_shell", "/bin/sh".into());
    add("npm_config_node_options", " ".into());
    add("npm_config_git", "git".into());
    if let Some(h) = &home {
        add(
            "npm_config_userconfig",
            h.join(".npmrc").display().to_string(),
        );
    }
    // Where packages come from, are cached and installed: never the project file's choice.
    for (name, value) in npm_pins {
        add(&name, value);
    }
    add("PYTHONSAFEPATH", "1".into());
    if !pinned
        && let Some(rustup_home) = rustup_home
        && let Some(toolchain) = rustup_choice(&rustup_home, &real)
    {
        add("RUSTUP_TOOLCHAIN", toolchain);
    }
    out
}

/// The home directory of the account pablo runs as, from `/etc/passwd` (what programs fall back
/// to when `HOME` is not set).
fn account_home() -> Option<PathBuf> {
    let uid = rustix::process::getuid().as_raw().to_string();
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.len() >= 7 && fields[2] == uid && fields[5].starts_with('/'))
            .then(|| PathBuf::from(fields[5]))
    })
}

/// The toolchain the person chose for `dir` in rustup's own settings (`RUSTUP_HOME/settings.toml`):
/// the override of `dir` or its nearest ancestor, else the default.
fn rustup_choice(rustup_home: &Path, dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(rustup_home.join("settings.toml")).ok()?;
    let settings: toml::Table = text.parse().ok()?;
    let overrides = settings.get("overrides").and_then(toml::Value::as_table);
    let mut at = Some(dir);
    while let Some(d) = at {
        if let Some(t) = overrides
            .and_then(|o| o.get(&*d.to_string_lossy()))
            .and_then(toml::Value::as_str)
        {
            return Some(t.to_string());
        }
        at = d.parent();
    }
    settings
        .get("default_toolchain")
        .and_then(toml::Value::as_str)
        .map(str::to_string)
}

/// Refuses model-given variables outside the `PABLO_TASK_` prefix, or holding a NUL byte.
pub fn check_additions(additions: &BTreeMap<String, String>) -> Result<(), ProcessError> {
    for (name, value) in additions {
        check_env_name(name)?;
        if value.contains('\0') {
            return Err(ProcessError::InvalidEnv {
                name: name.clone(),
                reason: "its value contains a NUL byte".into(),
            });
        }
    }
    Ok(())
}

fn check_env_name(name: &str) -> Result<(), ProcessError> {
    if !name.starts_with(TASK_ENV_PREFIX) {
        return Err(ProcessError::InvalidEnv {
            name: name.to_string(),
            reason: format!("only variables whose names begin with {TASK_ENV_PREFIX} may be set"),
        });
    }
    let valid = name.len() > TASK_ENV_PREFIX.len()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !valid {
        return Err(ProcessError::InvalidEnv {
            name: name.to_string(),
            reason: "a name has letters, digits and underscores after the prefix".into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    fn get<'a>(env: &'a CommandEnv, name: &str) -> Option<&'a str> {
        env.vars()
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn path_keeps_absolute_entries_in_order_and_drops_empty_relative_and_repeated_ones() {
        assert_eq!(
            command_path(Some(
                "/home/u/.cargo/bin::.:bin:/usr/bin:/home/u/.cargo/bin"
            )),
            "/home/u/.cargo/bin:/usr/bin"
        );
        assert_eq!(command_path(Some("")), CLEAN_PATH);
        assert_eq!(command_path(None), CLEAN_PATH);
    }

    #[test]
    fn toolchain_variables_pass_and_secrets_and_home_do_not() {
        let env = CommandEnv::from_vars(
            parent(&[
                ("PATH", "/opt/venv/bin:/usr/bin"),
                ("VIRTUAL_ENV", "/opt/venv"),
                ("CARGO_HOME", "/c"),
                ("LC_ALL", "C.UTF-8"),
                ("HOME", "/nonexistent-home"),
                ("OPENAI_API_KEY", "sk-1"),
                ("GITHUB_TOKEN", "ghp"),
                ("X_API_KEY", "x"),
                ("EDITOR", "vim"),
                ("BASH_ENV", "/x"),
            ]),
            &EnvSettings::default(),
        );
        assert_eq!(env.path(), "/opt/venv/bin:/usr/bin");
        assert_eq!(get(&env, "VIRTUAL_ENV"), Some("/opt/venv"));
        assert_eq!(get(&env, "CARGO_HOME"), Some("/c"));
        assert_eq!(get(&env, "LC_ALL"), Some("C.UTF-8"));
        for absent in [
            "HOME",
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "X_API_KEY",
            "EDITOR",
            "BASH_ENV",
        ] {
            assert_eq!(get(&env, absent), None, "{absent} must not pass");
        }
        assert!(env.withheld().is_empty(), "nothing was asked for");
    }

    #[test]
    fn inherit_cannot_reach_a_secret_and_says_what_it_withheld() {
        let settings = EnvSettings {
            inherit: vec!["*".into()],
            secret_names: vec!["MY_PROVIDER".into()],
            ..Default::default()
        };
        let env = CommandEnv::from_vars(
            parent(&[
                ("EDITOR", "vim"),
                ("AWS_SECRET_ACCESS_KEY", "s"),
                ("MY_PROVIDER", "k"),
                ("HOME", "/h"),
            ]),
            &settings,
        );
        assert_eq!(get(&env, "EDITOR"), Some("vim"));
        assert_eq!(get(&env, "HOME"), Some("/h"), "HOME passes when asked for");
        assert_eq!(get(&env, "AWS_SECRET_ACCESS_KEY"), None);
        assert_eq!(get(&env, "MY_PROVIDER"), None);
        let names: Vec<&str> = env.withheld().iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["AWS_SECRET_ACCESS_KEY", "MY_PROVIDER"]);
    }

    #[test]
    fn exclude_removes_a_default_and_set_adds_a_value_but_not_a_secret() {
        let settings = EnvSettings {
            exclude: vec!["LC_*".into()],
            set: BTreeMap::from([
                ("RUST_LOG".to_string(), "debug".to_string()),
                ("DEPLOY_TOKEN".to_string(), "t".to_string()),
            ]),
            ..Default::default()
        };
        let env = CommandEnv::from_vars(parent(&[("LC_ALL", "C")]), &settings);
        assert_eq!(get(&env, "LC_ALL"), None);
        assert_eq!(get(&env, "RUST_LOG"), Some("debug"));
        assert_eq!(get(&env, "DEPLOY_TOKEN"), None);
        assert_eq!(env.withheld()[0].name, "DEPLOY_TOKEN");
    }

    #[test]
    fn toolchain_homes_are_derived_from_home_only_when_they_exist() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".cargo")).unwrap();
        std::fs::create_dir_all(home.path().join(".rustup")).unwrap();
        let h = home.path().to_str().unwrap();
        let env = CommandEnv::from_vars(parent(&[("HOME", h)]), &EnvSettings::default());
        assert_eq!(get(&env, "CARGO_HOME"), Some(&*format!("{h}/.cargo")));
        assert_eq!(get(&env, "RUSTUP_HOME"), Some(&*format!("{h}/.rustup")));
        assert_eq!(get(&env, "PYENV_ROOT"), None, "no ~/.pyenv here");
        assert_eq!(get(&env, "HOME"), None);
    }

    #[test]
    fn secret_names_are_recognised_by_fragment_or_whole_word() {
        for secret in [
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "aws_secret_access_key",
            "DB_PASSWORD",
            "NPM_AUTH",
            "GH_PAT",
            "X_API_KEY",
        ] {
            assert!(looks_secret(secret), "{secret}");
        }
        for plain in ["GIT_AUTHOR_NAME", "PATH", "PYENV_ROOT", "LANG", "PWD"] {
            assert!(!looks_secret(plain), "{plain}");
        }
    }

    #[test]
    fn env_outside_the_task_prefix_is_refused_by_name() {
        use pablo_core::Coded;
        for bad in ["HOME", "PABLO_TASK_", "PABLO_TASK_A-B", "pablo_task_x"] {
            let mut add = BTreeMap::new();
            add.insert(bad.to_string(), "x".to_string());
            let err = CommandEnv::default().for_command(&add, false).unwrap_err();
            assert_eq!(err.code(), "invalid_arguments");
            assert!(err.to_string().contains(bad), "{err}");
        }
    }

    #[test]
    fn a_command_gets_term_and_only_task_additions() {
        let env = CommandEnv::default();
        let mut add = BTreeMap::new();
        add.insert("PABLO_TASK_LABEL".to_string(), "docs".to_string());
        let vars = env.for_command(&add, true).unwrap();
        assert!(vars.contains(&("TERM".into(), "xterm-256color".into())));
        assert!(vars.contains(&("PABLO_TASK_LABEL".into(), "docs".into())));
        add.insert("HOME".to_string(), "/x".to_string());
        assert!(env.for_command(&add, false).is_err());
    }
}
