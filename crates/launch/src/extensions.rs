//! The person's custom agents and Agent Skills, found where they and the other agents keep them.
//!
//! Agents: `NAME.md` files in `$XDG_CONFIG_HOME/pablo/agents/` and, once the folder is trusted,
//! the project's `.pablo/agents/`. Skills: folders with a `SKILL.md` in `~/.agents/skills/` and
//! `~/.claude/skills/` and, once the folder is trusted, the project's `.agents/skills/` and
//! `.claude/skills/`. A repository is untrusted input: until the person trusts the folder its
//! agents and skills are not read at all, and even then a project's file that is a link is
//! skipped (it could point anywhere). Nothing here runs anything: a skill is text the model
//! reads when it asks for it.

use std::path::{Path, PathBuf};

use pablo_tools::agent_task::{AgentDefinition, MAX_AGENT_FILE_BYTES, parse_agent_file};
use pablo_tools::skill_load::{MAX_SKILL_FILE_BYTES, Skill, parse_skill};

/// Where a folder of agents or skills comes from: the person's own (links followed) or a
/// project's (links skipped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    User,
    Project,
}

/// Reads a file of at most `max` bytes; a project's file must be a plain file, not a link.
fn read_small(path: &Path, max: u64, origin: Origin) -> Result<String, String> {
    let meta = match origin {
        Origin::User => std::fs::metadata(path),
        Origin::Project => std::fs::symlink_metadata(path),
    }
    .map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a plain file (a project's agents and skills are never links)".into());
    }
    if meta.len() > max {
        return Err(format!("larger than {max} bytes"));
    }
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|_| "not UTF-8 text".into())
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    paths
}

/// The agents defined in `dir` (sorted by file name), and notes on what was skipped.
pub(crate) fn load_agents(dir: &Path, origin: Origin) -> (Vec<AgentDefinition>, Vec<String>) {
    let mut agents = Vec::new();
    let mut notes = Vec::new();
    for path in sorted_entries(dir) {
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        let text = match read_small(&path, MAX_AGENT_FILE_BYTES, origin) {
            Ok(t) => t,
            Err(why) => {
                notes.push(format!("agent {}: {why}; skipped", path.display()));
                continue;
            }
        };
        match parse_agent_file(&text, stem, &path.display().to_string()) {
            Ok((agent, more)) => {
                notes.extend(
                    more.into_iter()
                        .map(|n| format!("agent {}: {n}", path.display())),
                );
                agents.push(agent);
            }
            Err(why) => notes.push(format!("agent {}: {why}; skipped", path.display())),
        }
    }
    (agents, notes)
}

/// The skills in `dir` (one folder each, sorted), and notes on what was skipped.
pub(crate) fn load_skills(dir: &Path, origin: Origin, source: &str) -> (Vec<Skill>, Vec<String>) {
    let mut skills = Vec::new();
    let mut notes = Vec::new();
    for folder in sorted_entries(dir) {
        let is_dir = match origin {
            Origin::User => folder.is_dir(),
            Origin::Project => std::fs::symlink_metadata(&folder).is_ok_and(|m| m.is_dir()),
        };
        if !is_dir {
            continue;
        }
        let file = folder.join("SKILL.md");
        if !file.exists() {
            continue;
        }
        let dir_name = folder
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let parsed = read_small(&file, MAX_SKILL_FILE_BYTES, origin)
            .and_then(|text| parse_skill(&text, &dir_name));
        match parsed {
            Ok((name, description)) => skills.push(Skill {
                name,
                description,
                dir: folder,
                source: source.to_string(),
            }),
            Err(why) => notes.push(format!("skill {}: {why}; skipped", file.display())),
        }
    }
    (skills, notes)
}

/// Keeps the first of each name; a later one of the same name is noted and left out.
fn first_of_each<T>(
    items: Vec<T>,
    name: impl Fn(&T) -> &str,
    what: &str,
    notes: &mut Vec<String>,
) -> Vec<T> {
    let mut kept: Vec<T> = Vec::new();
    for item in items {
        if kept.iter().any(|k| name(k) == name(&item)) {
            notes.push(format!(
                "{what} {} is defined twice; the first one found is used",
                name(&item)
            ));
        } else {
            kept.push(item);
        }
    }
    kept
}

/// The person's agents, then the trusted project's (a project agent never replaces the
/// person's of the same name).
pub(crate) fn agents(
    config_dir: &Path,
    project: Option<&Path>,
) -> (Vec<AgentDefinition>, Vec<String>) {
    let (mut all, mut notes) = load_agents(&config_dir.join("agents"), Origin::User);
    if let Some(root) = project {
        let (more, n) = load_agents(&root.join(".pablo").join("agents"), Origin::Project);
        all.extend(more);
        notes.extend(n);
    }
    let all = first_of_each(all, |a| a.name.as_str(), "agent", &mut notes);
    (all, notes)
}

/// The person's skills (`~/.agents/skills`, `~/.claude/skills`), then the trusted project's.
pub(crate) fn skills(home: Option<&Path>, project: Option<&Path>) -> (Vec<Skill>, Vec<String>) {
    let mut all = Vec::new();
    let mut notes = Vec::new();
    let mut add = |dir: PathBuf, origin, source: &str| {
        let (s, n) = load_skills(&dir, origin, source);
        all.extend(s);
        notes.extend(n);
    };
    if let Some(home) = home {
        add(
            home.join(".agents/skills"),
            Origin::User,
            "~/.agents/skills",
        );
        add(
            home.join(".claude/skills"),
            Origin::User,
            "~/.claude/skills",
        );
    }
    if let Some(root) = project {
        add(
            root.join(".agents/skills"),
            Origin::Project,
            ".agents/skills",
        );
        add(
            root.join(".claude/skills"),
            Origin::Project,
            ".claude/skills",
        );
    }
    let all = first_of_each(all, |s| s.name.as_str(), "skill", &mut notes);
    (all, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn project_skills_are_read_only_when_a_project_is_given_and_links_are_skipped() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        write(
            &home.path().join(".agents/skills/tidy/SKILL.md"),
            "---\nname: tidy\ndescription: Tidy up\n---\nBody",
        );
        write(
            &project.path().join(".claude/skills/deploy/SKILL.md"),
            "---\nname: deploy\ndescription: Deploy it\n---\nBody",
        );
        #[cfg(unix)]
        std::os::unix::fs::symlink(
            home.path().join(".agents/skills/tidy"),
            project.path().join(".claude/skills/linked"),
        )
        .unwrap();
        let (untrusted, _) = skills(Some(home.path()), None);
        assert_eq!(untrusted.len(), 1);
        assert_eq!(untrusted[0].name, "tidy");
        let (trusted, notes) = skills(Some(home.path()), Some(project.path()));
        let names: Vec<&str> = trusted.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["tidy", "deploy"], "{notes:?}");
    }

    #[test]
    fn a_project_agent_never_replaces_the_persons_and_a_bad_file_is_noted() {
        let config = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        write(
            &config.path().join("agents/review.md"),
            "---\ndescription: mine\n---\nMine.",
        );
        write(
            &project.path().join(".pablo/agents/review.md"),
            "---\ndescription: theirs\n---\nTheirs.",
        );
        write(
            &project.path().join(".pablo/agents/broken.md"),
            "no front matter",
        );
        let (agents, notes) = agents(config.path(), Some(project.path()));
        assert_eq!(agents.len(), 1);
        assert_eq!(agents[0].description, "mine");
        assert_eq!(notes.len(), 2, "{notes:?}");
    }
}
