//! Keeps the secrets of pablo's own environment out of reach of the commands it runs.
//!
//! A command never gets a provider key in its environment (`env`), but it runs as the same user
//! as pablo and can read pablo's: `tr '\0' '\n' < /proc/$PPID/environ`. Marking the process
//! non-dumpable stops other users and unprivileged readers, but not root (the tests run as root,
//! so do many containers), because `/proc/PID/environ` reads the process's original environment
//! block, which stays in memory whatever `unsetenv` does. So [`protect_process`], called first
//! thing in `main` while the process has a single thread, moves every secret-looking value into
//! `core::secrets` (where the provider finds its key) and overwrites its bytes in that block with
//! NULs, through `/proc/self/mem` (no `unsafe`: the kernel does the write). The variable then reads
//! as set to the empty string, in pablo and in `/proc`.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;

use super::env::looks_secret;
use pablo_core::secrets;

/// What [`protect_process`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Protection {
    /// The variables whose values were moved out of the environment block.
    pub held: Vec<String>,
    /// Why the block could not be wiped (the values are still redacted from tool output).
    pub problem: Option<String>,
}

/// Moves secret-looking variables out of the environment block and marks the process
/// non-dumpable. Call before any thread starts: nothing may read the environment meanwhile.
pub fn protect_process() -> Protection {
    let mut held = Vec::new();
    for (name, value) in std::env::vars_os() {
        let (Ok(name), Ok(value)) = (name.into_string(), value.into_string()) else {
            continue;
        };
        if !value.is_empty() && looks_secret(&name) {
            secrets::hold_var(&name, &value);
            held.push(name);
        }
    }
    let mut problem = wipe(&held).err();
    if let Err(e) =
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
        && problem.is_none()
    {
        problem = Some(format!("cannot mark the process non-dumpable: {e}"));
    }
    Protection { held, problem }
}

/// Overwrites the values of `names` in the environment block that `/proc/self/environ` shows.
pub fn wipe(names: &[String]) -> Result<(), String> {
    if names.is_empty() {
        return Ok(());
    }
    let block = std::fs::read("/proc/self/environ")
        .map_err(|e| format!("cannot read /proc/self/environ: {e}"))?;
    let (start, end) = env_block().ok_or("cannot find the environment block in /proc/self/stat")?;
    // The addresses must describe exactly the bytes read, or nothing is written.
    if end.checked_sub(start) != Some(block.len() as u64) {
        return Err(
            "the environment block in /proc/self/stat does not match /proc/self/environ".into(),
        );
    }
    let mem = OpenOptions::new()
        .write(true)
        .open("/proc/self/mem")
        .map_err(|e| format!("cannot open /proc/self/mem: {e}"))?;
    let mut offset = 0u64;
    for entry in block.split(|b| *b == 0) {
        if let Some(eq) = entry.iter().position(|b| *b == b'=') {
            let value_len = entry.len() - eq - 1;
            if value_len > 0 && names.iter().any(|n| n.as_bytes() == &entry[..eq]) {
                mem.write_all_at(&vec![0u8; value_len], start + offset + eq as u64 + 1)
                    .map_err(|e| format!("cannot overwrite the environment block: {e}"))?;
            }
        }
        offset += entry.len() as u64 + 1;
    }
    // Proof, not hope: the block as the kernel shows it no longer holds a value.
    let after = std::fs::read("/proc/self/environ")
        .map_err(|e| format!("cannot read /proc/self/environ: {e}"))?;
    let left = after.split(|b| *b == 0).any(|entry| {
        entry.iter().position(|b| *b == b'=').is_some_and(|eq| {
            eq + 1 < entry.len() && names.iter().any(|n| n.as_bytes() == &entry[..eq])
        })
    });
    if left {
        return Err("the environment block still holds a secret value".into());
    }
    Ok(())
}

/// `env_start` and `env_end`, fields 50 and 51 of `/proc/self/stat` (proc(5)). Fields are counted
/// after the command name, which is in parentheses and may hold spaces.
fn env_block() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    // `rest` starts at field 3 (the state).
    let mut fields = rest.split_whitespace().skip(50 - 3);
    let start = fields.next()?.parse().ok()?;
    let end = fields.next()?.parse().ok()?;
    Some((start, end))
}
