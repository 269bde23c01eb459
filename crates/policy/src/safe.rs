//! Known-safe reads: commands that only read, so they run without a prompt (and always inside the
//! read-only sandbox, which bounds them even if this table is wrong).
//!
//! A simple command is known safe when
//! - its word resolves, through the commands' `PATH`, to a file outside the workspace whose name
//!   is one of the programs of [`PROGRAMS`] (a `./cat` planted in the repository is not `cat`);
//! - none of its options is one that writes, runs a program, pages or follows links out of the
//!   tree (the `forbid_*` columns; a GNU long option also counts when abbreviated, since
//!   `--out` means `--output`);
//! - every path it names (operands, file-valued options, input redirections) lies inside the
//!   workspace, after symbolic links are followed, and is not a credential file;
//! - for `sed`, the script only prints (`-n` with `p` commands); for `uniq`, there is no output
//!   file; for `git`, the subcommand only reads (`status log diff show branch rev-parse ls-files
//!   grep blame`, `branch` only listing).
//!
//! Everything else about the line (proof, assignments, write redirections, deny rules, allow
//! lists) is the judge's business.

use std::path::{Path, PathBuf};

use super::links::{existing_beneath, resolve_existing};
use super::rules::Resolved;
use super::safe_sed::sed_print_only;
use pablo_workspace::CredentialNames;

pub(crate) use super::safe_table::{Operands, PROGRAMS, Program};

/// How [`SafeReads::recursive_read_is_clean`] walks.
#[derive(Clone, Copy)]
struct Walk<'a> {
    /// The program follows symbolic links (`grep -R`).
    follow: bool,
    /// It reads hidden files (rg only with `--hidden`).
    hidden: bool,
    /// For rg: its own positive globs, the only way a credential file comes back into its
    /// search (pablo's config leaves them out). `None`: every credential file counts.
    taken_back: Option<&'a globset::GlobSet>,
}

/// The positive globs of rg's command line, without regard to case (its `--iglob` and, to be
/// safe, its `-g`). A glob that does not compile matches everything.
fn positive_globs(globs: &[&str]) -> globset::GlobSet {
    let mut b = globset::GlobSetBuilder::new();
    for g in globs.iter().filter(|g| !g.starts_with('!')) {
        let glob = globset::GlobBuilder::new(g)
            .case_insensitive(true)
            .build()
            .or_else(|_| globset::Glob::new("*"));
        if let Ok(glob) = glob {
            b.add(glob);
        }
    }
    b.build().unwrap_or_else(|_| {
        // Nothing known: every credential file counts.
        let mut all = globset::GlobSetBuilder::new();
        if let Ok(g) = globset::Glob::new("**") {
            all.add(g);
        }
        all.build().unwrap_or_else(|_| globset::GlobSet::empty())
    })
}

/// The most entries [`SafeReads::recursive_read_is_clean`] looks at: a guard against a tree
/// without end (a network mount, a generator), above any checkout people work in (a chromium
/// checkout holds about 500,000 files). The walk reads names, never contents, so it costs a
/// fraction of the recursive read it proves safe, which opens every file it names (BENCHMARKS.md,
/// issue 46 item 4: a 200,000-file tree).
pub(crate) const MAX_LINK_WALK: usize = 2_000_000;

/// Multi-call binaries a known-safe name may link to (they act on the name they were called by).
const MULTI_CALL: &[&str] = &["busybox", "toybox", "coreutils"];

/// The row of the table for a program name.
pub(crate) fn program_named(name: &str) -> Option<&'static Program> {
    PROGRAMS.iter().find(|p| p.name == name)
}

/// Checks commands against the table for one workspace.
#[derive(Debug)]
pub(crate) struct SafeReads {
    workspace: PathBuf,
    credentials: CredentialNames,
    /// Commands can run with the credentials masked (namespaces and Landlock): a recursive read
    /// with a credential file below is then safe, since it cannot see what it would print.
    masking: bool,
}

