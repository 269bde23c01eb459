//! Parse-and-decide on arbitrary command text: no input may panic, abort or hang.
//!
//! Two engines judge every input: the interactive default (no allow list) and a deny-by-default
//! allow list. Besides "does not crash", the target checks one property that must hold for any
//! text: a command the allow-list engine allows has only allowed simple commands.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
#[path = "../../benches/support/policy_engines.rs"]
mod policy_engines;
use policy_engines::PolicyEngines;

fn engines() -> &'static PolicyEngines {
    static E: OnceLock<PolicyEngines> = OnceLock::new();
    E.get_or_init(|| PolicyEngines::new(&std::env::temp_dir().join("pablo-fuzz-policy")))
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let engines = engines();
    let r = engines.check_allow_list(text);
    if r.allowed {
        assert!(r.every_command_allowed, "{text:?}");
    }
    let _ = engines.check_default(text);
});
