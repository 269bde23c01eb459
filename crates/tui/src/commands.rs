//! The one registry of slash commands and keys: it drives the command popup, `/help` and the key
//! hints, so what is documented is what exists.

/// What a slash command does; the app matches on this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CommandId {
    Help,
    Todo,
    Sessions,
    Resume,
    Ps,
    Kill,
    Rules,
    Artifacts,
    Memory,
    Undo,
    Rewind,
    Diff,
    Mcp,
    Skills,
    Status,
    Review,
    Init,
    Export,
    Fork,
    Model,
    Mode,
    Vim,
    Copy,
    Compact,
    Clear,
    New,
    Quit,
}

#[derive(Debug)]
pub(crate) struct SlashCommand {
    pub(crate) name: &'static str,
    pub(crate) args: &'static str,
    pub(crate) help: &'static str,
    pub(crate) id: CommandId,
}

pub(crate) static COMMANDS: &[SlashCommand] = &[
    SlashCommand {
        name: "help",
        args: "",
        help: "list commands and keys",
        id: CommandId::Help,
    },
    SlashCommand {
        name: "todo",
        args: "",
        help: "show or hide the todo checklist",
        id: CommandId::Todo,
    },
    SlashCommand {
        name: "sessions",
        args: "",
        help: "open the background sessions (output, input, kill)",
        id: CommandId::Sessions,
    },
    SlashCommand {
        name: "resume",
        args: "",
        help: "pick a saved session to resume",
        id: CommandId::Resume,
    },
    SlashCommand {
        name: "ps",
        args: "",
        help: "list background sessions in the transcript",
        id: CommandId::Ps,
    },
    SlashCommand {
        name: "kill",
        args: "ID",
        help: "kill a background session",
        id: CommandId::Kill,
    },
    SlashCommand {
        name: "rules",
        args: "",
        help: "saved \"allow always\" rules (/rules remove ID)",
        id: CommandId::Rules,
    },
    SlashCommand {
        name: "artifacts",
        args: "",
        help: "files the model saved this session (enter opens one in $PAGER)",
        id: CommandId::Artifacts,
    },
    SlashCommand {
        name: "memory",
        args: "",
        help: "memory proposals: accept or dismiss (/memory accept|dismiss ID)",
        id: CommandId::Memory,
    },
    SlashCommand {
        name: "undo",
        args: "",
        help: "restore the files the last turn changed (with a preview)",
        id: CommandId::Undo,
    },
    SlashCommand {
        name: "rewind",
        args: "",
        help: "go back to the start of an earlier turn: files and conversation",
        id: CommandId::Rewind,
    },
    SlashCommand {
        name: "diff",
        args: "",
        help: "everything this session changed, by file and hunk; revert a hunk or a file",
        id: CommandId::Diff,
    },
    SlashCommand {
        name: "mcp",
        args: "",
        help: "MCP servers: state and what each offers",
        id: CommandId::Mcp,
    },
    SlashCommand {
        name: "skills",
        args: "",
        help: "installed Agent Skills ($NAME in a message asks for one)",
        id: CommandId::Skills,
    },
    SlashCommand {
        name: "status",
        args: "",
        help: "model, window and usage, cost, mode, sandbox, MCP servers, workspace, session",
        id: CommandId::Status,
    },
    SlashCommand {
        name: "cost",
        args: "",
        help: "the same as /status",
        id: CommandId::Status,
    },
    SlashCommand {
        name: "review",
        args: "[BASE]",
        help: "review the uncommitted changes against HEAD (or BASE), read-only: findings by file and line",
        id: CommandId::Review,
    },
    SlashCommand {
        name: "init",
        args: "",
        help: "study the repository and propose an AGENTS.md (an existing one improved), as a diff to approve",
        id: CommandId::Init,
    },
    SlashCommand {
        name: "export",
        args: "[PATH]",
        help: "write this session as Markdown (or JSON, for a PATH ending .json) into the workspace",
        id: CommandId::Export,
    },
    SlashCommand {
        name: "fork",
        args: "[TURN]",
        help: "continue in a new session holding turns 1 to TURN (default: all); files untouched",
        id: CommandId::Fork,
    },
    SlashCommand {
        name: "model",
        args: "[NAME]",
        help: "pick a model (in use, recent, known), or switch to NAME (PROVIDER/NAME for another provider) from the next turn",
        id: CommandId::Model,
    },
    SlashCommand {
        name: "mode",
        args: "[MODE]",
        help: "show or set the mode: ask, auto-edit, plan (shift-tab cycles)",
        id: CommandId::Mode,
    },
    SlashCommand {
        name: "vim",
        args: "",
        help: "vim keys in the composer, on or off (normal and insert modes; [tui] vim = true starts with them)",
        id: CommandId::Vim,
    },
    SlashCommand {
        name: "compact",
        args: "[FOCUS]",
        help: "summarize the conversation now (FOCUS: what the summary must keep)",
        id: CommandId::Compact,
    },
    SlashCommand {
        name: "copy",
        args: "",
        help: "copy the last answer to the clipboard (OSC 52)",
        id: CommandId::Copy,
    },
    SlashCommand {
        name: "clear",
        args: "",
        help: "clear the screen (the conversation is kept)",
        id: CommandId::Clear,
    },
    SlashCommand {
        name: "new",
        args: "",
        help: "start a fresh conversation in this workspace (this one stays resumable)",
        id: CommandId::New,
    },
    SlashCommand {
        name: "quit",
        args: "",
        help: "leave pablo",
        id: CommandId::Quit,
    },
];

/// Commands whose name starts with `prefix` (without the slash).
pub(crate) fn matching(prefix: &str) -> Vec<&'static SlashCommand> {
    COMMANDS
        .iter()
        .filter(|c| c.name.starts_with(prefix))
        .collect()
}

pub(crate) fn find(name: &str) -> Option<&'static SlashCommand> {
    COMMANDS.iter().find(|c| c.name == name)
}

/// Keys, as shown by `/help` and the hint line.
pub(crate) static KEYS: &[(&str, &str)] = &[
    ("enter", "send"),
    ("shift-enter / alt-enter", "new line"),
    ("up / down", "history (or move between lines)"),
    ("tab", "complete /command, @path or $skill"),
    ("esc / ctrl-c", "interrupt the running turn"),
    ("ctrl-c ctrl-c", "quit (on an idle prompt)"),
    (
        "pgup / pgdn, shift-up / shift-down",
        "scroll the transcript",
    ),
    ("ctrl-o", "expand or collapse tool output and diffs"),
    ("ctrl-t", "show or hide the todo checklist"),
    ("ctrl-b", "background sessions"),
    ("ctrl-g", "write the prompt in $VISUAL / $EDITOR"),
    (
        "esc, in vim mode (/vim)",
        "insert → normal mode; in normal mode, esc interrupts as above",
    ),
    (
        "shift-tab",
        "switch mode: ask → auto-edit (edits apply) → plan (read-only)",
    ),
    (
        "f2",
        "capture the mouse (wheel scroll) or give it back to the terminal",
    ),
    (
        "y / a / n",
        "approval: allow once / allow always / reject (with a note)",
    ),
    (
        "space, [ / ]",
        "approval of an edit: toggle a hunk, previous / next hunk",
    ),
    ("f", "approval: full-screen diff"),
    ("a / d", "/memory: accept / dismiss the selected proposal"),
    (
        "space, y / n",
        "restore preview: select a file or hunk, restore / cancel",
    ),
    (
        "r",
        "/diff: revert the selected hunk or file (opens the preview)",
    ),
];
