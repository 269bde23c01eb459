//! Everyday commands that read nothing secret, beyond the table of [`super::safe`]: shell builtins
//! (`cd` within the workspace, `test`, `exit`), programs that only report on the system (`which`,
//! `uname`, `date`, `whoami`, `id`, `env` and `printenv` of the clean environment), a program's
//! `--version` or `--help`, and the two script readers models use all day, `awk` and `jq`, with
//! scripts that cannot run a program, write a file or read one the command line does not name.
//!
//! Each check here proves the same three things as the table: the command writes nothing, runs
//! no other program and reaches no network. What it reads is either named (and checked as a
//! path) or, for `--version`/`--help` of any program (which may read whatever it likes, a
//! toolchain file of the repository included), left to the read-only sandbox with the
//! credentials masked: then the proof says `masked`.

use super::rules::Resolved;
use super::safe::{NotSafe, Proof, SafeReads};
use pablo_core::secrets::looks_secret;

/// Builtins of `sh` that change nothing outside the shell and read no file.
const HARMLESS_BUILTINS: &[&str] = &["test", "[", "exit", "return", ":", "true", "false"];

/// Programs that report on the system and take no path, with the options that make them change
/// it (`date -s`, `hostname NAME`).
const REPORTERS: &[&str] = &[
    "which", "uname", "date", "whoami", "id", "hostname", "nproc", "arch", "groups", "printenv",
    "env", "tty", "locale",
];

/// The awk implementations.
const AWKS: &[&str] = &["awk", "gawk", "mawk", "nawk", "busybox-awk"];

/// Whether `name` is one of the commands checked here (so that a refusal is the reason a
/// question shows, not "matches no rule").
pub(crate) fn knows(name: &str) -> bool {
    name == "cd"
        || HARMLESS_BUILTINS.contains(&name)
        || REPORTERS.contains(&name)
        || AWKS.contains(&name)
        || name == "jq"
}

/// The outcome of [`check`]: `None` when `name` is none of these commands.
pub(crate) fn check(
    safe: &SafeReads,
    resolved: &Resolved,
    name: &str,
    args: &[String],
    cwd: &str,
) -> Option<Result<Proof, NotSafe>> {
    if name == "cd" {
        return Some(cd(safe, args, cwd));
    }
    if HARMLESS_BUILTINS.contains(&name) {
        return Some(Ok(Proof::plain(name)));
    }
    if !safe.runs_from_outside(resolved) {
        return None;
    }
    if let [only] = args
        && matches!(only.as_str(), "--version" | "--help" | "-version" | "-V")
        && !REPORTERS.contains(&name)
    {
        // Any program may read anything to answer (rustup reads the repository's
        // rust-toolchain.toml): the mask is what keeps a secret out of its answer.
        return Some(if safe.masking() {
            Ok(Proof {
                name: format!("{name}.version"),
                masked: true,
            })
        } else {
            Err(format!(
                "`{name} {only}` runs `{name}`, which may read any file, and credentials cannot \
                 be masked here (no namespaces)"
            ))
        });
    }
    if REPORTERS.contains(&name) {
        return Some(reporter(safe, name, args, cwd));
    }
    if AWKS.contains(&name) {
        return Some(awk(safe, name, args, cwd));
    }
    if name == "jq" {
        return Some(jq(safe, args, cwd));
    }
    None
}

/// `cd DIR` to a directory inside the workspace (after links). `cd` alone, `cd -` and `cd ~` go
/// where pablo cannot see.
fn cd(safe: &SafeReads, args: &[String], cwd: &str) -> Result<Proof, NotSafe> {
    let dirs: Vec<&String> = args
        .iter()
        .filter(|a| !matches!(a.as_str(), "-L" | "-P" | "--"))
        .collect();
    match dirs.as_slice() {
        [dir] if dir.as_str() != "-" => {
            safe.path_inside(dir, cwd)?;
            Ok(Proof::plain("cd"))
        }
        [] => Err("`cd` alone goes to the home directory, outside the workspace".into()),
        _ => Err(format!("`cd {}` goes where pablo cannot follow", dirs[0])),
    }
}

