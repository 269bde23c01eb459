//! Custom slash commands: markdown files whose text becomes a prompt. `NAME.md` in the user's
//! `$XDG_CONFIG_HOME/pablo/commands/` is `/NAME`, and so is one in the project's
//! `.pablo/commands/` once the folder is trusted (a repository must not put words in the
//! person's mouth by being opened). The first line is the description the popup and `/help`
//! show; `$ARGUMENTS` in the text is replaced by what follows the command.

use std::path::Path;

use pablo_protocol::CustomCommand;

/// Longest command file read (a prompt, not a document).
pub(crate) const MAX_COMMAND_BYTES: u64 = 64 * 1024;

/// Whether `name` can be typed as `/name`.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 40
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The commands in `dir` (sorted by name), and notes on the files that were skipped.
pub(crate) fn load_dir(dir: &Path, source: &str) -> (Vec<CustomCommand>, Vec<String>) {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (out, notes);
    };
    let mut paths: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let Some(name) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if !valid_name(name) {
            notes.push(format!(
                "{}: not a command name (letters, digits, - and _ only)",
                path.display()
            ));
            continue;
        }
        // A link could point anywhere; a command is a plain file of its folder.
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_file() => m,
            _ => continue,
        };
        if meta.len() > MAX_COMMAND_BYTES {
            notes.push(format!(
                "{}: larger than {MAX_COMMAND_BYTES} bytes, skipped",
                path.display()
            ));
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            notes.push(format!("{}: not UTF-8 text, skipped", path.display()));
            continue;
        };
        let description = text
            .lines()
            .map(|l| l.trim().trim_start_matches('#').trim())
            .find(|l| !l.is_empty())
            .unwrap_or("")
            .to_string();
        out.push(CustomCommand {
            name: name.to_string(),
            description,
            text,
            source: source.to_string(),
        });
    }
    (out, notes)
}

/// The user's commands, then the trusted project's; a project command never replaces a user's
/// command of the same name.
pub(crate) fn load(
    user_dir: &Path,
    project_dir: Option<&Path>,
) -> (Vec<CustomCommand>, Vec<String>) {
    let (mut commands, mut notes) = load_dir(user_dir, "user");
    if let Some(dir) = project_dir {
        let (project, more) = load_dir(dir, "project");
        notes.extend(more);
        for c in project {
            if commands.iter().any(|u| u.name == c.name) {
                notes.push(format!(
                    "project command /{} ignored: the user's command of that name wins",
                    c.name
                ));
            } else {
                commands.push(c);
            }
        }
    }
    (commands, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_markdown_file_becomes_a_command_with_its_first_line_as_description() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("review.md"),
            "# Review the diff\n\nReview $ARGUMENTS carefully.\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("bad name.md"), "x").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
        let (commands, notes) = load_dir(dir.path(), "user");
        assert_eq!(commands.len(), 1);
        assert_eq!(commands[0].name, "review");
        assert_eq!(commands[0].description, "Review the diff");
        assert_eq!(
            commands[0].expand("src/lib.rs"),
            "# Review the diff\n\nReview src/lib.rs carefully."
        );
        assert_eq!(notes.len(), 1, "{notes:?}");
    }

    #[test]
    fn a_project_command_never_replaces_the_users() {
        let user = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::write(user.path().join("fix.md"), "mine").unwrap();
        std::fs::write(project.path().join("fix.md"), "theirs").unwrap();
        std::fs::write(project.path().join("lint.md"), "lint it").unwrap();
        let (commands, notes) = load(user.path(), Some(project.path()));
        let names: Vec<_> = commands.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["fix", "lint"]);
        assert_eq!(commands[0].text, "mine");
        assert_eq!(notes.len(), 1);
    }
}
