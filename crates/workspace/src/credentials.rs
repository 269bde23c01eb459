//! Which file names hold secrets: one definition for every reader pablo has.
//!
//! `fs.read` refuses them, the known-safe shell reads ask about them, checkpoints never copy
//! them and git's output leaves them out. A rule written twice drifts (`fs.read` once matched
//! `server.PEM` while the shell table let `cat server.PEM` run unasked), so they all build a
//! [`CredentialNames`] from [`CREDENTIAL_NAMES`] plus the configured `refused_names`, and match
//! the same way: without regard to case, a glob without `/` against the file name, a glob with
//! `/` against the whole workspace-relative path.

use std::sync::{Arc, OnceLock};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// File names refused for reading and writing because they usually hold secrets. Globs without
/// `/` match the file name; globs with `/` match the whole workspace-relative path.
pub const CREDENTIAL_NAMES: &[&str] = &[
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "id_ecdsa_sk",
    "id_ed25519_sk",
    ".netrc",
    "_netrc",
    ".pgpass",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    "credentials",
    "credentials.json",
    "credentials.toml",
    ".htpasswd",
    // Cluster, container and cloud tools.
    "kubeconfig",
    "**/.kube/config",
    "**/.docker/config.json",
    "**/gh/hosts.yml",
    "**/gcloud/*credentials*.json",
    "*service-account*.json",
    "*service_account*.json",
    "*serviceaccount*.json",
    ".vault-token",
    ".s3cfg",
    ".boto",
    // Infrastructure state and variables (they hold every secret the infrastructure has).
    "*.tfstate",
    "*.tfstate.backup",
    "*.tfvars",
    "*.tfvars.json",
    // direnv's file sets variables, usually secrets.
    ".envrc",
    // PuTTY's private keys.
    "*.ppk",
];

/// Endings of a backup or editor copy: `id_rsa.bak`, `id_rsa~` and `.env~` hold what the
/// original holds, so a name is also matched with one of them taken off.
const BACKUP_ENDINGS: &[&str] = &[
    "~", ".bak", ".backup", ".old", ".orig", ".save", ".swp", ".tmp",
];

/// The credential globs (built-in plus configured), compiled into one matcher the first time a
/// path is checked. Compiling them is most of what a short-lived `pablo sandbox` or the TUI's first
/// frame would otherwise spend (case-insensitive globs become one regex set): a process that never
/// checks a path never pays it, and every copy of the built-in list shares one compiled set.
#[derive(Debug, Clone)]
pub struct CredentialNames {
    compiled: Compiled,
    patterns: Vec<String>,
}

#[derive(Debug, Clone)]
enum Compiled {
    /// The built-in list alone: the process-wide [`BUILTIN`].
    Builtin,
    /// Built-in plus configured globs, compiled once for this list and its clones.
    Own(Arc<OnceLock<GlobSet>>),
}

static BUILTIN: OnceLock<GlobSet> = OnceLock::new();

fn glob(pat: &str) -> Result<globset::Glob, globset::Error> {
    GlobBuilder::new(pat)
        .case_insensitive(true)
        .literal_separator(true)
        .build()
}

/// One set of `patterns`, each already checked by [`glob`].
fn compile<'a>(patterns: impl Iterator<Item = &'a str>) -> Result<GlobSet, globset::Error> {
    let mut builder = GlobSetBuilder::new();
    for pat in patterns {
        builder.add(glob(pat)?);
    }
    builder.build()
}

fn builtin_set() -> &'static GlobSet {
    // The built-in globs are tested to compile.
    BUILTIN.get_or_init(|| {
        compile(CREDENTIAL_NAMES.iter().copied()).unwrap_or_else(|_| GlobSet::empty())
    })
}

impl Default for CredentialNames {
    fn default() -> Self {
        Self::builtin()
    }
}