fn reporter(safe: &SafeReads, name: &str, args: &[String], cwd: &str) -> Result<Proof, NotSafe> {
    let proof = Proof::plain(name);
    match name {
        "date" => {
            date(safe, args, cwd)?;
            Ok(proof)
        }
        "hostname" if args.iter().any(|a| !a.starts_with('-')) => {
            Err("`hostname NAME` sets the host name".into())
        }
        "hostname" if args.iter().any(|a| matches!(a.as_str(), "-F" | "--file")) => {
            Err("`hostname -F` sets the host name from a file".into())
        }
        "printenv" | "env" => {
            // Only what the clean environment holds; a secret-named variable is asked about
            // even though the environment lacks it.
            if name == "env" && !args.iter().all(|a| matches!(a.as_str(), "-0" | "--null")) {
                return Err("`env` with arguments runs or changes something".into());
            }
            if let Some(secret) = args.iter().find(|a| looks_secret(a)) {
                return Err(format!(
                    "`{name} {secret}` asks for a variable whose name looks secret"
                ));
            }
            Ok(proof)
        }
        _ => Ok(proof),
    }
}

/// `date`: prints, unless told to set the clock (`-s`, `--set`, or an operand that is not a
/// `+FORMAT`); the files it reads dates or a time from (`-f`, `-r`) are checked as paths.
fn date(safe: &SafeReads, args: &[String], cwd: &str) -> Result<(), NotSafe> {
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        i += 1;
        if let Some(long) = a.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            if name.is_empty() {
                continue;
            }
            if "set".starts_with(name) {
                return Err(format!("`date {a}` sets the system clock"));
            }
            let takes_value = [
                "date",
                "file",
                "reference",
                "iso-8601",
                "resolution",
                "rfc-3339",
            ]
            .iter()
            .any(|o| o.starts_with(name));
            let reads_file = ["file", "reference"].iter().any(|o| o.starts_with(name));
            if takes_value && inline.is_none() && !name.starts_with('i') && !name.starts_with("res")
            {
                i += 1;
            }
            if reads_file {
                let value = inline
                    .or_else(|| args.get(i - 1).cloned())
                    .unwrap_or_default();
                safe.path_inside(&value, cwd)?;
            }
            continue;
        }
        if let Some(cluster) = a.strip_prefix('-').filter(|c| !c.is_empty()) {
            for (k, c) in cluster.char_indices() {
                match c {
                    's' => return Err(format!("`date {a}` sets the system clock")),
                    'f' | 'r' | 'd' => {
                        let rest = &cluster[k + 1..];
                        let value = if rest.is_empty() {
                            i += 1;
                            args.get(i - 1).cloned().unwrap_or_default()
                        } else {
                            rest.to_string()
                        };
                        if c != 'd' {
                            safe.path_inside(&value, cwd)?;
                        }
                        break;
                    }
                    'I' => break,
                    _ => {}
                }
            }
            continue;
        }
        if !a.starts_with('+') {
            return Err(format!("`date {a}` sets the system clock"));
        }
    }
    Ok(())
}

/// awk: the program text may not run a command (`system`, `|`), read a file it names
/// (`getline`), write one (`print > f`) or load code (`@load`, `@include`); the options allowed
/// are POSIX's `-F` and `-v`; the operands are files (checked as paths) or `var=value`.
fn awk(safe: &SafeReads, name: &str, args: &[String], cwd: &str) -> Result<Proof, NotSafe> {
    let mut i = 0;
    let mut program: Option<&str> = None;
    let mut options_done = false;
    while i < args.len() {
        let a = args[i].as_str();
        i += 1;
        if !options_done && a == "--" {
            options_done = true;
            continue;
        }
        if !options_done && a.starts_with('-') && a.len() > 1 {
            match a {
                "-F" | "-v" => i += 1,
                _ if a.starts_with("-F") || a.starts_with("-v") => {}
                _ => return Err(format!("`{name} {a}` is not a plain read")),
            }
            continue;
        }
        options_done = true;
        if program.is_none() {
            program = Some(a);
            continue;
        }
        // `var=value` operands are assignments, not files.
        let assignment = a.split_once('=').is_some_and(|(n, _)| {
            !n.is_empty() && n.chars().all(|c| c.is_alphanumeric() || c == '_')
        });
        if !assignment {
            safe.path_inside(a, cwd)?;
        }
    }
    let program = program.ok_or_else(|| format!("`{name}` without a program"))?;
    awk_program_is_plain(program).map_err(|why| format!("{name}'s program {why}"))?;
    Ok(Proof::plain("awk"))
}