/// Why a command is not known safe (for the reason a prompt shows).
pub(crate) type NotSafe = String;

/// Why a command is a known-safe read: the row (or check) that proved it, and whether the proof
/// holds only with the credentials masked (see `process::mask`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Proof {
    pub(crate) name: String,
    pub(crate) masked: bool,
}

impl Proof {
    pub(crate) fn plain(name: &str) -> Self {
        Self {
            name: name.to_string(),
            masked: false,
        }
    }
}

impl SafeReads {
    pub(crate) fn new(
        workspace: PathBuf,
        extra_credential_names: &[String],
        masking: bool,
    ) -> Self {
        // The config layers checked every glob already; a bad one leaves the built-in list.
        let credentials = CredentialNames::new(extra_credential_names)
            .unwrap_or_else(|_| CredentialNames::builtin());
        Self {
            workspace,
            credentials,
            masking,
        }
    }

    /// Whether the program `resolved` names is a file outside the workspace once links are
    /// followed (a PATH entry or link into the workspace runs the repository's program).
    pub(crate) fn runs_from_outside(&self, resolved: &Resolved) -> bool {
        !resolved.in_workspace
            && resolved
                .real()
                .is_some_and(|real| real.is_ok_and(|real| !real.starts_with(&self.workspace)))
    }

    /// The workspace root (canonical).
    pub(crate) fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// Whether commands can run with the credentials masked.
    pub(crate) fn masking(&self) -> bool {
        self.masking
    }

    /// A path a command opens, checked as every operand is: inside the workspace, no credential.
    pub(crate) fn path_inside(&self, raw: &str, cwd: &str) -> Result<(), NotSafe> {
        if raw.is_empty() {
            return Err("an empty path".into());
        }
        self.path(raw, cwd)
    }

    /// Whether `resolved` with `args`, run in `cwd` (workspace-relative), is a known-safe read;
    /// `reads` are the files its input redirections open.
    pub(crate) fn check(
        &self,
        resolved: &Resolved,
        args: &[String],
        reads: &[&str],
        cwd: &str,
    ) -> Result<Proof, NotSafe> {
        let prog = self.program(resolved)?;
        for r in reads {
            self.path(r, cwd)?;
        }
        let masked = match prog.operands {
            Operands::Find => {
                self.find(args, cwd)?;
                false
            }
            Operands::Git => {
                let path = |raw: &str, cwd: &str| self.path(raw, cwd);
                let reads = super::safe_git::Reads {
                    workspace: &self.workspace,
                    credentials: &self.credentials,
                    path: &path,
                };
                super::safe_git::check(&reads, resolved, args, cwd)?;
                false
            }
            _ => self.generic(prog, args, cwd)?,
        };
        Ok(Proof {
            name: prog.name.to_string(),
            masked,
        })
    }

