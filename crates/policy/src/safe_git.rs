//! Known-safe git reads: which subcommands and which of their options only read.
//!
//! git has hundreds of options and adds more each release, some of which read a file named on
//! the command line (`blame --ignore-revs-file`, `ls-files --exclude-from`, `diff --no-index`)
//! or run a program. A list of what is forbidden is never complete, so each read-only subcommand
//! lists what it accepts: flags, options that take a value (and which of those values are files,
//! checked like operands), and option prefixes whose suffix is a harmless value (`--format=`,
//! `-U5`). Anything else makes the read ask.
//!
//! What git prints is bounded too. A revision and path (`HEAD:.env`, `:.env`) is a read of that
//! path, so a credential name there is refused; an object named any other way (`git show
//! 1a2b3c`) must not be a file's content (a blob), which git itself is asked about; and the
//! credential files inside the diffs, logs and greps are left out by attributes (see
//! `process::gitconfig::prepare`). The repository's layout is checked by
//! `process::gitrepo::locate`: a read never follows a `.git` file, a `commondir` or alternates out
//! of the workspace, neither in the repository nor in any submodule git would enter
//! (`process::gitrepo::submodule_configs`).

use std::path::Path;

use super::links::canonical_beneath;
use super::rules::Resolved;
use pablo_workspace::CredentialNames;

/// Why a command is not known safe.
type NotSafe = String;

/// What the git check needs of the known-safe table (passed in, so this file does not reach
/// back into the table's).
pub(super) struct Reads<'a> {
    pub(crate) workspace: &'a Path,
    pub(crate) credentials: &'a CredentialNames,
    /// The table's check of a path a command opens (inside the workspace, not a credential).
    pub(crate) path: &'a dyn Fn(&str, &str) -> Result<(), NotSafe>,
}

impl Reads<'_> {
    fn path(&self, raw: &str, cwd: &str) -> Result<(), NotSafe> {
        (self.path)(raw, cwd)
    }
}

/// What one read-only subcommand accepts.
struct GitRead {
    name: &'static str,
    /// Options taking no value (long and short).
    flags: &'static [&'static str],
    /// Options taking a value, as the next word or after `=` (or glued, for short ones).
    values: &'static [&'static str],
    /// Of `values`, those whose value is a file that git reads.
    path_values: &'static [&'static str],
    /// Options accepted with whatever follows (`--format=`, `-U`, `--stat`).
    prefixes: &'static [&'static str],
    /// The first operand is a pattern (`grep`), unless `-e`/`-f` gave one.
    pattern: bool,
    /// Revisions may name blobs, whose content the read would print (`show`, `diff`).
    prints_objects: bool,
}

/// Options of the diff machinery that `log`, `show` and `diff` share: formatting, limiting,
/// rename detection. Not here: `--output` (writes), `--ext-diff`/`--textconv` (run programs),
/// `-a`/`--text` and `--binary` (print the credential files attributes mark binary),
/// `--submodule` (runs git in submodules with their own config), `--no-index` (reads any
/// file).
const DIFF_FLAGS: &[&str] = &[
    "-p",
    "-u",
    "--patch",
    "-s",
    "--no-patch",
    "--raw",
    "--patch-with-raw",
    "--patch-with-stat",
    "--numstat",
    "--shortstat",
    "--summary",
    "--name-only",
    "--name-status",
    "--compact-summary",
    "-z",
    "--full-index",
    "-R",
    "--no-renames",
    "--check",
    "--minimal",
    "--patience",
    "--histogram",
    "--no-color",
    "--no-prefix",
    "--default-prefix",
    "--ignore-space-at-eol",
    "-b",
    "--ignore-space-change",
    "-w",
    "--ignore-all-space",
    "--ignore-blank-lines",
    "--ignore-cr-at-eol",
    "-W",
    "--function-context",
    "--exit-code",
    "--quiet",
    "--no-textconv",
    "--no-ext-diff",
    "--find-copies-harder",
    "-D",
    "--irreversible-delete",
    "--indent-heuristic",
    "--no-indent-heuristic",
    "--no-abbrev",
    "--pickaxe-all",
    "--pickaxe-regex",
    "--no-color-moved",
    "--no-color-moved-ws",
    "--no-relative",
    "-t",
];

