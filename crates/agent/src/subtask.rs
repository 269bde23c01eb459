//! `/review` and `/init`: a turn in a subcontext of its own.
//!
//! The subtask's conversation sits beside the session's over the same [`super::shared`]
//! part (its approvals, events and journal are the session's), with a fresh history, so the model
//! comes to the repository without the earlier conversation, and a narrower catalog: the reading
//! tools and `shell.run` (each command judged by the policy as always; known-safe git reads run
//! unasked), plus the two file-changing tools for `/init`, whose change is previewed and decided
//! like any edit. It is run through the same [`super::task::start`] as every turn. When it ends,
//! its messages join the session's conversation after what came before, exactly as a journal
//! replays them, so the person can follow up ("fix the second finding") and a resumed session
//! sees the same conversation.
//!
//! The subtask's conversation is built as a subagent's is ([`super::subagent::child`]) for a
//! built-in agent definition, placed inline: it is the person's turn, so its events are not
//! wrapped as a subagent's and its messages join the session's. Both ends work on whole
//! conversations (one is made from the other, then joins it), so they take them whole.

use super::call::subagents::Parent;
use super::conversation::Conversation;
use super::subagent::{self, Placement};
use pablo_core::ToolName;
use pablo_protocol::{SUBTASK_PROMPT_STARTS, Subtask};
use pablo_tools::agent_task::AgentDefinition;

/// The tools a review may call: it reads and runs read-only commands, and changes nothing.
const REVIEW_TOOLS: &[ToolName] = &[
    ToolName::FsRead,
    ToolName::FsList,
    ToolName::FsSearch,
    ToolName::ShellRun,
];

/// `/init` reads like a review and proposes one file.
const INIT_TOOLS: &[ToolName] = &[
    ToolName::FsRead,
    ToolName::FsList,
    ToolName::FsSearch,
    ToolName::ShellRun,
    ToolName::FsWrite,
    ToolName::FsEdit,
];

/// Why a subtask cannot start (said to the person; nothing ran).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Refused(pub(super) String);

/// A base a review may be asked against: a revision name, never an option or a shell word.
fn valid_base(base: &str) -> bool {
    !base.is_empty()
        && !base.starts_with('-')
        && base.len() <= 200
        && base
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/~^@{}-".contains(c))
}

/// The prompt of `task`: what to do, with what, and the shape of the answer.
pub(super) fn prompt(task: &Subtask) -> Result<String, Refused> {
    match task {
        Subtask::Review { base } => {
            let base = match base.as_deref() {
                None => "HEAD".to_string(),
                Some(b) if valid_base(b) => b.to_string(),
                Some(b) => {
                    return Err(Refused(format!(
                        "/review {b}: not a revision name (letters, digits and ._/~^@{{}}- only, \
                         not starting with -)"
                    )));
                }
            };
            Ok(format!(
                "{}review the uncommitted changes of this repository's working tree \
                 against {base}.\n\n\
                 See them with shell.run: `git diff {base}` for changed files and `git status \
                 --short` for new ones (read new files with fs.read). Read the code around each \
                 change with fs.read or fs.search where you need its context. Change nothing: \
                 this is a review, not a fix.\n\n\
                 Answer with the findings only, most severe first, one per line, each as\n\
                 `SEVERITY path:line: what is wrong and why`\n\
                 with SEVERITY one of high, medium, low and the line in the new version of the \
                 file. Report bugs, security problems, missing error handling and missing tests; \
                 not style. If there is nothing to report, say `no findings`.",
                SUBTASK_PROMPT_STARTS[0]
            ))
        }
        Subtask::Init => Ok(format!(
            "{}write the AGENTS.md of this repository: what a coding agent \
             needs to know to work in it.\n\n\
             Study the repository first: fs.list and fs.read for its layout, manifests, build \
             files, CI configuration and README; fs.search for its conventions. Then run the \
             build, test and lint commands you find with shell.run, and list only those that \
             worked (say which you could not check and why).\n\n\
             AGENTS.md holds: the commands (build, test, lint, format), each as you ran it; the \
             layout (the main directories and what each holds); the conventions the code \
             follows (naming, errors, tests, style). Short and exact, no generic advice.\n\n\
             If AGENTS.md exists, read it and improve it with fs.edit: keep what is still \
             right, correct what is wrong, add what is missing; do not replace it wholesale. \
             Otherwise create it with fs.write. Change no other file. Your change is shown to \
             the person as a diff and applied only as they decide.\n\n\
             End with two or three lines on what you wrote.",
            SUBTASK_PROMPT_STARTS[1]
        )),
    }
}

/// The built-in agent `task` runs as.
fn agent_of(task: &Subtask) -> AgentDefinition {
    match task {
        Subtask::Review { .. } => AgentDefinition::built_in(
            "review",
            "Reviews the working tree's changes; changes nothing.",
            REVIEW_TOOLS,
        ),
        Subtask::Init => AgentDefinition::built_in(
            "init",
            "Writes the repository's AGENTS.md, as an edit that is asked.",
            INIT_TOOLS,
        ),
    }
}

/// The conversation `task` runs in, beside `session`'s: placed inline, it has the session's
/// model, limits, system prompt, budget and totals, a fresh history and the task's tools.
pub(super) fn subcontext(session: &Conversation, task: &Subtask) -> Conversation {
    let parent = Parent {
        session_id: &session.session_id,
        model: &session.model.client,
        system_prompt: &session.system_prompt,
        catalog: &session.catalog,
        limits: &session.limits,
        budget: &session.spend.budget,
        outlet: &session.outlet,
        slots: &session.subagent_slots,
    };
    let mut sub = subagent::child(&parent, &agent_of(task), Placement::Inline);
    // The same budget, and totals that stay totals.
    sub.spend = session.spend.clone();
    sub.last_turn_mode = session.last_turn_mode;
    sub
}

/// What `sub` did joins `session`: its messages after the session's (as the journal replays
/// them), and what it spent. The window figure the front-ends show was the subtask's own small
/// request; from here it is the session's again, estimated as after a compaction (no call
/// follows until the next turn).
pub(super) fn absorb(session: &mut Conversation, sub: Conversation) {
    session.messages.extend(sub.messages);
    session.spend = sub.spend;
    session.last_turn_mode = sub.last_turn_mode;
    session.outlet.emit(session.estimated_usage());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_review_base_that_could_be_an_option_or_a_shell_word_is_refused() {
        for bad in [
            "--output=/tmp/x",
            "-p",
            "main; rm -rf /",
            "a b",
            "$(id)",
            "",
        ] {
            let task = Subtask::Review {
                base: Some(bad.to_string()),
            };
            assert!(prompt(&task).is_err(), "{bad:?}");
        }
        for good in ["main", "origin/main", "HEAD~2", "v1.0.0", "abc123^", "@{u}"] {
            let task = Subtask::Review {
                base: Some(good.to_string()),
            };
            let text = prompt(&task).unwrap();
            assert!(text.contains(&format!("git diff {good}")), "{text}");
        }
    }

    #[test]
    fn a_review_without_a_base_is_against_head() {
        let text = prompt(&Subtask::Review { base: None }).unwrap();
        assert!(text.contains("git diff HEAD"), "{text}");
    }
}