    fn program(&self, resolved: &Resolved) -> Result<&'static Program, NotSafe> {
        let Some(path) = resolved.path.as_deref() else {
            return Err(format!("`{}` is not a program on the PATH", resolved.key));
        };
        if resolved.in_workspace {
            return Err(format!("{path} is a program in the workspace"));
        }
        let name = Path::new(path)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let prog =
            program_named(name).ok_or_else(|| format!("`{name}` is not a known-safe read"))?;
        // What actually runs: a link to a file inside the workspace is the workspace's program.
        let real = match resolved.real() {
            Some(Ok(real)) => real,
            Some(Err(why)) => return Err(why.to_string()),
            None => return Err(format!("`{}` is not a program on the PATH", resolved.key)),
        };
        if real.starts_with(&self.workspace) {
            return Err(format!("{path} leads to a file in the workspace"));
        }
        let real_name = real
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if real_name != name && !MULTI_CALL.contains(&real_name) && !same_program(name, real_name) {
            return Err(format!("{path} is a link to {}", real.display()));
        }
        Ok(prog)
    }

    /// A path a command opens: inside the workspace once links are followed, not a credential.
    fn path(&self, raw: &str, cwd: &str) -> Result<(), NotSafe> {
        if raw == "-" || raw.is_empty() {
            return Ok(());
        }
        let real = if raw.starts_with('/') {
            resolve_existing(Path::new(raw))
        } else {
            existing_beneath(&self.workspace, &Path::new(cwd).join(raw))
        };
        let real = real.ok_or_else(|| {
            format!("`{raw}` cannot be resolved without `..` past a missing name")
        })?;
        let rel = real
            .strip_prefix(&self.workspace)
            .map_err(|_| format!("`{raw}` is outside the workspace"))?;
        let hit = self.credentials.covers(&rel.to_string_lossy());
        if hit {
            return Err(format!("`{raw}` looks like a credential file"));
        }
        Ok(())
    }

    /// Options anywhere (GNU permutes), `--` ends them; operands per the program's kind. `true`
    /// when the read is safe only with the credentials masked.
    fn generic(&self, prog: &Program, args: &[String], cwd: &str) -> Result<bool, NotSafe> {
        let mut operands: Vec<&str> = Vec::new();
        let mut pattern_given = false;
        let mut sed_script = false;
        let mut sed_quiet = false;
        let mut follows_links = false;
        let mut recursive = prog.always_recursive;
        // rg leaves hidden files out unless told otherwise; `--files` prints only names.
        let mut hidden = prog.name != "rg";
        let mut names_only = false;
        // rg's own globs (`-g`, `--glob`, `--iglob`), later than pablo's and so stronger.
        let mut rg_globs: Vec<&str> = Vec::new();
        let mut i = 0;
        let mut options_done = false;
        while i < args.len() {
            let a = args[i].as_str();
            i += 1;
            if options_done || a == "-" || !a.starts_with('-') {
                operands.push(a);
                continue;
            }
            if a == "--" {
                options_done = true;
                continue;
            }
            if let Some(long) = a.strip_prefix("--") {
                let (name, inline) = match long.split_once('=') {
                    Some((n, v)) => (n, Some(v)),
                    None => (long, None),
                };
                if let Some(f) = prog
                    .forbid_long
                    .iter()
                    .find(|f| f.starts_with(name) && !name.is_empty())
                {
                    return Err(format!("`{}` {a} (--{f}) is not a plain read", prog.name));
                }
                // GNU takes any unambiguous prefix of a long option (`--exclude-f` is
                // `--exclude-from`). A prefix of a value option is taken to be that option, and
                // since the program may read the abbreviation otherwise, its value is checked
                // as a path whatever the option is.
                let (full, abbreviated) = long_option(prog, name);
                let value = match inline {
                    Some(v) => Some(v),
                    None if full.is_some() => {
                        i += 1;
                        args.get(i - 1).map(String::as_str)
                    }
                    None => None,
                };
                let full_name = full.unwrap_or(name);
                follows_links |= is_prefix_of(name, prog.follow_long);
                recursive |= is_prefix_of(name, prog.recursive_long)
                    || (full_name == "directories" && grep_recurses(prog, value));
                if prog.name == "rg" {
                    hidden |= is_prefix_of(name, &["hidden"]);
                    names_only |= name == "files";
                    // A glob of its own can take back what pablo's config left out.
                    if matches!(full_name, "glob" | "iglob") {
                        // A glob that names a hidden file searches it even without --hidden.
                        recursive = true;
                        hidden = true;
                        rg_globs.extend(value);
                    }
                }
                if prog.operands == Operands::Sed && is_prefix_of(name, &["quiet", "silent"]) {
                    sed_quiet = true;
                }
                if matches!(full_name, "regexp" | "file" | "expression") {
                    pattern_given = true;
                    if prog.operands == Operands::Sed {
                        sed_script = true;
                        if let Some(v) = value {
                            sed_print_only(v)?;
                        }
                    }
                }
                if let Some(v) = value
                    && (abbreviated || prog.path_values.contains(&full_name))
                {
                    self.path(v, cwd)?;
                }
                continue;
            }
            // A cluster of short options: `-la`, `-n5`, `-e PATTERN`.
            let cluster = &a[1..];
            for (k, c) in cluster.char_indices() {
                if prog.forbid_short.contains(c) {
                    return Err(format!("`{}` -{c} is not a plain read", prog.name));
                }
                follows_links |= prog.follow_short.contains(c);
                recursive |= prog.recursive_short.contains(c);
                if prog.name == "rg" {
                    hidden |= c == '.' || (c == 'u' && cluster.matches('u').count() >= 2);
                }
                if prog.operands == Operands::Sed && c == 'n' {
                    sed_quiet = true;
                }
                if prog.value_short.contains(c) {
                    let rest = &cluster[k + c.len_utf8()..];
                    let value = if rest.is_empty() {
                        i += 1;
                        args.get(i - 1).map(String::as_str)
                    } else {
                        Some(rest)
                    };
                    if c == 'd' && grep_recurses(prog, value) {
                        recursive = true;
                    }
                    if prog.name == "rg" && c == 'g' {
                        recursive = true;
                        hidden = true;
                        rg_globs.extend(value);
                    }
                    if matches!(c, 'e' | 'f') {
                        pattern_given = true;
                        if prog.operands == Operands::Sed && c == 'e' {
                            sed_script = true;
                            if let Some(v) = value {
                                sed_print_only(v)?;
                            }
                        }
                    }
                    let letter = c.to_string();
                    if let Some(v) = value
                        && prog.path_values.contains(&letter.as_str())
                    {
                        self.path(v, cwd)?;
                    }
                    break;
                }
            }
        }
        let scan = Scan {
            operands,
            pattern_given,
            sed_script,
            sed_quiet,
            follows_links,
            recursive,
            hidden,
            names_only,
            rg_globs,
        };
        self.operands_are_safe(prog, &scan, cwd)
    }

    /// The operands [`Self::generic`] found, checked as the program's kind reads them.
    fn operands_are_safe(
        &self,
        prog: &Program,
        scan: &Scan<'_>,
        cwd: &str,
    ) -> Result<bool, NotSafe> {
        let mut masked = false;
        match prog.operands {
            Operands::Text => Ok(false),
            Operands::Paths => {
                scan.operands.iter().try_for_each(|o| self.path(o, cwd))?;
                if scan.recursive || prog.reads_directories {
                    let walk = Walk {
                        follow: prog.reads_directories,
                        hidden: true,
                        taken_back: None,
                    };
                    for root in &scan.operands {
                        let is_dir = self.workspace.join(cwd).join(root).is_dir();
                        if scan.recursive || is_dir {
                            masked |= self.recursive_read_is_clean(root, cwd, &walk)?;
                        }
                    }
                }
                Ok(masked)
            }
            Operands::OnePath => {
                if scan.operands.len() > 1 {
                    return Err(format!("`{}` with a second operand writes it", prog.name));
                }
                scan.operands.iter().try_for_each(|o| self.path(o, cwd))?;
                Ok(false)
            }
            Operands::PatternThenPaths => {
                let skip = usize::from(!scan.pattern_given);
                let paths: Vec<&str> = scan.operands.iter().skip(skip).copied().collect();
                paths.iter().try_for_each(|o| self.path(o, cwd))?;
                if (scan.recursive && !scan.names_only) || scan.follows_links {
                    // For rg, only a credential file one of its own globs takes back counts.
                    let taken_back = (prog.name == "rg").then(|| positive_globs(&scan.rg_globs));
                    // No path: the recursion starts at the working directory.
                    let roots = if paths.is_empty() { vec!["."] } else { paths };
                    for root in roots {
                        let walk = Walk {
                            follow: scan.follows_links,
                            hidden: scan.hidden,
                            taken_back: taken_back.as_ref(),
                        };
                        masked |= self.recursive_read_is_clean(root, cwd, &walk)?;
                    }
                }
                Ok(masked)
            }
            Operands::Sed => {
                if !scan.sed_quiet {
                    return Err("`sed` is a known-safe read only with -n and p commands".into());
                }
                let mut rest = scan.operands.iter();
                if !scan.sed_script {
                    let script = rest
                        .next()
                        .ok_or_else(|| "`sed` without a script".to_string())?;
                    sed_print_only(script)?;
                }
                rest.try_for_each(|o| self.path(o, cwd))?;
                Ok(false)
            }
            Operands::Find | Operands::Git => Ok(false),
        }
    }

    /// A read that prints the content of every file below `root` prints no credential file and,
    /// when it follows links (`follow`), none from outside the workspace: no credential name lies
    /// below it (hidden ones only when the program reads them, `hidden`) and no followed link
    /// leads out. Bounded: a tree of more than [`MAX_LINK_WALK`] entries is not walked, and the
    /// read is not known safe. Where credentials can be masked, a credential file below does
    /// not refuse the read: `Ok(true)` says it runs safe only masked.
    fn recursive_read_is_clean(
        &self,
        root: &str,
        cwd: &str,
        walk: &Walk<'_>,
    ) -> Result<bool, NotSafe> {
        let mut masked = false;
        let Walk {
            follow,
            hidden,
            taken_back,
        } = *walk;
        let start = self.workspace.join(cwd).join(root);
        let mut stack = vec![start];
        let mut seen = 0usize;
        // Links are followed into the directories they lead to (inside, or refused): those are
        // walked too, each once.
        let mut walked = std::collections::HashSet::new();
        while let Some(dir) = stack.pop() {
            if !walked.insert(std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone())) {
                continue;
            }
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                seen += 1;
                if seen > MAX_LINK_WALK {
                    return Err(format!(
                        "`{root}` holds more than {MAX_LINK_WALK} entries to check for \
                         credential files and links that lead out of the workspace"
                    ));
                }
                if !hidden && e.file_name().to_string_lossy().starts_with('.') {
                    continue;
                }
                let path = e.path();
                let rel = path.strip_prefix(&self.workspace).unwrap_or(&path);
                let rel_text = rel.to_string_lossy();
                let counts = taken_back.is_none_or(|set| {
                    set.is_match(rel_text.as_ref()) || set.is_match(e.file_name())
                });
                if counts && self.credentials.covers(&rel_text) {
                    if !self.masking {
                        return Err(format!(
                            "`{rel_text}` below `{root}` looks like a credential file, and the \
                             read would print it (it cannot be masked here: no namespaces)"
                        ));
                    }
                    masked = true;
                    // What is inside a credential-named directory is masked with it.
                    continue;
                }
                let Ok(kind) = e.file_type() else { continue };
                if kind.is_symlink() {
                    if !follow {
                        continue;
                    }
                    if let Err(why) = self.path(&rel_text, "") {
                        // A link to a credential inside the workspace is masked with its target;
                        // one that leads out is not (only the home directory is).
                        let inside = resolve_existing(&path)
                            .is_some_and(|real| real.starts_with(&self.workspace));
                        if !(self.masking && inside) {
                            return Err(format!("a link below `{root}` leads out: {why}"));
                        }
                        masked = true;
                        continue;
                    }
                    if path.is_dir() {
                        stack.push(path);
                    }
                } else if kind.is_dir() {
                    stack.push(path);
                }
            }
        }
        Ok(masked)
    }

    fn find(&self, args: &[String], cwd: &str) -> Result<(), NotSafe> {
        const FORBIDDEN: &[&str] = &[
            "-exec",
            "-execdir",
            "-ok",
            "-okdir",
            "-delete",
            "-fprint",
            "-fprint0",
            "-fprintf",
            "-fls",
            "-L",
            "-follow",
            "-files0-from",
        ];
        const FILE_VALUED: &[&str] = &["-newer", "-anewer", "-cnewer", "-samefile"];
        let mut starting = true;
        let mut i = 0;
        while i < args.len() {
            let a = args[i].as_str();
            if FORBIDDEN.contains(&a) {
                return Err(format!("`find {a}` is not a plain read"));
            }
            if starting && matches!(a, "-H" | "-P") {
                i += 1;
                continue;
            }
            if starting && (a.starts_with('-') || a == "(" || a == "!") {
                starting = false;
            }
            if starting {
                self.path(a, cwd)?;
            } else if FILE_VALUED.contains(&a) || a.starts_with("-newer") {
                if let Some(v) = args.get(i + 1) {
                    self.path(v, cwd)?;
                }
                i += 1;
            }
            i += 1;
        }
        Ok(())
    }
}

