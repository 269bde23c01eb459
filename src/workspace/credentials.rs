//! Which file names hold secrets: one definition for every reader pablo has.
//!
//! `fs.read` refuses them, the known-safe shell reads ask about them, checkpoints never copy
//! them and git's output leaves them out. A rule written twice drifts (`fs.read` once matched
//! `server.PEM` while the shell table let `cat server.PEM` run unasked), so they all build a
//! [`CredentialNames`] from [`CREDENTIAL_NAMES`] plus the configured `refused_names`, and match
//! the same way: without regard to case, a glob without `/` against the file name, a glob with
//! `/` against the whole workspace-relative path.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// File names refused for reading and writing because they usually hold secrets. Globs without
/// `/` match the file name; globs with `/` match the whole workspace-relative path.
pub(crate) const CREDENTIAL_NAMES: &[&str] = &[
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
    ".htpasswd",
];

/// The compiled credential globs (built-in plus configured).
#[derive(Debug, Clone)]
pub(crate) struct CredentialNames {
    set: GlobSet,
    patterns: Vec<String>,
}

impl Default for CredentialNames {
    fn default() -> Self {
        Self::builtin()
    }
}

impl CredentialNames {
    /// The built-in list alone.
    pub(crate) fn builtin() -> Self {
        // The built-in globs are tested to compile.
        Self::new(&[]).unwrap_or_else(|_| Self {
            set: GlobSet::empty(),
            patterns: Vec::new(),
        })
    }

    /// The built-in list plus `extra` (`[options.filesystem] refused_names`). `Err` names the
    /// glob that does not compile.
    pub(crate) fn new(extra: &[String]) -> Result<Self, (String, String)> {
        let mut builder = GlobSetBuilder::new();
        let mut patterns = Vec::new();
        for pat in CREDENTIAL_NAMES
            .iter()
            .map(|s| s.to_string())
            .chain(extra.iter().cloned())
        {
            let glob = GlobBuilder::new(&pat)
                .case_insensitive(true)
                .literal_separator(true)
                .build()
                .map_err(|e| (pat.clone(), e.to_string()))?;
            builder.add(glob);
            patterns.push(pat);
        }
        let set = builder
            .build()
            .map_err(|e| ("refused_names".to_string(), e.to_string()))?;
        Ok(Self { set, patterns })
    }

    /// The glob that `rel` (a workspace-relative path with `/` separators) matches, by its file
    /// name or as a whole.
    pub(crate) fn matching(&self, rel: &str) -> Option<&str> {
        let rel = rel.trim_start_matches("./").trim_end_matches('/');
        let name = rel.rsplit('/').next().unwrap_or(rel);
        let hit = self
            .set
            .matches(name)
            .into_iter()
            .chain(self.set.matches(rel))
            .next()?;
        self.patterns.get(hit).map(String::as_str)
    }

    /// Whether `rel` or any directory on the way to it has a credential name (a read of a
    /// directory named `.env` reads what is in it).
    pub(crate) fn covers(&self, rel: &str) -> bool {
        let rel = rel.trim_start_matches("./").trim_end_matches('/');
        if self.matching(rel).is_some() {
            return true;
        }
        let mut prefix = String::new();
        for part in rel.split('/').filter(|p| !p.is_empty() && *p != ".") {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            if self.set.is_match(part) || self.set.is_match(prefix.as_str()) {
                return true;
            }
        }
        false
    }

    /// The globs, in order (built-in first).
    pub(crate) fn patterns(&self) -> &[String] {
        &self.patterns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_list_compiles_whole() {
        assert_eq!(
            CredentialNames::builtin().patterns().len(),
            CREDENTIAL_NAMES.len()
        );
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
        ] {
            assert_eq!(c.matching(path), Some(glob), "{path}");
        }
        for path in ["src/env.rs", "keys.txt", "id_rsa.pub", "README.md"] {
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
