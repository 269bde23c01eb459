//! What "allow always" saves for a shell command: a rule a person can read and that matches the
//! next time — a prefix of the program and its subcommand, the module an interpreter runs, or,
//! where the arguments are themselves a program, the exact command.

use super::rules::Resolved;
use super::store::SavedKind;
use pablo_config::MatchKind;

/// Interpreters and wrappers: "allow always" saves only the exact command for them, since their
/// arguments are programs.
fn exact_only(name: &str) -> bool {
    matches!(
        name,
        "sh" | "bash"
            | "dash"
            | "zsh"
            | "ksh"
            | "fish"
            | "csh"
            | "tcsh"
            | "node"
            | "nodejs"
            | "deno"
            | "bun"
            | "ruby"
            | "perl"
            | "php"
            | "lua"
            | "env"
            | "sudo"
            | "doas"
            | "su"
            | "xargs"
            | "eval"
            | "exec"
            | "awk"
            | "gawk"
            | "sed"
            | "find"
            | "nice"
            | "timeout"
            | "nohup"
            | "time"
            | "command"
    ) || name.starts_with("python")
        || name.starts_with("pypy")
}

fn subcommand_like(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':'))
}

fn basename(key: &str) -> &str {
    key.rsplit('/').next().unwrap_or(key)
}

/// The rule "allow always" saves for a command: a prefix of the executable and its leading
/// subcommand word (`cargo test`), a module run by an interpreter (`python3 -m unittest`), or the
/// exact command for interpreters, wrappers, `git -c` and programs in the workspace. A program
/// the person named by its bare name is saved by that name, which means whatever the commands'
/// `PATH` finds (as a configured rule does): the rule reads as it was typed.
pub(crate) fn derive_rule(resolved: &Resolved, word: &str, args: &[String]) -> SavedKind {
    let name = basename(&resolved.key);
    let git_config = name == "git" && args.first().is_some_and(|a| a == "-c");
    let interpreter_module = (name.starts_with("python") || name.starts_with("pypy"))
        && args.first().is_some_and(|a| a == "-m")
        && args.get(1).is_some_and(|m| subcommand_like(m));
    let exact = exact_only(name) || git_config || resolved.in_workspace;
    let (args, match_kind) = match args.first() {
        _ if interpreter_module && !resolved.in_workspace => {
            (args[..2].to_vec(), MatchKind::Prefix)
        }
        Some(first) if !exact && subcommand_like(first) => (vec![first.clone()], MatchKind::Prefix),
        _ => (args.to_vec(), MatchKind::Exact),
    };
    let bare = !word.contains('/') && resolved.path.is_some() && !resolved.in_workspace;
    SavedKind::Command {
        executable: if bare {
            word.to_string()
        } else {
            resolved.key.clone()
        },
        args,
        match_kind,
    }
}
