//! `skill.load`: the model loads an Agent Skill's instructions when a task calls for them.
//!
//! A skill is a folder with a `SKILL.md` (a YAML front matter with `name` and `description`,
//! then the instructions) and any other files it needs. Only the name and description of each
//! skill are in the system prompt; the body costs context only once the model asks for it. The
//! tool reads the file when called (nothing of a skill is run or expanded on the way: a script
//! it mentions runs only if the model calls `shell.run`, under the same policy as any command),
//! and it can read the skill's other files, which may lie outside the workspace — only those:
//! no link inside the skill's folder (to a file or to a folder) is followed, since a skill of a
//! repository someone else wrote could link its `reference/` to `~/.ssh`.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::agent_task::{split_front_matter, valid_name};
use super::{Tool, ToolContext, ToolResult};
use pablo_core::{ErrorCode, ToolFailure, ToolKind, ToolName};
use pablo_protocol::Preview;

/// Largest SKILL.md or skill file returned.
pub const MAX_SKILL_FILE_BYTES: u64 = 256 * 1024;
/// Most files listed of one skill.
const MAX_LISTED_FILES: usize = 200;

/// One installed skill.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// Its folder.
    pub dir: PathBuf,
    /// Where it was found (`~/.agents/skills`, the project's `.claude/skills`…).
    pub source: String,
}

#[derive(Debug, Deserialize)]
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
}

/// Reads the front matter of a SKILL.md in a folder named `dir_name`: the skill's name (the
/// folder's when the front matter has none) and its description.
pub fn parse_skill(text: &str, dir_name: &str) -> Result<(String, String), String> {
    let (yaml, _) = split_front_matter(text)
        .ok_or("SKILL.md has no front matter (a `---` block with name and description)")?;
    let front: FrontMatter =
        serde_yaml_ng::from_str(yaml).map_err(|e| format!("its front matter is not valid: {e}"))?;
    let name = front.name.unwrap_or_else(|| dir_name.to_string());
    if !valid_name(&name) {
        return Err(format!(
            "{name:?} is not a skill name (lowercase letters, digits, - and _)"
        ));
    }
    let description = front
        .description
        .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|d| !d.is_empty())
        .ok_or("it has no description, which is what the model picks skills by")?;
    if description.chars().count() > 1024 {
        return Err("its description is over 1024 characters".into());
    }
    Ok((name, description))
}

/// The skills part of the system prompt (empty without skills): each name and description,
/// sorted, so the prompt stays the same from turn to turn.
pub fn prompt_section(skills: &[Skill]) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let mut sorted: Vec<&Skill> = skills.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let mut s = String::from(
        "\n# Skills\n\nInstructions for particular kinds of task, loaded on demand. When a task \
         matches a skill's description, call load_skill with its name before you start, and \
         follow what it says. A skill's scripts run only through shell_run, like any command.\n\n",
    );
    for k in sorted {
        s.push_str(&format!("- {}: {}\n", k.name, k.description));
    }
    s
}

/// What `skill.load` returns: the skill's SKILL.md and its other files, or one of those files.
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
pub struct SkillResult {
    pub(crate) name: String,
    /// The skill's folder (with SKILL.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) dir: Option<String>,
    /// SKILL.md, whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) instructions: Option<String>,
    /// The skill's other files, relative to its folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) files: Option<Vec<String>>,
    /// The file asked for with `file`, and its text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) text: Option<String>,
}

/// `load skill NAME`.
pub(crate) fn show_call(args: super::wording::Args<'_>) -> pablo_protocol::describe::CallView {
    let name = args.text("name").unwrap_or_default();
    let title = match args.text("file") {
        Some(f) => format!("Load skill {name}: {f}"),
        None => format!("Load skill {name}"),
    };
    super::wording::call(args, title, Some(String::new()))
}

/// `loaded NAME (N files beside it)`.
pub(crate) fn show_result(data: &Value) -> Option<pablo_protocol::describe::ResultView> {
    let r: SkillResult = super::wording::typed(data)?;
    let line = match (&r.file, &r.files) {
        (Some(f), _) => format!("read {f} of {}", r.name),
        (None, Some(files)) => format!("loaded {} ({} other files)", r.name, files.len()),
        (None, None) => format!("loaded {}", r.name),
    };
    Some(pablo_protocol::describe::ResultView::line(line))
}

