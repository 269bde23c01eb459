//! The sandbox as the front-ends and `pablo sandbox` see it: the status line's word on it, and
//! one command run under it with this process's terminal.

use super::{Launch, LaunchError};
use pablo_policy::PolicyEngine;

/// The status line's word on the sandbox: the profile approved commands get, or why there is
/// none (said once, here and in the startup warning).
pub fn sandbox_status(policy: &PolicyEngine) -> String {
    use pablo_protocol::SandboxProfile;
    let support = pablo_process::support();
    let settings = policy.sandbox_settings();
    if !support.landlock() {
        return "no sandbox: the kernel lacks Landlock".into();
    }
    let mut s = match settings.profile {
        SandboxProfile::Off => return "no sandbox".into(),
        SandboxProfile::ReadOnly => "read-only sandbox".to_string(),
        SandboxProfile::WorkspaceWrite if settings.network => "sandboxed + network".to_string(),
        SandboxProfile::WorkspaceWrite => "sandboxed".to_string(),
    };
    if !support.namespaces() {
        s.push_str(" (no namespaces)");
    }
    s
}

/// `pablo sandbox`: runs `command` (a program and its arguments) in the workspace under
/// `profile` (the configured one when `None`), with the environment a command of pablo's gets
/// and this process's stdin, stdout and stderr. Returns the exit status to exit with (128 + the
/// signal number when a signal ended it) and the hosts the sandbox's network proxy refused
/// (`[options.shell] network_allow`).
pub fn run_sandboxed(
    launch: &Launch,
    policy: &PolicyEngine,
    profile: Option<pablo_protocol::SandboxProfile>,
    network: bool,
    command: &[String],
) -> Result<(u8, Vec<String>), LaunchError> {
    let mut settings = policy.sandbox_settings().clone();
    settings.temp_dir = Some(std::env::temp_dir());
    let mut choice = settings.default_choice();
    if let Some(p) = profile {
        choice.profile = p;
    }
    choice.network = network && choice.profile == pablo_protocol::SandboxProfile::WorkspaceWrite;
    let sandbox = settings.sandbox(&choice, &launch.workspace);
    let env = policy
        .command_env()
        .for_command(&Default::default(), false)
        .map_err(|e| LaunchError::Setup(e.to_string()))?;
    let info = pablo_process::run_inherited(command, &launch.workspace, &env, &sandbox);
    // The empty `.git`/`.pablo` the sandbox made to cover go with the run (a session's go with
    // its host).
    pablo_process::shield::remove_placeholders(&launch.workspace);
    let (info, refused) = info.map_err(|e| {
        use pablo_core::Coded;
        LaunchError::Sandbox {
            code: e.code(),
            message: e.to_string(),
        }
    })?;
    let status = match (info.code, info.signal) {
        (Some(c), _) => c.clamp(0, 255) as u8,
        (None, Some(s)) => (128 + s).clamp(0, 255) as u8,
        (None, None) => 1,
    };
    Ok((status, refused))
}