const DIFF_PREFIXES: &[&str] = &[
    "--stat",
    "--dirstat",
    "-U",
    "--unified=",
    "-M",
    "--find-renames",
    "-C",
    "--find-copies",
    "-B",
    "--break-rewrites",
    "-l",
    "--diff-filter=",
    "--color",
    "--word-diff",
    "--abbrev",
    "--src-prefix=",
    "--dst-prefix=",
    "--line-prefix=",
    "--diff-algorithm=",
    "--anchored=",
    "--inter-hunk-context=",
    "--relative",
    "--output-indicator-",
    "--ws-error-highlight=",
    "--find-object=",
    "-S",
    "-G",
];

const LOG_FLAGS: &[&str] = &[
    "--oneline",
    "--graph",
    "--no-decorate",
    "--all",
    "--first-parent",
    "--merges",
    "--no-merges",
    "--reverse",
    "--follow",
    "--source",
    "--parents",
    "--children",
    "--left-right",
    "--cherry-pick",
    "--cherry-mark",
    "--cherry",
    "--boundary",
    "--topo-order",
    "--date-order",
    "--author-date-order",
    "--simplify-by-decoration",
    "--full-history",
    "--dense",
    "--sparse",
    "--simplify-merges",
    "--ancestry-path",
    "--no-walk",
    "--do-walk",
    "-g",
    "--walk-reflogs",
    "--abbrev-commit",
    "--no-abbrev-commit",
    "--no-notes",
    "--show-notes-by-default",
    "--use-mailmap",
    "--no-use-mailmap",
    "--mailmap",
    "--no-mailmap",
    "--full-diff",
    "--log-size",
    "--regexp-ignore-case",
    "-i",
    "--basic-regexp",
    "-E",
    "--extended-regexp",
    "-F",
    "--fixed-strings",
    "-P",
    "--perl-regexp",
    "--invert-grep",
    "--all-match",
    "--remove-empty",
    "--show-pulls",
    "--single-worktree",
    "--ignore-missing",
    "--bisect",
    "--stdin",
    "-m",
    "-c",
    "--cc",
    "--dd",
    "--no-diff-merges",
    "--combined-all-paths",
    "--show-linear-break",
    "--no-expand-tabs",
    "--branches",
    "--tags",
    "--remotes",
    "--reflog",
    "--count",
];

const LOG_PREFIXES: &[&str] = &[
    "-n",
    "--max-count=",
    "--skip=",
    "--since=",
    "--after=",
    "--until=",
    "--before=",
    "--since-as-filter=",
    "--author=",
    "--committer=",
    "--grep=",
    "--grep-reflog=",
    "--format=",
    "--pretty",
    "--date=",
    "--decorate",
    "--decorate-refs=",
    "--decorate-refs-exclude=",
    "--min-parents=",
    "--max-parents=",
    "--branches=",
    "--tags=",
    "--remotes=",
    "--glob=",
    "--exclude=",
    "--diff-merges=",
    "--expand-tabs",
    "--notes",
    "--show-notes",
    "--encoding=",
    "--show-linear-break=",
];

const LOG_VALUES: &[&str] = &[
    "-n",
    "--max-count",
    "--skip",
    "--since",
    "--after",
    "--until",
    "--before",
    "--author",
    "--committer",
    "--grep",
    "--date",
    "-S",
    "-G",
    "-L",
    "-O",
];