/// The skills `text` asks for with `$NAME` (a word of its own), as a note for the model; `None`
/// when it names none.
pub fn mention_note(text: &str, skills: &[Skill]) -> Option<String> {
    let mut named: Vec<&str> = Vec::new();
    let bytes = text.as_bytes();
    for (i, _) in text.match_indices('$') {
        if i > 0 && !bytes[i - 1].is_ascii_whitespace() && !b"([{\"'".contains(&bytes[i - 1]) {
            continue;
        }
        let rest = &text[i + 1..];
        let end = rest
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_'))
            .unwrap_or(rest.len());
        let word = rest[..end].trim_end_matches(['-', '_']);
        if let Some(s) = skills.iter().find(|s| s.name == word)
            && !named.contains(&s.name.as_str())
        {
            named.push(&s.name);
        }
    }
    if named.is_empty() {
        return None;
    }
    Some(format!(
        "[The person asks for the skill{} {}: load {} with load_skill before you start.]",
        if named.len() == 1 { "" } else { "s" },
        named.join(", "),
        if named.len() == 1 { "it" } else { "them" }
    ))
}

#[derive(Debug, Deserialize)]
struct Args {
    name: String,
    #[serde(default)]
    file: Option<String>,
}

/// The tool the model is offered.
pub(crate) struct SkillLoad {
    skills: Arc<Vec<Skill>>,
}

impl SkillLoad {
    pub(crate) fn new(skills: Arc<Vec<Skill>>) -> Self {
        Self { skills }
    }

    fn find(&self, name: &str) -> Result<&Skill, ToolFailure> {
        self.skills.iter().find(|s| s.name == name).ok_or_else(|| {
            let known: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
            ToolFailure::new(
                ErrorCode::UnknownSkill,
                format!(
                    "there is no skill named {name:?}; installed: {}",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            )
        })
    }
}

/// A relative path that stays inside its folder: no `..`, no root.
fn inside(rel: &str) -> Option<PathBuf> {
    let p = Path::new(rel);
    p.components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        .then(|| p.to_path_buf())
}

/// Reads `rel` (checked by [`inside`]) of the skill folder `dir`: a plain file of at most
/// [`MAX_SKILL_FILE_BYTES`], reached without following any link below `dir`. Each component is
/// opened with `O_NOFOLLOW` from the one before it (a directory handle, not a path), so a link
/// anywhere on the way — a linked subfolder as much as a linked file — is refused, and what is
/// checked is what is read.
fn read_plain(dir: &Path, rel: &Path) -> Result<String, ToolFailure> {
    use rustix::fs::{Mode, OFlags};
    let shown = dir.join(rel);
    let failure = |code, why: String| ToolFailure::new(code, format!("{}: {why}", shown.display()));
    let link_refused = || {
        failure(
            ErrorCode::PathRefused,
            "not a plain file of the skill (a link or a folder)".into(),
        )
    };
    let open_error = |e: rustix::io::Errno| {
        if e == rustix::io::Errno::LOOP || e == rustix::io::Errno::NOTDIR {
            link_refused()
        } else {
            failure(ErrorCode::NotFound, std::io::Error::from(e).to_string())
        }
    };
    let mut current = rustix::fs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(open_error)?;
    let names: Vec<&std::ffi::OsStr> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    let Some((last, folders)) = names.split_last() else {
        return Err(link_refused());
    };
    for name in folders {
        current = rustix::fs::openat(
            &current,
            *name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(open_error)?;
    }
    let fd = rustix::fs::openat(
        &current,
        *last,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(open_error)?;
    let file = std::fs::File::from(fd);
    let meta = file
        .metadata()
        .map_err(|e| failure(ErrorCode::NotFound, e.to_string()))?;
    if !meta.is_file() {
        return Err(link_refused());
    }
    if meta.len() > MAX_SKILL_FILE_BYTES {
        return Err(failure(
            ErrorCode::FileTooLarge,
            format!("over {MAX_SKILL_FILE_BYTES} bytes"),
        ));
    }
    let mut bytes = Vec::new();
    use std::io::Read;
    file.take(MAX_SKILL_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| failure(ErrorCode::NotFound, e.to_string()))?;
    if bytes.len() as u64 > MAX_SKILL_FILE_BYTES {
        return Err(failure(
            ErrorCode::FileTooLarge,
            format!("over {MAX_SKILL_FILE_BYTES} bytes"),
        ));
    }
    String::from_utf8(bytes).map_err(|_| failure(ErrorCode::NotUtf8, "not UTF-8 text".into()))
}

/// The skill's other files, relative to its folder, sorted (links and deep trees left out).
fn list_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), 0)];
    while let Some((d, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(t) = e.file_type() else { continue };
            let path = e.path();
            if t.is_dir() && depth < 4 {
                stack.push((path, depth + 1));
            } else if t.is_file()
                && let Ok(rel) = path.strip_prefix(dir)
                && rel != Path::new("SKILL.md")
            {
                out.push(rel.to_string_lossy().into_owned());
            }
            if out.len() >= MAX_LISTED_FILES {
                out.sort();
                return out;
            }
        }
    }
    out.sort();
    out
}

