//! The names MCP tools are offered under: `mcp__SERVER__TOOL`, in the characters every provider
//! accepts (`[A-Za-z0-9_-]`), at most 64 bytes. A server's tool names are its own business (dots,
//! slashes, spaces, any length), so they are sanitised here; when two real names sanitise to the
//! same offered name, or a name must be cut, a short hash of the real name keeps them apart. The
//! real name is what goes on the wire.

use sha2::{Digest, Sha256};

/// The longest name providers accept for a function.
pub(crate) const MAX_NAME: usize = 64;

/// The prefix every MCP tool name starts with.
pub(crate) const PREFIX: &str = pablo_core::MCP_PREFIX;

fn sanitise(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            out.push(c);
        } else {
            out.push('_');
        }
    }
    out
}

fn short_hash(s: &str) -> String {
    hex::encode(&Sha256::digest(s.as_bytes())[..3])
}

/// The offered name of `tool` of `server`, without regard to collisions.
pub(crate) fn offered_name(server: &str, tool: &str) -> String {
    let base = format!("{PREFIX}{}__{}", sanitise(server), sanitise(tool));
    if base.len() <= MAX_NAME {
        base
    } else {
        with_hash(&base, tool)
    }
}

/// `base` cut to leave room for `_` and a 6-digit hash of `real`, then the hash.
fn with_hash(base: &str, real: &str) -> String {
    let hash = short_hash(real);
    let keep = MAX_NAME - hash.len() - 1;
    // Every character is ASCII after sanitising, so byte positions are character positions.
    let cut = &base[..base.len().min(keep)];
    format!("{cut}_{hash}")
}

/// Offered names for every real tool name of one server, in the order given: unique among
/// themselves and against `taken` (other servers' names). A name that would collide gets the
/// hash of its real name.
pub(crate) fn assign(server: &str, tools: &[String], taken: &[String]) -> Vec<String> {
    let mut used: Vec<String> = taken.to_vec();
    let mut out = Vec::with_capacity(tools.len());
    for (i, tool) in tools.iter().enumerate() {
        let plain = offered_name(server, tool);
        let clashes = used.contains(&plain)
            || tools
                .iter()
                .enumerate()
                .any(|(j, other)| j != i && offered_name(server, other) == plain);
        let mut name = if clashes {
            with_hash(&plain, tool)
        } else {
            plain
        };
        // A hash that itself collides (vanishingly rare) gets the index too.
        if used.contains(&name) {
            name = with_hash(&name, &format!("{tool}#{i}"));
        }
        used.push(name.clone());
        out.push(name);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_are_prefixed_and_kept() {
        assert_eq!(offered_name("everything", "echo"), "mcp__everything__echo");
        assert_eq!(
            offered_name("fs", "read_text_file"),
            "mcp__fs__read_text_file"
        );
    }

    #[test]
    fn characters_providers_reject_become_underscores() {
        assert_eq!(
            offered_name("git", "repo.log/all"),
            "mcp__git__repo_log_all"
        );
    }

    #[test]
    fn a_long_name_is_cut_to_64_bytes_with_a_hash() {
        let long = "a".repeat(100);
        let name = offered_name("server", &long);
        assert_eq!(name.len(), MAX_NAME);
        assert!(name.starts_with("mcp__server__aaaa"));
        assert_ne!(name, offered_name("server", &"a".repeat(99)));
    }

    #[test]
    fn colliding_names_get_distinct_hash_suffixes() {
        let tools = vec!["read.file".to_string(), "read_file".to_string()];
        let names = assign("fs", &tools, &[]);
        assert_ne!(names[0], names[1]);
        assert!(names.iter().all(|n| n.len() <= MAX_NAME));
        assert!(names[0].starts_with("mcp__fs__read_file_"));
        let again = assign("fs", &tools, &[]);
        assert_eq!(names, again, "the same listing gets the same names");
    }

    #[test]
    fn a_name_taken_by_another_server_is_not_reused() {
        let taken = vec!["mcp__a__b__c".to_string()];
        // server "a" tool "b__c" and server "a__b" tool "c" cannot both be mcp__a__b__c.
        let names = assign("a", &["b__c".to_string()], &taken);
        assert_ne!(names[0], taken[0]);
    }
}