/// The value option a long option `name` (without `--`) stands for: itself when it is one, else
/// the option it is a proper prefix of (a file-valued one first), and whether it was
/// abbreviated. `(None, false)` for an option that takes no value.
fn long_option(prog: &Program, name: &str) -> (Option<&'static str>, bool) {
    if name.is_empty() {
        return (None, false);
    }
    if let Some(exact) = prog.value_long.iter().find(|v| **v == name) {
        return (Some(exact), false);
    }
    let mut longer = prog.value_long.iter().filter(|v| v.starts_with(name));
    let all: Vec<&'static str> = longer.by_ref().copied().collect();
    let pick = all
        .iter()
        .find(|v| prog.path_values.contains(v))
        .or_else(|| all.first())
        .copied();
    (pick, pick.is_some())
}

/// Whether grep's `-d`/`--directories` value `v` makes it recurse. GNU grep takes any unambiguous
/// abbreviation of `read`, `skip` and `recurse` (`-d rec`, `-drecu`), so the values that keep it
/// plain are listed (an allow-list), and everything else counts as recursing: a value grep then
/// refuses costs a question, never a credential.
fn grep_directories_recurse(v: &str) -> bool {
    let plain = |word: &str| !v.is_empty() && word.starts_with(v);
    !((plain("read") || plain("skip")) && !plain("recurse"))
}