const READS: &[GitRead] = &[
    GitRead {
        name: "status",
        flags: &[
            "-s",
            "--short",
            "-b",
            "--branch",
            "--long",
            "-v",
            "-vv",
            "--verbose",
            "-z",
            "--ahead-behind",
            "--no-ahead-behind",
            "--renames",
            "--no-renames",
            "--show-stash",
            "--no-column",
        ],
        values: &[],
        path_values: &[],
        prefixes: &[
            "--porcelain",
            "-u",
            "--untracked-files",
            "--ignored",
            "--ignore-submodules",
            "--column",
            "--find-renames",
        ],
        pattern: false,
        prints_objects: false,
    },
    GitRead {
        name: "log",
        flags: &[],
        values: LOG_VALUES,
        path_values: &["-O"],
        prefixes: &[],
        pattern: false,
        prints_objects: false,
    },
    GitRead {
        name: "show",
        flags: &[],
        values: LOG_VALUES,
        path_values: &["-O"],
        prefixes: &[],
        pattern: false,
        prints_objects: true,
    },
    GitRead {
        name: "diff",
        flags: &[
            "--cached",
            "--staged",
            "--merge-base",
            "--ita-invisible-in-index",
        ],
        values: &["-S", "-G", "-O"],
        path_values: &["-O"],
        prefixes: &[],
        pattern: false,
        prints_objects: true,
    },
    GitRead {
        name: "rev-parse",
        flags: &[
            "--show-toplevel",
            "--show-prefix",
            "--show-cdup",
            "--git-dir",
            "--absolute-git-dir",
            "--git-common-dir",
            "--is-inside-work-tree",
            "--is-inside-git-dir",
            "--is-bare-repository",
            "--is-shallow-repository",
            "--abbrev-ref",
            "--verify",
            "-q",
            "--quiet",
            "--symbolic",
            "--symbolic-full-name",
            "--all",
            "--branches",
            "--tags",
            "--remotes",
            "--show-object-format",
            "--show-ref-format",
            "--revs-only",
            "--no-revs",
            "--flags",
            "--no-flags",
        ],
        values: &["--default"],
        path_values: &[],
        prefixes: &["--short", "--abbrev-ref=", "--show-object-format="],
        pattern: false,
        prints_objects: false,
    },
    GitRead {
        name: "ls-files",
        flags: &[
            "-c",
            "--cached",
            "-d",
            "--deleted",
            "-o",
            "--others",
            "-i",
            "--ignored",
            "-s",
            "--stage",
            "-u",
            "--unmerged",
            "-k",
            "--killed",
            "-m",
            "--modified",
            "-z",
            "-t",
            "-v",
            "-f",
            "--full-name",
            "--error-unmatch",
            "--exclude-standard",
            "--directory",
            "--no-empty-directory",
            "--eol",
            "--deduplicate",
            "--sparse",
            "--recurse-submodules",
        ],
        values: &["-x", "--exclude"],
        path_values: &[],
        prefixes: &["--abbrev", "--format="],
        pattern: false,
        prints_objects: false,
    },
    GitRead {
        name: "grep",
        flags: &[
            "-n",
            "--line-number",
            "-i",
            "--ignore-case",
            "-I",
            "-w",
            "--word-regexp",
            "-v",
            "--invert-match",
            "-h",
            "-H",
            "--full-name",
            "-E",
            "--extended-regexp",
            "-G",
            "--basic-regexp",
            "-F",
            "--fixed-strings",
            "-P",
            "--perl-regexp",
            "-l",
            "--files-with-matches",
            "--name-only",
            "-L",
            "--files-without-match",
            "-c",
            "--count",
            "--no-color",
            "--break",
            "--heading",
            "-p",
            "--show-function",
            "-W",
            "--function-context",
            "--cached",
            "--untracked",
            "--no-exclude-standard",
            "--exclude-standard",
            "--recurse-submodules",
            "-q",
            "--quiet",
            "--all-match",
            "--and",
            "--or",
            "--not",
            "--column",
            "-o",
            "--only-matching",
            "-z",
            "--null",
            "-r",
            "--recursive",
            "--no-recursive",
            "--no-textconv",
        ],
        values: &[
            "-e",
            "-f",
            "--max-depth",
            "-A",
            "--after-context",
            "-B",
            "--before-context",
            "-C",
            "--context",
            "-m",
            "--max-count",
            "--threads",
        ],
        path_values: &["-f"],
        prefixes: &["--color"],
        pattern: true,
        prints_objects: false,
    },
    GitRead {
        name: "blame",
        flags: &[
            "-b",
            "--root",
            "--show-stats",
            "-l",
            "-t",
            "-s",
            "-e",
            "--show-email",
            "-f",
            "--show-name",
            "-n",
            "--show-number",
            "-p",
            "--porcelain",
            "--line-porcelain",
            "--incremental",
            "-w",
            "--color-lines",
            "--color-by-age",
            "--no-progress",
            "--minimal",
            "--reverse",
            "--first-parent",
            "--no-textconv",
        ],
        values: &["-L", "--since", "--ignore-rev", "--date"],
        path_values: &[],
        prefixes: &["--abbrev", "-C", "-M", "--date="],
        pattern: false,
        prints_objects: false,
    },
];