/// Whether an awk program only computes and prints to standard output.
fn awk_program_is_plain(program: &str) -> Result<(), String> {
    for word in [
        "system",
        "getline",
        "@load",
        "@include",
        "@namespace",
        "PROCINFO",
    ] {
        if contains_word(program, word) {
            return Err(format!("uses `{word}`"));
        }
    }
    let bytes = program.as_bytes();
    for (k, b) in bytes.iter().enumerate() {
        if *b == b'|' {
            let double = bytes.get(k + 1) == Some(&b'|') || (k > 0 && bytes[k - 1] == b'|');
            if !double {
                return Err("pipes to or from a command (`|`)".into());
            }
        }
    }
    // `print > "file"` writes a file; `>` elsewhere is a comparison. A statement that prints
    // and holds a `>` is taken to write.
    for statement in program.split([';', '\n', '{', '}']) {
        let prints = contains_word(statement, "print") || contains_word(statement, "printf");
        if prints && statement.contains('>') {
            return Err("writes to a file (`print > …`)".into());
        }
    }
    Ok(())
}

/// jq: the filter may not read the environment (`env`, `$ENV`), a module (`import`,
/// `include`, `-L`) or a file of its own choosing; files named with `--rawfile`/`--slurpfile`
/// are checked as paths, and `-f` (a filter read from a file) asks.
fn jq(safe: &SafeReads, args: &[String], cwd: &str) -> Result<Proof, NotSafe> {
    let mut i = 0;
    let mut filter: Option<&str> = None;
    let mut rest_are_args = false;
    let mut options_done = false;
    while i < args.len() {
        let a = args[i].as_str();
        i += 1;
        if !options_done && a == "--" {
            options_done = true;
            continue;
        }
        if !options_done && a.starts_with('-') && a.len() > 1 {
            match a {
                "--arg" | "--argjson" => i += 2,
                "--slurpfile" | "--rawfile" => {
                    safe.path_inside(args.get(i + 1).map(String::as_str).unwrap_or(""), cwd)?;
                    i += 2;
                }
                "--indent" => i += 1,
                "--args" | "--jsonargs" => rest_are_args = true,
                "-f" | "--from-file" | "-L" | "--library-path" => {
                    return Err(format!("`jq {a}` reads a program or modules from files"));
                }
                _ if a.starts_with("-L") => {
                    return Err(format!("`jq {a}` reads modules from a directory"));
                }
                _ if a.starts_with("--") => {}
                _ => {
                    // Short flags, grouped: none of them takes a file.
                    if a[1..].contains(['f', 'L']) {
                        return Err(format!("`jq {a}` reads a program or modules from files"));
                    }
                }
            }
            continue;
        }
        if filter.is_none() {
            filter = Some(a);
            continue;
        }
        if !rest_are_args {
            safe.path_inside(a, cwd)?;
        }
    }
    let filter = filter.unwrap_or(".");
    for word in [
        "env",
        "$ENV",
        "input_filename",
        "import",
        "include",
        "modulemeta",
        "get_search_list",
        "$__loc__",
        "$__prog_args",
    ] {
        if contains_word(filter, word) {
            return Err(format!("jq's filter uses `{word}`"));
        }
    }
    Ok(Proof::plain("jq"))
}

/// Whether `word` stands in `text` as a whole word (not inside a longer name).
fn contains_word(text: &str, word: &str) -> bool {
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word).any(|(k, _)| {
        let before = text[..k].chars().next_back();
        let after = text[k + word.len()..].chars().next();
        let first_is_name = word.chars().next().is_some_and(is_name);
        (!first_is_name || before.is_none_or(|c| !is_name(c))) && after.is_none_or(|c| !is_name(c))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn awk_programs_that_run_read_or_write_are_not_plain() {
        for ok in [
            "{print $1}",
            "NR > 2 {print}",
            "$3 > 100",
            "BEGIN{FS=\",\"} {s+=$2} END{print s}",
            "a || b {print}",
        ] {
            assert!(awk_program_is_plain(ok).is_ok(), "{ok}");
        }
        for bad in [
            "BEGIN{system(\"id\")}",
            "{print | \"sh\"}",
            "{\"date\" | getline d}",
            "{getline l < \"/etc/shadow\"}",
            "{print > \"out\"}",
            "{printf \"%s\", $0 >> \"out\"}",
            "@load \"x\"",
        ] {
            assert!(awk_program_is_plain(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn whole_words_only() {
        assert!(contains_word("env.HOME", "env"));
        assert!(contains_word("$ENV.PATH", "$ENV"));
        assert!(!contains_word(".environment", "env"));
        assert!(!contains_word("my_env", "env"));
        assert!(contains_word("x | system(y)", "system"));
    }
}
