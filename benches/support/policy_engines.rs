//! The two policy engines the policy bench, the monorepo bench (`benches/fs_search.rs`) and the
//! fuzz target `policy_decide` judge with, built the way `pablo policy check` builds them: one
//! copy, included by each (`#[path]`), so the three stay alike. It names `pablo-policy`'s public
//! API only.

// A bench whose set-up fails should stop loudly; each target that includes this uses part of it.
#![allow(clippy::expect_used, dead_code)]

use std::path::Path;

use pablo_config::{ConfigFile, Dirs, Layers, Trust};
use pablo_policy::{CliFlags, PolicyEngine, cli};
use pablo_protocol::Decision;

/// A deny-by-default allow list of three read-only commands (the policy tests use it too).
const ALLOW_LIST: &str = include_str!("../../tests/fixtures/policy_allow_list.toml");

/// The allow-list engine and the interactive default, over a workspace `ws` under the root.
pub struct PolicyEngines {
    allow_list: PolicyEngine,
    default: PolicyEngine,
}

/// What one check decided: the whole command, and whether each simple command in it was allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PolicyCheck {
    pub allowed: bool,
    pub every_command_allowed: bool,
}

impl PolicyEngines {
    /// Both engines, with their workspace, config, data and state directories under `root`.
    pub fn new(root: &Path) -> Self {
        let ws = root.join("ws");
        std::fs::create_dir_all(&ws).expect("the bench's workspace directory");
        Self::over(&ws, root)
    }

    /// Both engines over the workspace `ws` (an existing directory), with their config, data and
    /// state directories under `root`.
    pub fn over(ws: &Path, root: &Path) -> Self {
        let ws = std::fs::canonicalize(ws).expect("the bench's workspace exists");
        let dirs = Dirs {
            config: root.join("config"),
            data: root.join("data"),
            state: root.join("state"),
        };
        let file =
            ConfigFile::parse(ALLOW_LIST, Path::new("bench.toml")).expect("the allow list parses");
        let layers = Layers {
            explicit: Some(("bench.toml".into(), file)),
            ..Default::default()
        };
        // A fresh root: nobody trusted its workspace.
        let trust = Trust::UNTRUSTED;
        Self {
            allow_list: PolicyEngine::build(&ws, &dirs, &layers, trust, None, CliFlags::default())
                .expect("the allow-list engine builds"),
            default: PolicyEngine::build(
                &ws,
                &dirs,
                &Layers::default(),
                trust,
                None,
                CliFlags::default(),
            )
            .expect("the default engine builds"),
        }
    }

    /// `command` judged by the deny-by-default allow list.
    pub fn check_allow_list(&self, command: &str) -> PolicyCheck {
        summary(&self.allow_list, command)
    }

    /// `command` judged by the interactive default.
    pub fn check_default(&self, command: &str) -> PolicyCheck {
        summary(&self.default, command)
    }
}

fn summary(engine: &PolicyEngine, command: &str) -> PolicyCheck {
    let report = cli::check(engine, command);
    PolicyCheck {
        allowed: report.decision == Decision::Allow,
        every_command_allowed: report
            .commands
            .iter()
            .all(|c| c.decision == Decision::Allow),
    }
}
