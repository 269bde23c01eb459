//! The steps of starting a command, named: where in the child a start failed travels to the
//! parent as one byte ([`Stage`]) and is told to the person in words.

/// Where in the child a step failed, reported to the parent with the errno.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::FromRepr, strum::EnumIter)]
#[repr(u8)]
pub enum Stage {
    Signals = 1,
    ParentGone,
    Session,
    Terminal,
    ProcessGroup,
    MountPrivate,
    MountBind,
    MountReadOnly,
    Loopback,
    Fork,
    Stdio,
    Chdir,
    NoNewPrivs,
    Landlock,
    Seccomp,
    Exec,
    Dumpable,
    Supervise,
    MountMask,
    ProxyPort,
}

impl Stage {
    pub fn describe(self) -> &'static str {
        match self {
            Stage::Signals => "resetting signal handlers",
            Stage::ParentGone => "pablo ended while the command was starting",
            Stage::Session => "starting a new session",
            Stage::Terminal => "taking the terminal",
            Stage::ProcessGroup => "starting a new process group",
            Stage::MountPrivate => "making the mount namespace private",
            Stage::MountBind => "protecting a path (bind mount)",
            Stage::MountReadOnly => "protecting a path (read-only remount)",
            Stage::Loopback => "bringing up the loopback interface",
            Stage::Fork => "starting the command under its namespace's init",
            Stage::Stdio => "connecting stdin, stdout and stderr",
            Stage::Chdir => "changing to the working directory",
            Stage::NoNewPrivs => "setting no_new_privs",
            Stage::Landlock => "applying the Landlock ruleset",
            Stage::Seccomp => "applying the seccomp filter",
            Stage::Exec => "executing the launcher",
            Stage::Dumpable => "letting pablo write the user namespace's id maps",
            Stage::Supervise => "making init the subreaper of the command",
            Stage::MountMask => "hiding a credential (mask mount)",
            Stage::ProxyPort => "opening the network proxy's port in the command's namespace",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stage_round_trips_through_its_byte() {
        use strum::IntoEnumIterator;
        for s in Stage::iter() {
            assert_eq!(Stage::from_repr(s as u8), Some(s));
            assert!(!s.describe().is_empty());
        }
        assert_eq!(Stage::from_repr(0), None);
    }
}
