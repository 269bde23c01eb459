//! The report of a finished foreground command, wherever it ran: pablo's own process group
//! (`shell.run`) or an editor's terminal (`shell_terminal`). One type, so that both give the model
//! the same fields in the same order.

use serde::{Deserialize, Serialize};

use pablo_core::ErrorCode;

/// How a foreground command ended, and its output as the model reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CommandReport {
    pub(crate) exit_code: Option<i32>,
    pub(crate) signal: Option<String>,
    pub(crate) timed_out: bool,
    /// The middle of the output was cut (the whole of it is in `artifact`).
    pub(crate) truncated: bool,
    pub(crate) duration_ms: u64,
    pub(crate) total_bytes: u64,
    pub(crate) output: String,
    /// The file that holds the whole output, when it was kept.
    pub(crate) artifact: Option<String>,
    /// The editor terminal the command ran in (over ACP).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) terminal: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) artifact_error: Option<String>,
    /// The editor dropped the start of the output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) editor_truncated: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) note: Option<String>,
    /// The sandbox profile the command ran in (`read-only`, `workspace-write`, `off`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) sandbox: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) sandbox_denied: Option<SandboxDenied>,
    /// The hosts the sandbox's network proxy refused the command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) network_refused: Option<NetworkRefused>,
    /// What the command could not see: it ran with the credentials masked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) masked: Option<Box<Masked>>,
    /// Said of a second run without the sandbox, when the report had no note of its own (it then
    /// comes last).
    #[serde(
        rename = "note",
        skip_serializing_if = "Option::is_none",
        skip_deserializing
    )]
    pub(crate) rerun_note: Option<String>,
}

/// What a command run with the credentials masked could not see, told in its result so the
/// model is not puzzled by an empty `.env` or a missing `~/.ssh`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Masked {
    /// The workspace's credential files (and directories), which read as empty.
    pub(crate) files: Vec<String>,
    pub(crate) note: String,
}

impl Masked {
    pub(crate) fn of(plan: &pablo_process::mask::MaskPlan) -> Self {
        const LISTED: usize = 50;
        let mut files: Vec<String> = plan.workspace_hidden.iter().take(LISTED).cloned().collect();
        if plan.workspace_hidden.len() > LISTED {
            files.push(format!(
                "… and {} more",
                plan.workspace_hidden.len() - LISTED
            ));
        }
        Self {
            files,
            note: format!(
                "this read ran with credential files hidden: the ones listed read as empty, and so \
                 did {} of the home directory outside the workspace and the toolchains, and \
                 pablo's own directories",
                match plan.home_hidden {
                    1 => "1 entry".to_string(),
                    n => format!("{n} entries"),
                }
            ),
        }
    }
}

/// What the sandbox refused, when a command's failure looks like its doing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxDenied {
    /// Always [`ErrorCode::SandboxDenied`].
    pub(crate) code: ErrorCode,
    /// `file` or `network`.
    pub(crate) kind: String,
    /// The path that was refused, when the output names one.
    pub(crate) path: Option<String>,
    /// The question for the person: what was refused, and that a run without the sandbox could
    /// do it.
    pub message: String,
}

/// The hosts a command asked the sandbox's network proxy for and was refused: named so that
/// the model and the person can see what to add to `[options.shell] network_allow`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct NetworkRefused {
    /// Always [`ErrorCode::NetworkHostRefused`].
    pub(crate) code: ErrorCode,
    /// Each refused host once, in the order the command asked.
    pub(crate) hosts: Vec<String>,
    pub(crate) message: String,
}

impl NetworkRefused {
    /// `None` when nothing was refused.
    pub(crate) fn of(hosts: &[String]) -> Option<Self> {
        (!hosts.is_empty()).then(|| Self {
            code: ErrorCode::NetworkHostRefused,
            hosts: hosts.to_vec(),
            message: format!(
                "the sandbox's network proxy refused {}: not in [options.shell] network_allow \
                 (a host must be listed by the name the command used; an address only when the \
                 address itself is listed). The person can add it to their own config",
                hosts.join(", ")
            ),
        })
    }
}
