//! Every stable error code pablo gives, in one enum. A code is the part of a refusal that
//! programs read (the model, `pablo run --json`, editors over ACP, scripts); its snake_case
//! spelling is a contract, and docs/errors.md lists each with its meaning (a test keeps the two
//! the same). Codes are compared as this type, never as text.

/// Declares [`ErrorCode`] from one table of variants and their spellings: the enum, its
/// spelling (`as_str`, usable in constants) and the list of all codes.
macro_rules! error_codes {
    ($( $(#[$attr:meta])* $variant:ident = $text:literal, )*) => {
        /// A stable snake_case error code (`revision_mismatch`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ErrorCode {
            $( $(#[$attr])* $variant, )*
        }

        impl ErrorCode {
            /// Every code, in the order of the table.
            pub const ALL: &'static [ErrorCode] = &[ $( ErrorCode::$variant, )* ];

            /// The code as programs read it (`revision_mismatch`).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( ErrorCode::$variant => $text, )*
                }
            }
        }
    };
}

error_codes! {
    // Arguments and the catalog.
    InvalidArguments = "invalid_arguments",
    ArgumentsTooLarge = "arguments_too_large",
    InvalidSchema = "invalid_schema",
    UnknownTool = "unknown_tool",
    InvalidPreview = "invalid_preview",
    HunksUnsupported = "hunks_unsupported",
    InvalidHunks = "invalid_hunks",
    NoHunksAccepted = "no_hunks_accepted",
    ResultTooLarge = "result_too_large",
    Internal = "internal",
    // Decisions and the turn.
    Denied = "denied",
    HookBlocked = "hook_blocked",
    ApprovalRequired = "approval_required",
    Rejected = "rejected",
    PlanMode = "plan_mode",
    Cancelled = "cancelled",
    Terminated = "terminated",
    Interrupted = "interrupted",
    NotRun = "not_run",
    ToolCallBudgetExhausted = "tool_call_budget_exhausted",
    ModelCallBudgetExhausted = "model_call_budget_exhausted",
    CostBudgetExhausted = "cost_budget_exhausted",
    DeadlineExceeded = "deadline_exceeded",
    EventLimitExceeded = "event_limit_exceeded",
    ContextTooLarge = "context_too_large",
    TurnRunning = "turn_running",
    AgentStopped = "agent_stopped",
    ModelSwitchUnavailable = "model_switch_unavailable",
    // Subagents and skills.
    UnknownAgent = "unknown_agent",
    SubagentFailed = "subagent_failed",
    NotReadOnly = "not_read_only",
    UnknownSkill = "unknown_skill",
    // The workspace and files.
    PathRefused = "path_refused",
    FileRefused = "file_refused",
    NotFound = "not_found",
    IsADirectory = "is_a_directory",
    NotADirectory = "not_a_directory",
    SpecialFile = "special_file",
    BinaryContent = "binary_content",
    FileTooLarge = "file_too_large",
    NotUtf8 = "not_utf8",
    AlreadyExists = "already_exists",
    InvalidOffset = "invalid_offset",
    NoMatch = "no_match",
    AmbiguousMatch = "ambiguous_match",
    RevisionMismatch = "revision_mismatch",
    CheckpointFailed = "checkpoint_failed",
    IoError = "io_error",
    WorkspaceUnavailable = "workspace_unavailable",
    // Commands and background sessions.
    SpawnFailed = "spawn_failed",
    ToolCleanupFailed = "tool_cleanup_failed",
    UnknownSession = "unknown_session",
    SessionNotRunning = "session_not_running",
    NotAPty = "not_a_pty",
    SessionInputFailed = "session_input_failed",
    TooManySessions = "too_many_sessions",
    SandboxFailed = "sandbox_failed",
    SandboxDenied = "sandbox_denied",
    NetworkAllowUnsupported = "network_allow_unsupported",
    NetworkHostRefused = "network_host_refused",
    WorkspaceTooLarge = "workspace_too_large",
    InvalidLauncher = "invalid_launcher",
    // The rest of the catalog.
    InvalidUrl = "invalid_url",
    SchemeRefused = "scheme_refused",
    UserinfoRefused = "userinfo_refused",
    PortRefused = "port_refused",
    HostRefused = "host_refused",
    AddressRefused = "address_refused",
    DnsFailed = "dns_failed",
    NetworkBudgetExhausted = "network_budget_exhausted",
    FetchTimeout = "fetch_timeout",
    FetchFailed = "fetch_failed",
    TooManyRedirects = "too_many_redirects",
    RedirectRefused = "redirect_refused",
    RedirectToOtherHost = "redirect_to_other_host",
    RedirectInvalid = "redirect_invalid",
    UnsupportedContent = "unsupported_content",
    UnsupportedFormat = "unsupported_format",
    TooManyRows = "too_many_rows",
    TooManyColumns = "too_many_columns",
    CsvInvalid = "csv_invalid",
    CsvEmpty = "csv_empty",
    InvalidName = "invalid_name",
    InvalidJson = "invalid_json",
    ArtifactTooLarge = "artifact_too_large",
    MemoryLimit = "memory_limit",
    MemoryNotFound = "memory_not_found",
    MemoryNotPending = "memory_not_pending",
    MemoryDisabled = "memory_disabled",
    // MCP servers.
    McpUnknownServer = "mcp_unknown_server",
    McpUnavailable = "mcp_unavailable",
    McpUnknownPrompt = "mcp_unknown_prompt",
    McpPromptArguments = "mcp_prompt_arguments",
    McpError = "mcp_error",
    McpTimeout = "mcp_timeout",
    McpRequiredServerFailed = "mcp_required_server_failed",
    McpServerUnsupported = "mcp_server_unsupported",
    McpNeedsLogin = "mcp_needs_login",
    McpLoginFailed = "mcp_login_failed",
    McpLoginUnsupported = "mcp_login_unsupported",
    // Language servers.
    LspUnavailable = "lsp_unavailable",
    // Models and providers.
    ModelUnreachable = "model_unreachable",
    ModelContextTooLong = "model_context_too_long",
    ModelRateLimited = "model_rate_limited",
    ModelAuthFailed = "model_auth_failed",
    ModelHttpError = "model_http_error",
    ModelError = "model_error",
    ModelStreamCut = "model_stream_cut",
    ModelIdleTimeout = "model_idle_timeout",
    ModelStreamStalled = "model_stream_stalled",
    ModelMalformedResponse = "model_malformed_response",
    ModelOutputTooLarge = "model_output_too_large",
    ModelConfig = "model_config",
    ModelPriceUnknown = "model_price_unknown",
    ScriptInvalid = "script_invalid",
    // Attached images.
    ImageNotAcceptedByModel = "image_not_accepted_by_model",
    ImageUnrecognized = "image_unrecognized",
    ImageTooLarge = "image_too_large",
    ImageRefused = "image_refused",
    // Policy and config.
    PolicyStoreFailed = "policy_store_failed",
    PolicyStoreInWorkspace = "policy_store_in_workspace",
    PolicyUnreadable = "policy_unreadable",
    PolicyInvalid = "policy_invalid",
    RuleNotFound = "rule_not_found",
    ConfigUnreadable = "config_unreadable",
    ConfigInvalid = "config_invalid",
    ConfigExists = "config_exists",
    ImportSourceMissing = "import_source_missing",
    ImportSourceInvalid = "import_source_invalid",
    StateDirUnavailable = "state_dir_unavailable",
    SetupFailed = "setup_failed",
    UsageError = "usage_error",
    DemoSetupFailed = "demo_setup_failed",
    // Sessions and journals.
    SessionNotFound = "session_not_found",
    SessionIdAmbiguous = "session_id_ambiguous",
    SessionInvalidId = "session_invalid_id",
    SessionNoneForWorkspace = "session_none_for_workspace",
    SessionIo = "session_io",
    SessionHeaderInvalid = "session_header_invalid",
    SessionFormatUnsupported = "session_format_unsupported",
    SessionExists = "session_exists",
    SessionBusy = "session_busy",
    SessionDirsUnavailable = "session_dirs_unavailable",
    SessionImportInvalid = "session_import_invalid",
    SessionTurnOutOfRange = "session_turn_out_of_range",
    // Git worktrees (`--worktree`, `pablo worktree`, `isolation: worktree`).
    NotAGitRepository = "not_a_git_repository",
    WorktreeNameInvalid = "worktree_name_invalid",
    WorktreeNotFound = "worktree_not_found",
    WorktreeDirty = "worktree_dirty",
    WorktreePathTaken = "worktree_path_taken",
    WorktreeFailed = "worktree_failed",
    // Checkpoints, undo and rewind.
    NothingToUndo = "nothing_to_undo",
    NotEnoughTurns = "not_enough_turns",
    NoSuchTurn = "no_such_turn",
    NotChanged = "not_changed",
    RestorePlanUnknown = "restore_plan_unknown",
    CheckpointsUnavailable = "checkpoints_unavailable",
    RewindUnavailable = "rewind_unavailable",
    NotInPlan = "not_in_plan",
    Conflict = "conflict",
    Unrestorable = "unrestorable",
    Deselected = "deselected",
    RestoreFailed = "restore_failed",
    ChangedSincePreview = "changed_since_preview",
    // Editors (ACP) and the terminal.
    EditorReadFailed = "editor_read_failed",
    EditorWriteFailed = "editor_write_failed",
    EditorTerminalFailed = "editor_terminal_failed",
    CwdNotAbsolute = "cwd_not_absolute",
    PromptRunning = "prompt_running",
    SessionOpen = "session_open",
    WorkspaceMismatch = "workspace_mismatch",
    ConnectionFailed = "connection_failed",
    UnknownMode = "unknown_mode",
    TerminalFailed = "terminal_failed",
    NotATerminal = "not_a_terminal",
    EditorNotSet = "editor_not_set",
    EditorDraftFile = "editor_draft_file",
    EditorSpawnFailed = "editor_spawn_failed",
    EditorFailed = "editor_failed",
    PagerSpawnFailed = "pager_spawn_failed",
    PagerFailed = "pager_failed",
}

impl ErrorCode {
    /// The code spelled `text`, when there is one.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|c| c.as_str() == text)
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<ErrorCode> for String {
    fn from(code: ErrorCode) -> Self {
        code.as_str().to_string()
    }
}

impl serde::Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for ErrorCode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown error code {text:?}")))
    }
}