impl CredentialNames {
    /// The built-in list alone.
    pub fn builtin() -> Self {
        Self {
            compiled: Compiled::Builtin,
            patterns: CREDENTIAL_NAMES.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// The built-in list plus `extra` (`[options.filesystem] refused_names`). `Err` names the
    /// glob that does not parse; each is parsed here (cheap), the set is compiled at first use.
    pub fn new(extra: &[String]) -> Result<Self, (String, String)> {
        if extra.is_empty() {
            return Ok(Self::builtin());
        }
        for pat in extra {
            glob(pat).map_err(|e| (pat.clone(), e.to_string()))?;
        }
        let mut names = Self::builtin();
        names.patterns.extend(extra.iter().cloned());
        names.compiled = Compiled::Own(Arc::default());
        Ok(names)
    }

    fn set(&self) -> &GlobSet {
        match &self.compiled {
            Compiled::Builtin => builtin_set(),
            // Every glob parsed in `new`; a set that still fails to build (a size limit) keeps
            // the built-in list rather than refusing nothing.
            Compiled::Own(cell) => cell.get_or_init(|| {
                compile(self.patterns.iter().map(String::as_str))
                    .unwrap_or_else(|_| builtin_set().clone())
            }),
        }
    }

    /// The glob that `rel` (a workspace-relative path with `/` separators) matches, by its file
    /// name or as a whole.
    pub fn matching(&self, rel: &str) -> Option<&str> {
        let rel = rel.trim_start_matches("./").trim_end_matches('/');
        self.matching_exactly(rel).or_else(|| {
            // Compared without a lowercased copy: this runs for every entry of a workspace walk
            // or watch build, and the endings are ASCII (so the cut below is at a char boundary).
            let bytes = rel.as_bytes();
            let ending = BACKUP_ENDINGS.iter().find(|e| {
                bytes.len() > e.len()
                    && bytes[bytes.len() - e.len()..].eq_ignore_ascii_case(e.as_bytes())
            })?;
            self.matching_exactly(&rel[..rel.len() - ending.len()])
        })
    }

    fn matching_exactly(&self, rel: &str) -> Option<&str> {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        let set = self.set();
        // Nearly every path names no credential: a yes-or-no question allocates nothing, where
        // the list of matching globs is a vector.
        if !set.is_match(name) && !set.is_match(rel) {
            return None;
        }
        let hit = set
            .matches(name)
            .into_iter()
            .chain(set.matches(rel))
            .next()?;
        self.patterns.get(hit).map(String::as_str)
    }

    /// Whether `rel` or any directory on the way to it has a credential name (a read of a
    /// directory named `.env` reads what is in it).
    pub fn covers(&self, rel: &str) -> bool {
        let rel = rel.trim_start_matches("./").trim_end_matches('/');
        if self.matching(rel).is_some() {
            return true;
        }
        let set = self.set();
        let mut prefix = String::new();
        for part in rel.split('/').filter(|p| !p.is_empty() && *p != ".") {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            if set.is_match(part) || set.is_match(prefix.as_str()) {
                return true;
            }
        }
        false
    }

    /// The globs, in order (built-in first).
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_list_compiles_whole() {
        let set = compile(CREDENTIAL_NAMES.iter().copied()).unwrap();
        assert_eq!(set.len(), CREDENTIAL_NAMES.len());
        assert_eq!(
            CredentialNames::builtin().patterns().len(),
            CREDENTIAL_NAMES.len()
        );
    }

    #[test]
    fn a_configured_glob_that_does_not_parse_is_refused_by_name() {
        let err = CredentialNames::new(&["ok/*.txt".into(), "bad[".into()]).unwrap_err();
        assert_eq!(err.0, "bad[");
        assert!(!err.1.is_empty());
    }

    #[test]
    fn clones_share_the_compiled_set_and_configured_globs_match() {
        let c = CredentialNames::new(&["*.secret".into()]).unwrap();
        let copy = c.clone();
        assert_eq!(c.matching("a/B.SECRET"), Some("*.secret"));
        assert_eq!(copy.matching("x.secret"), Some("*.secret"));
        assert!(std::ptr::eq(c.set(), copy.set()));
        assert_eq!(copy.matching(".env"), Some(".env"));
    }

    #[test]
    fn names_match_without_regard_to_case_by_name_and_path() {
        let c = CredentialNames::new(&["secrets/**".into()]).unwrap();
        for (path, glob) in [
            (".env", ".env"),
            (".ENV", ".env"),
            ("app/.Env.local", ".env.*"),
            ("certs/server.PEM", "*.pem"),
            ("ID_RSA", "id_rsa"),
            ("home/.ssh/id_ed25519", "id_ed25519"),
            ("./.git-credentials", ".git-credentials"),
            ("secrets/db/url.txt", "secrets/**"),
            ("kubeconfig", "kubeconfig"),
            (".kube/config", "**/.kube/config"),
            ("home/.docker/config.json", "**/.docker/config.json"),
            (".config/gh/hosts.yml", "**/gh/hosts.yml"),
            ("prod.tfstate", "*.tfstate"),
            ("terraform.tfvars", "*.tfvars"),
            (".envrc", ".envrc"),
            (".cargo/credentials.toml", "credentials.toml"),
            (".vault-token", ".vault-token"),
            ("my-service-account.json", "*service-account*.json"),
            (".s3cfg", ".s3cfg"),
            (".boto", ".boto"),
            ("putty.PPK", "*.ppk"),
            ("id_rsa.bak", "id_rsa"),
            ("keys/id_rsa~", "id_rsa"),
            (".env~", ".env"),
            ("server.pem.orig", "*.pem"),
        ] {
            assert_eq!(c.matching(path), Some(glob), "{path}");
        }
        for path in [
            "src/env.rs",
            "keys.txt",
            "id_rsa.pub",
            "README.md",
            "notes.bak",
            "config",
            "~",
        ] {
            assert_eq!(c.matching(path), None, "{path}");
        }
    }

    #[test]
    fn a_directory_with_a_credential_name_covers_what_is_in_it() {
        let c = CredentialNames::builtin();
        assert!(c.covers(".env/x"));
        assert!(c.covers("a/CREDENTIALS/b.txt"));
        assert!(!c.covers("src/main.rs"));
    }
}
