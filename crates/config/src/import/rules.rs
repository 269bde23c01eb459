//! Claude Code's vocabulary in pablo's terms: its tool names, its hook matchers (regular
//! expressions over those names) and its permission rules (`Bash(npm run test:*)`,
//! `Read(./.env)`, `WebFetch(domain:docs.rs)`). Pure functions over text, so each translation is
//! tested on its own, apart from any file.

use crate::{CommandRule, MatchKind, is_domain_name};
use pablo_core::MCP_PREFIX;
use pablo_core::{ToolMode, ToolName};

/// Claude Code's built-in tools and the pablo tools each one corresponds to (an empty list: pablo
/// has no counterpart).
const CLAUDE_TOOLS: &[(&str, &[ToolName])] = &[
    ("Bash", &[ToolName::ShellRun]),
    ("BashOutput", &[ToolName::ShellSession]),
    ("KillShell", &[ToolName::ShellSession]),
    ("KillBash", &[ToolName::ShellSession]),
    ("Read", &[ToolName::FsRead]),
    ("Write", &[ToolName::FsWrite]),
    ("Edit", &[ToolName::FsEdit]),
    ("MultiEdit", &[ToolName::FsEdit]),
    ("Glob", &[ToolName::FsList]),
    ("LS", &[ToolName::FsList]),
    ("Grep", &[ToolName::FsSearch]),
    ("WebFetch", &[ToolName::WebFetch]),
    ("TodoWrite", &[ToolName::PlanUpdate]),
    ("Task", &[ToolName::AgentTask]),
    ("Skill", &[ToolName::SkillLoad]),
    ("WebSearch", &[]),
    ("NotebookEdit", &[]),
    ("NotebookRead", &[]),
    ("ExitPlanMode", &[]),
    ("SlashCommand", &[]),
];

/// The pablo tools of the Claude Code tool `name`; `None` when Claude Code has no such tool.
pub(super) fn claude_tool(name: &str) -> Option<&'static [ToolName]> {
    CLAUDE_TOOLS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, tools)| *tools)
}

/// A Claude Code hook matcher as a pablo `matcher`, and the Claude Code tools it named that pablo
/// does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ToolMatcher {
    /// `None`: every tool (Claude Code's `*`, an empty matcher).
    pub(super) matcher: Option<String>,
    pub(super) dropped: Vec<String>,
}

/// Translates a matcher over Claude Code's tool names (`Edit|Write`, `Notebook.*`,
/// `mcp__github__.*`) into one over pablo's native names (`fs\.(edit|write)`). Each alternative
/// is tried against every Claude Code tool, matched whole as Claude Code does; MCP tools keep
/// their names in pablo (`mcp__SERVER__TOOL`), so an alternative about them is kept as written.
/// `Err` says why nothing of it maps.
pub(super) fn tool_matcher(claude: &str) -> Result<ToolMatcher, String> {
    let text = claude.trim();
    if text.is_empty() || text == "*" || text == ".*" {
        return Ok(ToolMatcher {
            matcher: None,
            dropped: Vec::new(),
        });
    }
    let mut tools: Vec<ToolName> = Vec::new();
    let mut kept: Vec<String> = Vec::new();
    let mut dropped = Vec::new();
    for alternative in top_level_alternatives(text) {
        let whole = regex::Regex::new(&format!("^(?:{alternative})$"))
            .map_err(|_| format!("the matcher {claude:?} is not a regular expression"))?;
        if alternative.starts_with(MCP_PREFIX)
            || whole.is_match(&format!("{MCP_PREFIX}server__tool"))
        {
            kept.push(alternative.to_string());
        }
        for (name, natives) in CLAUDE_TOOLS {
            if !whole.is_match(name) {
                continue;
            }
            if natives.is_empty() {
                dropped.push((*name).to_string());
            }
            for t in *natives {
                if !tools.contains(t) {
                    tools.push(*t);
                }
            }
        }
    }
    let mut parts = grouped(&tools);
    parts.extend(kept);
    if parts.is_empty() {
        return Err(if dropped.is_empty() {
            format!("the matcher {claude:?} names no Claude Code tool")
        } else {
            format!(
                "the matcher {claude:?} names only tools pablo does not have ({})",
                dropped.join(", ")
            )
        });
    }
    Ok(ToolMatcher {
        matcher: Some(parts.join("|")),
        dropped,
    })
}