/// Options of git itself (before the subcommand) that change nothing but paging and locking.
const GLOBAL_FLAGS: &[&str] = &["--no-pager", "-P", "--no-optional-locks"];

/// Whether `git ARGS` run in `cwd` (workspace-relative) is a known-safe read. `resolved` is the
/// git that would run (asked about the type of objects a `show` or `diff` names).
pub(super) fn check(
    reads: &Reads<'_>,
    resolved: &Resolved,
    args: &[String],
    cwd: &str,
) -> Result<(), NotSafe> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if GLOBAL_FLAGS.contains(&a.as_str()) {
            i += 1;
        } else if a.starts_with('-') {
            return Err(format!("`git {a}` changes how git runs"));
        } else {
            break;
        }
    }
    let Some(sub) = args.get(i) else {
        return Err("`git` without a subcommand".into());
    };
    let rest = &args[i + 1..];
    if sub == "branch" {
        return branch(rest);
    }
    let read = READS
        .iter()
        .find(|r| r.name == sub)
        .ok_or_else(|| format!("`git {sub}` is not a known-safe read"))?;
    let repo = repository(reads, cwd)?;
    if let (Some(repo), Some(git)) = (&repo, resolved.path.as_deref()) {
        // git enters submodules by itself; each must be as contained as the repository.
        pablo_process::gitrepo::submodule_configs(Path::new(git), reads.workspace, repo)
            .map_err(|why| format!("git would leave the workspace: {why}"))?;
    }
    let operands = options(reads, read, rest, cwd)?;
    let mut objects = Vec::new();
    for (op, after_dashes) in &operands {
        if !after_dashes && let Some((_, path)) = revision_path(op) {
            // `REV:path` and `:path` read that path as it was committed or staged.
            if reads.credentials.covers(path) {
                return Err(format!("`{op}` names a credential file"));
            }
            continue;
        }
        // Revisions and paths look alike; both are checked as paths (a revision name is a
        // harmless relative path).
        reads.path(op, cwd)?;
        if !after_dashes && read.prints_objects {
            objects.push(op.to_string());
        }
    }
    if let (Some(repo), false) = (repo, objects.is_empty()) {
        blobs_refused(resolved, &repo, &objects)?;
    }
    Ok(())
}

/// The repository the read would use, refused when its layout leads outside the workspace or
/// when it is larger than the workspace.
fn repository(
    reads: &Reads<'_>,
    cwd: &str,
) -> Result<Option<pablo_process::gitrepo::GitRepo>, NotSafe> {
    use pablo_process::gitrepo;
    // The workspace is canonical; so is `cwd` once its links are followed from there.
    let located = match canonical_beneath(reads.workspace, Path::new(cwd)) {
        Some(abs) => gitrepo::locate_canonical(reads.workspace, abs),
        None => gitrepo::locate(reads.workspace, &reads.workspace.join(cwd)),
    };
    match located {
        Ok(Some(repo)) => Ok(Some(repo)),
        Ok(None) => match gitrepo::repository_above_canonical(reads.workspace) {
            Some(top) => Err(format!(
                "the repository at {} is larger than the workspace, so git would read outside it",
                top.display()
            )),
            None => Ok(None),
        },
        Err(why) => Err(format!("git would leave the workspace: {why}")),
    }
}