/// Whether the `-d`/`--directories` value given to `prog` makes it recurse (grep only).
fn grep_recurses(prog: &Program, value: Option<&str>) -> bool {
    prog.name == "grep" && value.is_some_and(grep_directories_recurse)
}

/// Whether `name` is one of `options` or a prefix of one.
fn is_prefix_of(name: &str, options: &[&str]) -> bool {
    !name.is_empty() && options.iter().any(|o| o.starts_with(name))
}

/// Names that are one program under two names (`[` is `test`; some systems link `dir` to `ls`).
fn same_program(name: &str, real: &str) -> bool {
    matches!((name, real), ("rg", "ripgrep"))
}

/// What a scan of a known-safe program's options found: its operands and the options that
/// change what those operands mean.
struct Scan<'a> {
    operands: Vec<&'a str>,
    pattern_given: bool,
    sed_script: bool,
    sed_quiet: bool,
    follows_links: bool,
    recursive: bool,
    hidden: bool,
    names_only: bool,
    rg_globs: Vec<&'a str>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_names_a_program_once_and_forbidden_options_are_not_values() {
        let mut names: Vec<&str> = PROGRAMS.iter().map(|p| p.name).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len(), "a program is listed twice");
        for p in PROGRAMS {
            for c in p.forbid_short.chars() {
                assert!(!p.value_short.contains(c), "{}: -{c}", p.name);
            }
            for v in p.path_values {
                let known =
                    p.value_long.contains(v) || (v.len() == 1 && p.value_short.contains(*v));
                assert!(known, "{}: path value {v} is not a value option", p.name);
            }
        }
    }
}