/// Codes travel as text in protocol data (`ToolErrorBody::code`, `Event::Error`): they compare
/// with the enum directly.
impl PartialEq<ErrorCode> for str {
    fn eq(&self, code: &ErrorCode) -> bool {
        self == code.as_str()
    }
}

impl PartialEq<ErrorCode> for String {
    fn eq(&self, code: &ErrorCode) -> bool {
        self == code.as_str()
    }
}

impl PartialEq<ErrorCode> for &str {
    fn eq(&self, code: &ErrorCode) -> bool {
        *self == code.as_str()
    }
}

impl PartialEq<&str> for ErrorCode {
    fn eq(&self, text: &&str) -> bool {
        self.as_str() == *text
    }
}

impl PartialEq<str> for ErrorCode {
    fn eq(&self, text: &str) -> bool {
        self.as_str() == text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_snake_case_and_reads_back_as_itself() {
        let mut seen = std::collections::HashSet::new();
        for &code in ErrorCode::ALL {
            assert!(seen.insert(code.as_str()), "{code:?} is spelled twice");
            let text = code.as_str();
            assert!(
                !text.is_empty()
                    && text
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
                    && !text.starts_with('_')
                    && !text.ends_with('_')
                    && !text.contains("__"),
                "{code:?} is spelled {text:?}"
            );
            assert_eq!(ErrorCode::parse(text), Some(code));
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{text}\""));
            assert_eq!(serde_json::from_str::<ErrorCode>(&json).unwrap(), code);
        }
        assert_eq!(ErrorCode::NotUtf8.as_str(), "not_utf8");
        assert_eq!(ErrorCode::NotAPty.as_str(), "not_a_pty");
        assert_eq!(ErrorCode::IsADirectory.as_str(), "is_a_directory");
        assert_eq!(ErrorCode::ModelHttpError.as_str(), "model_http_error");
    }
}