/// Walks the options of `read`; returns the operands, each with whether it came after `--`.
fn options<'a>(
    reads: &Reads<'_>,
    read: &GitRead,
    rest: &'a [String],
    cwd: &str,
) -> Result<Vec<(&'a str, bool)>, NotSafe> {
    let sub = read.name;
    let is_log = matches!(sub, "log" | "show" | "diff");
    let flag = |a: &str| {
        read.flags.contains(&a)
            || (is_log && (DIFF_FLAGS.contains(&a) || (sub != "diff" && LOG_FLAGS.contains(&a))))
    };
    let prefixed = |a: &str| {
        let lists: [&[&str]; 3] = [
            read.prefixes,
            if is_log { DIFF_PREFIXES } else { &[] },
            if is_log && sub != "diff" {
                LOG_PREFIXES
            } else {
                &[]
            },
        ];
        lists.iter().any(|l| l.iter().any(|p| a.starts_with(p)))
    };
    let mut operands = Vec::new();
    let mut pattern_given = false;
    let mut after_dashes = false;
    let mut k = 0;
    while k < rest.len() {
        let a = rest[k].as_str();
        k += 1;
        if after_dashes || !a.starts_with('-') || a == "-" {
            operands.push((a, after_dashes));
            continue;
        }
        if a == "--" {
            after_dashes = true;
            continue;
        }
        // Formats that verify signatures run gpg.
        if a.contains("%G") {
            return Err(format!("`git {sub} {a}` verifies signatures (runs gpg)"));
        }
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v)),
            _ => (a, None),
        };
        if read.values.contains(&name) {
            let value = match inline {
                Some(v) => v,
                None => {
                    k += 1;
                    rest.get(k - 1).map(String::as_str).unwrap_or_default()
                }
            };
            value_read(reads, read, name, value, cwd)?;
            pattern_given |= matches!(name, "-e" | "-f");
            continue;
        }
        // A short value option with its value glued on (`-n5`, `-L1,5:f`, `-Oorder`).
        if let Some(v) = read
            .values
            .iter()
            .filter(|v| v.len() == 2)
            .find(|v| a.starts_with(**v) && a.len() > 2)
        {
            value_read(reads, read, v, &a[2..], cwd)?;
            pattern_given |= matches!(*v, "-e" | "-f");
            continue;
        }
        // `-5` is `-n 5` for the commands that walk history.
        let count =
            is_log && sub != "diff" && a.len() > 1 && a[1..].bytes().all(|b| b.is_ascii_digit());
        if flag(a) || prefixed(a) || count {
            continue;
        }
        // A cluster of short flags (`-in`): every letter must be a flag of its own.
        let cluster =
            a.len() > 2 && !a.starts_with("--") && a[1..].chars().all(|c| flag(&format!("-{c}")));
        if cluster {
            continue;
        }
        return Err(format!(
            "`git {sub} {a}` is not an option pablo knows to only read"
        ));
    }
    let skip = usize::from(read.pattern && !pattern_given);
    Ok(operands.into_iter().skip(skip).collect())
}

/// Checks the value of a value option: files must be readable reads, and `-L`'s file (after the
/// last `:`) must not be a credential.
fn value_read(
    reads: &Reads<'_>,
    read: &GitRead,
    name: &str,
    value: &str,
    cwd: &str,
) -> Result<(), NotSafe> {
    if read.path_values.contains(&name) {
        reads.path(value, cwd)?;
    }
    if name == "-L"
        && let Some((_, file)) = value.rsplit_once(':')
        && !file.is_empty()
    {
        reads.path(file, cwd)?;
    }
    Ok(())
}

