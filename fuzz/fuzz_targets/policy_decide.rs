//! Parse-and-decide on arbitrary command text: no input may panic, abort or hang.
//!
//! Two engines judge every input: the interactive default (no allow list) and a deny-by-default
//! allow list. Besides "does not crash", the target checks one property that must hold for any
//! text: a command the allow-list engine allows has only allowed simple commands.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use pablo::config::{ConfigFile, Layers};
use pablo::policy::{CliFlags, PolicyEngine, cli};
use pablo::protocol::Decision;

fn engines() -> &'static (PolicyEngine, PolicyEngine) {
    static E: OnceLock<(PolicyEngine, PolicyEngine)> = OnceLock::new();
    E.get_or_init(|| {
        let dir = std::env::temp_dir().join("pablo-fuzz-policy");
        let ws = dir.join("ws");
        let _ = std::fs::create_dir_all(&ws);
        let ws = std::fs::canonicalize(&ws).unwrap_or(ws);
        let dirs = pablo::config::Dirs {
            config: dir.join("config"),
            data: dir.join("data"),
            state: dir.join("state"),
        };
        let text = r#"
[options.shell.commands]
default = "deny"
allow = [
  { id = "t.git-status", executable = "git", args = ["status"], match = "prefix" },
  { id = "t.wc", executable = "wc", args = [], match = "prefix" },
  { id = "t.ls", executable = "ls", args = [], match = "prefix" },
]
"#;
        let file = ConfigFile::parse(text, std::path::Path::new("fuzz.toml")).unwrap();
        let layers = Layers {
            explicit: Some(("fuzz.toml".into(), file)),
            ..Default::default()
        };
        let strict = PolicyEngine::build(&ws, &dirs, &layers, None, CliFlags::default()).unwrap();
        let open =
            PolicyEngine::build(&ws, &dirs, &Layers::default(), None, CliFlags::default()).unwrap();
        (strict, open)
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (strict, open) = engines();
    let r = cli::check(strict, text);
    if r.decision == Decision::Allow {
        assert!(r.commands.iter().all(|c| c.decision == Decision::Allow), "{text:?}");
    }
    let _ = cli::check(open, text);
});
