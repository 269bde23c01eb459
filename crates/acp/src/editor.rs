//! The client's files and terminals, offered to the engine as its [`Editor`].
//!
//! Each method is one ACP request to the client (`fs/read_text_file`, `fs/write_text_file`,
//! `terminal/*`) for this session. Only what the client advertised in `initialize` is offered;
//! the engine asks [`Editor::capabilities`] before using any of it.

use std::path::Path;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{Client, JsonRpcRequest};
use async_trait::async_trait;

use pablo_core::editor::{
    Editor, EditorCapabilities, EditorError, TerminalCommand, TerminalExit, TerminalOutput,
};

/// One ACP session's view of the client.
pub(crate) struct ClientEditor {
    session_id: String,
    capabilities: EditorCapabilities,
    cx: ConnectionTo<Client>,
}

impl ClientEditor {
    pub(crate) fn new(
        session_id: String,
        client: &acp::ClientCapabilities,
        cx: ConnectionTo<Client>,
    ) -> Self {
        Self {
            session_id,
            capabilities: capabilities_of(client),
            cx,
        }
    }

    async fn call<R: JsonRpcRequest>(&self, request: R) -> Result<R::Response, String> {
        self.cx
            .send_request(request)
            .block_task()
            .await
            .map_err(|e| e.message)
    }

    fn terminal_error(action: &'static str) -> impl FnOnce(String) -> EditorError {
        move |message| EditorError::Terminal { action, message }
    }
}

/// What pablo may use of what the client advertised.
pub(crate) fn capabilities_of(client: &acp::ClientCapabilities) -> EditorCapabilities {
    EditorCapabilities {
        read_files: client.fs.read_text_file,
        write_files: client.fs.write_text_file,
        terminals: client.terminal,
    }
}

fn exit_of(status: acp::TerminalExitStatus) -> TerminalExit {
    TerminalExit {
        exit_code: status.exit_code.and_then(|c| i32::try_from(c).ok()),
        signal: status.signal,
    }
}

#[async_trait]
impl Editor for ClientEditor {
    fn capabilities(&self) -> EditorCapabilities {
        self.capabilities
    }

    async fn read_text(&self, path: &Path) -> Result<String, EditorError> {
        self.call(acp::ReadTextFileRequest::new(self.session_id.clone(), path))
            .await
            .map(|r| r.content)
            .map_err(|message| EditorError::Read {
                path: path.display().to_string(),
                message,
            })
    }

    async fn write_text(&self, path: &Path, text: &str) -> Result<(), EditorError> {
        self.call(acp::WriteTextFileRequest::new(
            self.session_id.clone(),
            path,
            text,
        ))
        .await
        .map(|_| ())
        .map_err(|message| EditorError::Write {
            path: path.display().to_string(),
            message,
        })
    }

    async fn create_terminal(&self, command: &TerminalCommand) -> Result<String, EditorError> {
        let request = acp::CreateTerminalRequest::new(self.session_id.clone(), &command.program)
            .args(command.args.clone())
            .cwd(command.cwd.clone())
            .output_byte_limit(command.output_byte_limit);
        self.call(request)
            .await
            .map(|r| r.terminal_id.0.to_string())
            .map_err(Self::terminal_error("start"))
    }

    async fn wait_for_exit(&self, terminal: &str) -> Result<TerminalExit, EditorError> {
        self.call(acp::WaitForTerminalExitRequest::new(
            self.session_id.clone(),
            terminal.to_string(),
        ))
        .await
        .map(|r| exit_of(r.exit_status))
        .map_err(Self::terminal_error("wait for its command"))
    }

    async fn terminal_output(&self, terminal: &str) -> Result<TerminalOutput, EditorError> {
        self.call(acp::TerminalOutputRequest::new(
            self.session_id.clone(),
            terminal.to_string(),
        ))
        .await
        .map(|r| TerminalOutput {
            output: r.output,
            truncated: r.truncated,
            exit: r.exit_status.map(exit_of),
        })
        .map_err(Self::terminal_error("report its output"))
    }

    async fn kill_terminal(&self, terminal: &str) -> Result<(), EditorError> {
        self.call(acp::KillTerminalRequest::new(
            self.session_id.clone(),
            terminal.to_string(),
        ))
        .await
        .map(|_| ())
        .map_err(Self::terminal_error("kill its command"))
    }

    async fn release_terminal(&self, terminal: &str) -> Result<(), EditorError> {
        self.call(acp::ReleaseTerminalRequest::new(
            self.session_id.clone(),
            terminal.to_string(),
        ))
        .await
        .map(|_| ())
        .map_err(Self::terminal_error("release"))
    }
}