/// The alternatives of `text` split at the `|` outside any group or class.
fn top_level_alternatives(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut in_class, mut escaped, mut start) = (0usize, false, false, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '[' => in_class = true,
            ']' => in_class = false,
            '(' if !in_class => depth += 1,
            ')' if !in_class => depth = depth.saturating_sub(1),
            '|' if !in_class && depth == 0 => {
                out.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(text[start..].trim());
    out.retain(|a| !a.is_empty());
    out
}

/// Native names as short alternatives: `fs.edit` and `fs.write` give `fs\.(edit|write)`.
fn grouped(tools: &[ToolName]) -> Vec<String> {
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for t in tools {
        let (family, member) = t.native().split_once('.').unwrap_or((t.native(), ""));
        match groups.iter_mut().find(|(f, _)| *f == family) {
            Some((_, members)) => members.push(member),
            None => groups.push((family, vec![member])),
        }
    }
    groups
        .into_iter()
        .map(|(family, members)| match members.as_slice() {
            [one] => format!("{family}\\.{one}"),
            many => format!("{family}\\.({})", many.join("|")),
        })
        .collect()
}

/// Which list of `permissions` an entry came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Allow,
    Ask,
    Deny,
}

impl Kind {
    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::Allow => "allow",
            Kind::Ask => "ask",
            Kind::Deny => "deny",
        }
    }

    fn mode(self) -> ToolMode {
        match self {
            Kind::Allow => ToolMode::Auto,
            Kind::Ask => ToolMode::Ask,
            Kind::Deny => ToolMode::Deny,
        }
    }
}

/// What one Claude Code permission entry becomes in a pablo config.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Effect {
    /// `[options.shell] custom_allow_patterns`: turns the question into an allow, as Claude
    /// Code's allow list does (a pablo `commands.allow` list would deny every other command).
    AllowPattern(String),
    /// `[options.shell.commands] deny`.
    DenyRule(CommandRule),
    /// `[options.shell] custom_deny_patterns` (a rule with a `*` inside).
    DenyPattern(String),
    /// `[options.shell.commands] default = "allow"` (`Bash` in the allow list).
    CommandsAllowed,
    /// `[options.tools]`: a native tool's mode.
    Tool(ToolName, ToolMode),
    /// `[options.tools]`: an MCP tool's mode, by its offered name.
    McpTool(String, ToolMode),
    /// `[mcp_servers.NAME] enabled = false`.
    McpServerOff(String),
    /// `[options.filesystem] deny_roots`.
    DenyRoot(String),
    /// `[options.fetch] allowed_domains`.
    FetchDomain(String),
    /// Nothing to write: pablo already behaves so; the text says how.
    AlreadySo(String),
}

/// Translates one entry of `permissions.allow|ask|deny`. `project` says whether it came from a
/// project's settings (where `/path` is relative to the project). `Err` says why it cannot map.
pub(super) fn permission(kind: Kind, entry: &str, project: bool) -> Result<Effect, String> {
    let entry = entry.trim();
    let (tool, spec) = match entry.split_once('(') {
        Some((tool, rest)) => {
            let spec = rest
                .strip_suffix(')')
                .ok_or_else(|| "not a rule (`Tool` or `Tool(specifier)`)".to_string())?;
            (tool.trim(), Some(spec.trim()).filter(|s| !s.is_empty()))
        }
        None => (entry, None),
    };
    if let Some(rest) = tool.strip_prefix(MCP_PREFIX) {
        return mcp_permission(kind, rest);
    }
    let Some(natives) = claude_tool(tool) else {
        return Err(format!("{tool} is not a Claude Code tool pablo knows"));
    };
    let Some(&first) = natives.first() else {
        return Err(format!("pablo has no tool like {tool}"));
    };
    match (first, spec) {
        (ToolName::ShellRun, Some(spec)) => bash_permission(kind, spec),
        (ToolName::ShellRun, None) => Ok(match kind {
            Kind::Allow => Effect::CommandsAllowed,
            _ => Effect::Tool(ToolName::ShellRun, kind.mode()),
        }),
        (ToolName::WebFetch, Some(spec)) => fetch_permission(kind, spec),
        (ToolName::WebFetch, None) if kind == Kind::Allow => Err(
            "pablo asks before every fetch outside [options.fetch] allowed_domains: list the \
             domains instead (WebFetch(domain:…))"
                .into(),
        ),
        (
            ToolName::FsRead
            | ToolName::FsWrite
            | ToolName::FsEdit
            | ToolName::FsList
            | ToolName::FsSearch,
            Some(spec),
        ) => path_permission(kind, first, spec, project),
        (_, Some(spec)) => Err(format!(
            "pablo has no per-argument rule for {tool} ({spec:?})"
        )),
        (_, None) => Ok(Effect::Tool(first, kind.mode())),
    }
}

