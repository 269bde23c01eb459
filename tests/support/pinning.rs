//! Pinned output made comparable from run to run: what differs (temp paths, ports, durations,
//! start times, ids) becomes a placeholder in the text itself, so every other byte stays pinned.

use std::path::Path;

/// Replaces what differs between runs with placeholders, in the text itself.
pub fn normalize(text: &str, dirs: &[(&Path, &str)]) -> String {
    let mut out = text.to_string();
    for (dir, name) in dirs {
        out = out.replace(&dir.display().to_string(), name);
    }
    let rules: &[(&str, &str)] = &[
        (r#""duration_ms":\d+"#, r#""duration_ms":"[ms]""#),
        (r#""started_ms":\d+"#, r#""started_ms":"[ms]""#),
        (r"(\d+\.\d+\.\d+\.\d+):\d+", "$1:[port]"),
        (
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            "[uuid]",
        ),
        (r"after \d+ ms", "after [n] ms"),
        (r"shell-([A-Za-z0-9_-]+)-\d+\.log", "shell-$1-[nanos].log"),
        // The size of a command's result counts its duration's digits and the temp paths.
        (
            r"Its result serialized to \d+ bytes",
            "Its result serialized to [n] bytes",
        ),
    ];
    for (pattern, with) in rules {
        out = regex::Regex::new(pattern)
            .unwrap()
            .replace_all(&out, *with)
            .into_owned();
    }
    out
}