#[async_trait]
impl Tool for SkillLoad {
    fn name(&self) -> &'static str {
        ToolName::SkillLoad.native()
    }

    fn provider_name(&self) -> &'static str {
        ToolName::SkillLoad.provider()
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn description(&self) -> String {
        "Load a skill listed in the system prompt: returns its SKILL.md instructions and the \
         names of its other files; with `file`, returns that file of the skill instead."
            .into()
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "description": "The skill's name."},
                "file": {"type": "string", "minLength": 1,
                    "description": "A file of the skill, relative to its folder (as listed)."}
            },
            "required": ["name"],
            "additionalProperties": false
        })
    }

    async fn preview(&self, args: &Value, _ctx: &ToolContext) -> Result<Preview, ToolFailure> {
        let a: Args = super::parse_args(self.name(), args)?;
        self.find(&a.name)?;
        if let Some(f) = &a.file
            && inside(f).is_none()
        {
            return Err(ToolFailure::new(
                ErrorCode::PathRefused,
                format!("{f}: a skill's file is named relative to its folder, without .."),
            ));
        }
        Ok(Preview::Internal)
    }

    async fn commit_result(
        &self,
        args: &Value,
        _preview: &Preview,
        _ctx: &ToolContext,
    ) -> Result<ToolResult, ToolFailure> {
        let a: Args = super::parse_args(self.name(), args)?;
        let skill = self.find(&a.name)?.clone();
        let file = a.file.clone();
        super::blocking(move || -> Result<SkillResult, ToolFailure> {
            let mut r = SkillResult {
                name: skill.name.clone(),
                dir: None,
                instructions: None,
                files: None,
                file: None,
                text: None,
            };
            match file {
                Some(f) => {
                    let rel = inside(&f).ok_or_else(|| {
                        ToolFailure::new(ErrorCode::PathRefused, format!("{f}: outside the skill"))
                    })?;
                    r.text = Some(read_plain(&skill.dir, &rel)?);
                    r.file = Some(f);
                }
                None => {
                    r.instructions = Some(read_plain(&skill.dir, Path::new("SKILL.md"))?);
                    r.dir = Some(skill.dir.display().to_string());
                    r.files = Some(list_files(&skill.dir));
                }
            }
            Ok(r)
        })
        .await
        .map(ToolResult::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skill_reads_its_name_and_folded_description_and_refuses_a_bad_name() {
        let (n, d) = parse_skill(
            "---\nname: pdf-tools\ndescription: >\n  Fill PDF forms.\n  Use for PDFs.\n---\nBody",
            "pdf-tools",
        )
        .unwrap();
        assert_eq!(
            (n.as_str(), d.as_str()),
            ("pdf-tools", "Fill PDF forms. Use for PDFs.")
        );
        assert!(parse_skill("---\nname: Bad Name\ndescription: x\n---\n", "d").is_err());
        assert!(parse_skill("no front matter", "d").is_err());
    }

    #[test]
    fn the_prompt_section_lists_names_and_descriptions_sorted_and_no_body() {
        let mk = |n: &str| Skill {
            name: n.into(),
            description: format!("about {n}"),
            dir: PathBuf::from("/x"),
            source: "user".into(),
        };
        let s = prompt_section(&[mk("zeta"), mk("alpha")]);
        assert!(s.find("- alpha: about alpha").unwrap() < s.find("- zeta: about zeta").unwrap());
        assert_eq!(prompt_section(&[]), "");
    }

    #[test]
    fn a_dollar_name_of_an_installed_skill_asks_for_it_and_other_dollars_do_not() {
        let skills = [Skill {
            name: "tidy".into(),
            description: "d".into(),
            dir: PathBuf::from("/x"),
            source: "user".into(),
        }];
        let note = mention_note("please $tidy the code, costs $5", &skills).unwrap();
        assert!(note.contains("skill tidy:"), "{note}");
        assert_eq!(mention_note("echo a$tidy $tidyness $other", &skills), None);
    }

    #[test]
    fn a_file_outside_the_skill_folder_is_refused() {
        assert!(inside("../etc/passwd").is_none());
        assert!(inside("/etc/passwd").is_none());
        assert_eq!(
            inside("scripts/run.sh"),
            Some(PathBuf::from("scripts/run.sh"))
        );
    }
}