/// `mcp__SERVER` or `mcp__SERVER__TOOL` (the part after `mcp__`).
fn mcp_permission(kind: Kind, rest: &str) -> Result<Effect, String> {
    match rest.split_once("__") {
        Some((server, tool)) if !server.is_empty() && !tool.is_empty() && tool != "*" => {
            if tool.contains('*') {
                return Err(format!(
                    "pablo sets MCP tools one by one, with no wildcard ({tool:?})"
                ));
            }
            Ok(Effect::McpTool(
                format!("mcp__{server}__{tool}"),
                kind.mode(),
            ))
        }
        _ => {
            let server = rest.trim_end_matches("__*").trim_end_matches("__");
            match kind {
                Kind::Deny => Ok(Effect::McpServerOff(server.to_string())),
                Kind::Ask => Ok(Effect::AlreadySo(
                    "MCP tools ask before each call by default".into(),
                )),
                Kind::Allow => Err(format!(
                    "pablo sets MCP tools one by one: name each tool of {server} \
                     (mcp__{server}__TOOL)"
                )),
            }
        }
    }
}

/// How a `Bash(…)` specifier matches: `cmd:*` (or `cmd *`, its one `*` at the end) the command
/// and whatever follows it after a space, a `*` elsewhere anything, else exactly.
enum Shape<'a> {
    Prefix(&'a str),
    Exact(&'a str),
    Glob(&'a str),
}

fn shape(spec: &str) -> Shape<'_> {
    if let Some(prefix) = spec
        .strip_suffix(":*")
        .or_else(|| spec.strip_suffix(" *").filter(|p| !p.contains('*')))
    {
        Shape::Prefix(prefix.trim())
    } else if spec.contains('*') {
        Shape::Glob(spec)
    } else {
        Shape::Exact(spec)
    }
}

/// A regular expression for `text` with each `*` standing for anything.
fn glob_regex(text: &str) -> String {
    text.split('*')
        .map(regex::escape)
        .collect::<Vec<_>>()
        .join(".*")
}

fn bash_permission(kind: Kind, spec: &str) -> Result<Effect, String> {
    if ["&&", "||", ";", "|", "`", "$(", "\n"]
        .iter()
        .any(|op| spec.contains(op))
    {
        return Err(
            "it names more than one command; pablo judges each simple command: write one rule \
             per command"
                .into(),
        );
    }
    match kind {
        Kind::Ask => Ok(Effect::AlreadySo(
            "commands no rule allows ask (known-safe reads excepted)".into(),
        )),
        Kind::Allow => Ok(Effect::AllowPattern(match shape(spec) {
            Shape::Prefix(p) => format!("^{}(\\s.*)?$", regex::escape(p)),
            Shape::Exact(e) => format!("^{}$", regex::escape(e)),
            Shape::Glob(g) => format!("^{}$", glob_regex(g)),
        })),
        Kind::Deny => {
            let (words, match_kind) = match shape(spec) {
                Shape::Prefix(p) => (p, MatchKind::Prefix),
                Shape::Exact(e) => (e, MatchKind::Exact),
                Shape::Glob(g) => return Ok(Effect::DenyPattern(format!("\\b{}", glob_regex(g)))),
            };
            let plain = |w: &str| !w.contains(['"', '\'', '$', '\\', '?', '[', '{', '~', '=']);
            let words: Vec<&str> = words.split_whitespace().collect();
            match words.split_first() {
                Some((program, args)) if plain(program) && args.iter().all(|a| plain(a)) => {
                    Ok(Effect::DenyRule(CommandRule {
                        id: format!("claude.deny.{}", slug(&words)),
                        executable: (*program).to_string(),
                        args: args.iter().map(|a| (*a).to_string()).collect(),
                        match_kind,
                    }))
                }
                Some(_) => Ok(Effect::DenyPattern(format!(
                    "\\b{}",
                    regex::escape(&words.join(" "))
                ))),
                None => Err("an empty command".into()),
            }
        }
    }
}

/// A rule id's tail from the command's words (`git push` → `git-push`).
fn slug(words: &[&str]) -> String {
    let text: String = words
        .join("-")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let parts: Vec<&str> = text.split('-').filter(|p| !p.is_empty()).collect();
    if parts.is_empty() {
        "command".into()
    } else {
        parts.join("-")
    }
}

fn fetch_permission(kind: Kind, spec: &str) -> Result<Effect, String> {
    let Some(domain) = spec.strip_prefix("domain:").map(str::trim) else {
        return Err(format!(
            "pablo lists fetchable sites by domain, not {spec:?}"
        ));
    };
    match kind {
        Kind::Allow if is_domain_name(domain) => Ok(Effect::FetchDomain(domain.to_string())),
        Kind::Allow => Err(format!("{domain:?} is not a domain name")),
        Kind::Ask => Ok(Effect::AlreadySo(
            "every fetch outside allowed_domains asks".into(),
        )),
        Kind::Deny => Err(
            "pablo has no per-domain deny (fetches outside allowed_domains ask; its address \
             rules hold whatever is answered)"
                .into(),
        ),
    }
}

/// `Read(./.env)`, `Edit(src/**)`: gitignore-like paths, relative to the working directory, or
/// with `/` to the settings file's project, `//` absolute, `~/` in the home directory.
fn path_permission(
    kind: Kind,
    tool: ToolName,
    spec: &str,
    project: bool,
) -> Result<Effect, String> {
    let relative = if spec.starts_with("//") || spec.starts_with('~') {
        None
    } else if let Some(rest) = spec.strip_prefix('/') {
        project.then_some(rest)
    } else {
        Some(spec.strip_prefix("./").unwrap_or(spec))
    };
    let Some(relative) = relative.filter(|r| !r.split('/').any(|p| p == "..")) else {
        return Err(format!(
            "{spec:?} is outside the workspace, where pablo's file tools never reach"
        ));
    };
    let relative = relative.trim_end_matches('/');
    if relative.is_empty() || globset::Glob::new(relative).is_err() {
        return Err(format!("{spec:?} is not a path pattern pablo can use"));
    }
    match (kind, tool) {
        (Kind::Deny, _) => Ok(Effect::DenyRoot(relative.to_string())),
        (Kind::Allow, ToolName::FsRead | ToolName::FsList | ToolName::FsSearch) => Ok(
            Effect::AlreadySo("reads inside the workspace run without asking".into()),
        ),
        (Kind::Ask, ToolName::FsWrite | ToolName::FsEdit) => Ok(Effect::AlreadySo(
            "every file change asks unless the mode is auto-edit".into(),
        )),
        (Kind::Allow, _) => Err(
            "pablo has no per-path auto-edit: auto-edit mode (shift-tab, [tui] mode) covers \
             every write root"
                .into(),
        ),
        (Kind::Ask, _) => Err("pablo has no per-path question for reads".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matcher(claude: &str) -> Option<String> {
        tool_matcher(claude).unwrap().matcher
    }

    #[test]
    fn claude_tool_names_become_pablo_native_names_grouped_by_family() {
        assert_eq!(matcher("Bash").as_deref(), Some("shell\\.run"));
        assert_eq!(matcher("Edit|Write").as_deref(), Some("fs\\.(edit|write)"));
        assert_eq!(
            matcher("Edit|MultiEdit|Write|Bash").as_deref(),
            Some("fs\\.(edit|write)|shell\\.run")
        );
        assert_eq!(
            matcher("Read|Grep|Glob").as_deref(),
            Some("fs\\.(read|search|list)")
        );
        assert_eq!(matcher("Task").as_deref(), Some("agent\\.task"));
        assert_eq!(matcher("*"), None);
        assert_eq!(matcher(""), None);
    }

    #[test]
    fn a_claude_matcher_is_matched_whole_like_claude_code_does() {
        // `Edit` alone does not take MultiEdit or NotebookEdit.
        let t = tool_matcher("Edit").unwrap();
        assert_eq!(t.matcher.as_deref(), Some("fs\\.edit"));
        assert!(t.dropped.is_empty());
        // A pattern is tried against every Claude Code tool.
        let t = tool_matcher(".*Edit").unwrap();
        assert_eq!(t.matcher.as_deref(), Some("fs\\.edit"));
        assert_eq!(t.dropped, ["NotebookEdit"]);
    }

    #[test]
    fn mcp_alternatives_keep_their_names_and_tools_pablo_lacks_are_reported() {
        let t = tool_matcher("mcp__github__.*|WebSearch|Write").unwrap();
        assert_eq!(t.matcher.as_deref(), Some("fs\\.write|mcp__github__.*"));
        assert_eq!(t.dropped, ["WebSearch"]);
        let e = tool_matcher("WebSearch").unwrap_err();
        assert!(e.contains("WebSearch"), "{e}");
        assert!(tool_matcher("Frobnicate").is_err());
        assert!(tool_matcher("(").is_err());
    }

    #[test]
    fn the_translated_matcher_takes_exactly_the_pablo_tools_it_names() {
        let m = matcher("Edit|Write").unwrap();
        let whole = regex::Regex::new(&format!("^(?:{m})$")).unwrap();
        assert!(whole.is_match("fs.edit") && whole.is_match("fs.write"));
        assert!(!whole.is_match("fs.read") && !whole.is_match("fsxedit"));
    }

    #[test]
    fn bash_allow_rules_become_allow_patterns_over_each_simple_command() {
        let Effect::AllowPattern(p) =
            permission(Kind::Allow, "Bash(npm run test:*)", false).unwrap()
        else {
            panic!("not an allow pattern")
        };
        let re = regex::Regex::new(&p).unwrap();
        assert!(re.is_match("npm run test"));
        assert!(re.is_match("npm run test -- --watch"));
        assert!(!re.is_match("npm run tests"));
        assert!(!re.is_match("xnpm run test"));
        let Effect::AllowPattern(p) = permission(Kind::Allow, "Bash(git diff)", false).unwrap()
        else {
            panic!("not an allow pattern")
        };
        assert_eq!(p, "^git diff$");
        // A trailing ` *` is the newer spelling of `:*`.
        assert_eq!(
            permission(Kind::Allow, "Bash(git log *)", false).unwrap(),
            Effect::AllowPattern("^git log(\\s.*)?$".into())
        );
        assert_eq!(
            permission(Kind::Allow, "Bash", false).unwrap(),
            Effect::CommandsAllowed
        );
    }

    #[test]
    fn bash_deny_rules_become_command_rules_and_ask_rules_need_nothing() {
        assert_eq!(
            permission(Kind::Deny, "Bash(git push:*)", false).unwrap(),
            Effect::DenyRule(CommandRule {
                id: "claude.deny.git-push".into(),
                executable: "git".into(),
                args: vec!["push".into()],
                match_kind: MatchKind::Prefix,
            })
        );
        let Effect::DenyRule(r) = permission(Kind::Deny, "Bash(rm -rf /)", false).unwrap() else {
            panic!("not a rule")
        };
        assert_eq!(r.match_kind, MatchKind::Exact);
        assert!(matches!(
            permission(Kind::Deny, "Bash(git * --force)", false).unwrap(),
            Effect::DenyPattern(_)
        ));
        assert!(matches!(
            permission(Kind::Ask, "Bash(git push:*)", false).unwrap(),
            Effect::AlreadySo(_)
        ));
        assert!(permission(Kind::Allow, "Bash(make && make install)", false).is_err());
    }

    #[test]
    fn paths_become_deny_roots_inside_the_workspace_only() {
        assert_eq!(
            permission(Kind::Deny, "Read(./.env)", false).unwrap(),
            Effect::DenyRoot(".env".into())
        );
        assert_eq!(
            permission(Kind::Deny, "Edit(secrets/**)", false).unwrap(),
            Effect::DenyRoot("secrets/**".into())
        );
        // `/x` is relative to the project only in a project's settings.
        assert_eq!(
            permission(Kind::Deny, "Read(/config/prod.json)", true).unwrap(),
            Effect::DenyRoot("config/prod.json".into())
        );
        assert!(permission(Kind::Deny, "Read(/config/prod.json)", false).is_err());
        assert!(permission(Kind::Deny, "Read(~/.ssh/**)", false).is_err());
        assert!(permission(Kind::Deny, "Read(//etc/passwd)", false).is_err());
        assert!(permission(Kind::Deny, "Read(../other/**)", false).is_err());
        assert!(permission(Kind::Allow, "Edit(src/**)", false).is_err());
    }

    #[test]
    fn tools_domains_and_mcp_entries_map_to_modes_lists_and_switches() {
        assert_eq!(
            permission(Kind::Allow, "Edit", false).unwrap(),
            Effect::Tool(ToolName::FsEdit, ToolMode::Auto)
        );
        assert_eq!(
            permission(Kind::Deny, "WebFetch", false).unwrap(),
            Effect::Tool(ToolName::WebFetch, ToolMode::Deny)
        );
        assert_eq!(
            permission(Kind::Allow, "WebFetch(domain:docs.rs)", false).unwrap(),
            Effect::FetchDomain("docs.rs".into())
        );
        assert!(permission(Kind::Deny, "WebFetch(domain:evil.example)", false).is_err());
        assert_eq!(
            permission(Kind::Allow, "mcp__github__get_issue", false).unwrap(),
            Effect::McpTool("mcp__github__get_issue".into(), ToolMode::Auto)
        );
        assert_eq!(
            permission(Kind::Deny, "mcp__jira", false).unwrap(),
            Effect::McpServerOff("jira".into())
        );
        assert!(permission(Kind::Allow, "mcp__jira", false).is_err());
        assert!(permission(Kind::Allow, "WebSearch", false).is_err());
        assert!(permission(Kind::Allow, "Teleport", false).is_err());
    }
}