/// `REV:path`, `:path` or `:N:path` split into the revision and the path; `None` for other
/// operands and for `:/message` (a commit search).
fn revision_path(op: &str) -> Option<(&str, &str)> {
    let (rev, path) = op.split_once(':')?;
    if rev.is_empty() && path.starts_with('/') {
        return None;
    }
    // `:0:path`, `:1:path`, … name a stage of the index.
    let path = match (rev.is_empty(), path.split_once(':')) {
        (true, Some((stage, p))) if stage.len() == 1 && stage.as_bytes()[0].is_ascii_digit() => p,
        _ => path,
    };
    Some((rev, path.trim_start_matches("./")))
}

/// A `show` or `diff` of a blob prints a file's content without its name, which no credential
/// check could see: objects are only accepted as commits, trees and tags, and a blob only as
/// `REV:path` (checked above).
fn blobs_refused(
    resolved: &Resolved,
    repo: &pablo_process::gitrepo::GitRepo,
    objects: &[String],
) -> Result<(), NotSafe> {
    let git = resolved
        .path
        .as_deref()
        .ok_or_else(|| "git is not on the PATH".to_string())?;
    let types = pablo_process::gitrepo::object_types(Path::new(git), repo, objects)
        .ok_or_else(|| "git could not say what the revisions name".to_string())?;
    for (name, kind) in objects.iter().zip(types) {
        if kind == "blob" {
            return Err(format!(
                "`{name}` names a file's content (a blob); name it as REV:path"
            ));
        }
    }
    Ok(())
}

fn branch(args: &[String]) -> Result<(), NotSafe> {
    const FLAGS: &[&str] = &[
        "-a",
        "--all",
        "-r",
        "--remotes",
        "-l",
        "--list",
        "-v",
        "-vv",
        "--verbose",
        "-i",
        "--ignore-case",
        "--show-current",
        "--color",
        "--no-color",
        "--column",
        "--no-column",
        "--no-abbrev",
        "-q",
        "--quiet",
    ];
    const VALUED: &[&str] = &[
        "--contains",
        "--no-contains",
        "--merged",
        "--no-merged",
        "--points-at",
        "--sort",
        "--format",
    ];
    let listing = args.iter().any(|a| a == "-l" || a == "--list");
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let name = a.split('=').next().unwrap_or(a);
        if FLAGS.contains(&name) || name.starts_with("--abbrev") || name.starts_with("--column") {
            i += 1;
        } else if VALUED.contains(&name) {
            if a.contains("%G") {
                return Err("`git branch` with a signature format runs gpg".into());
            }
            i += if a.contains('=') { 1 } else { 2 };
        } else if a.starts_with('-') {
            return Err(format!("`git branch {a}` changes branches"));
        } else if listing {
            i += 1;
        } else {
            return Err(format!("`git branch {a}` creates a branch"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revision_paths_are_split_and_searches_are_not() {
        assert_eq!(revision_path("HEAD:.env"), Some(("HEAD", ".env")));
        assert_eq!(revision_path(":.env"), Some(("", ".env")));
        assert_eq!(revision_path(":0:src/.ENV"), Some(("", "src/.ENV")));
        assert_eq!(revision_path("main~2:./a/b"), Some(("main~2", "a/b")));
        assert_eq!(revision_path(":/fix the bug"), None);
        assert_eq!(revision_path("HEAD~3"), None);
    }

    #[test]
    fn no_option_is_both_a_flag_and_a_value_and_file_values_are_values() {
        for r in READS {
            for v in r.values {
                assert!(!r.flags.contains(v), "git {}: {v}", r.name);
            }
            for p in r.path_values {
                assert!(r.values.contains(p), "git {}: {p}", r.name);
            }
        }
        for forbidden in [
            "--output",
            "--ext-diff",
            "--textconv",
            "-a",
            "--text",
            "--binary",
        ] {
            assert!(!DIFF_FLAGS.contains(&forbidden), "{forbidden}");
            assert!(!LOG_FLAGS.contains(&forbidden), "{forbidden}");
            assert!(
                !DIFF_PREFIXES
                    .iter()
                    .chain(LOG_PREFIXES)
                    .any(|p| forbidden.starts_with(p)),
                "{forbidden}"
            );
        }
    }
}
