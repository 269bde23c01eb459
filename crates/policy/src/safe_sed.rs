//! The one sed script a known-safe read may run: print lines. `w` writes a file, `e` runs a
//! command, `r` reads one, `s///w` writes too; only `p`, `=` and `l` with simple addresses pass.

/// Why a script is refused.
type NotSafe = String;

/// A sed script that only prints: commands `p` (and `=`, `l`), each with at most two addresses
/// (line numbers, `$`, `/regex/`), separated by `;` or newlines. Anything else (`w`, `e`, `s`,
/// `r`, braces) is refused: `w` writes a file and `e` runs a command.
pub(crate) fn sed_print_only(script: &str) -> Result<(), NotSafe> {
    let refuse = || {
        Err(format!(
            "the sed script {script:?} does more than print lines"
        ))
    };
    for part in script.split([';', '\n']) {
        let mut rest = part.trim();
        if rest.is_empty() {
            continue;
        }
        for n in 0..2 {
            if n == 1 {
                match rest.strip_prefix(',') {
                    Some(r) => rest = r.trim_start(),
                    None => break,
                }
            }
            rest = match skip_address(rest) {
                Some(r) => r.trim_start(),
                None if n == 0 => rest,
                None => return refuse(),
            };
        }
        if !matches!(rest.trim(), "p" | "=" | "l") {
            return refuse();
        }
    }
    Ok(())
}

/// Skips one sed address (`12`, `$`, `/re/`); `None` when there is none.
fn skip_address(s: &str) -> Option<&str> {
    if let Some(r) = s.strip_prefix('$') {
        return Some(r);
    }
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 {
        return Some(&s[digits..]);
    }
    let r = s.strip_prefix('/')?;
    let mut escaped = false;
    for (i, c) in r.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == '/' {
            return Some(&r[i + 1..]);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sed_scripts_that_only_print_pass_and_others_do_not() {
        for ok in [
            "1,20p",
            "p",
            "$p",
            "/fn main/p",
            "10p;20p",
            "/a\\/b/,/c/p",
            "5,$p",
            "=",
        ] {
            assert!(sed_print_only(ok).is_ok(), "{ok}");
        }
        for bad in [
            "s/a/b/",
            "1w out",
            "e rm x",
            "p;w x",
            "1,2d",
            "{p}",
            "r /etc/passwd",
            "/x/e",
            "1,p",
            "1 W x",
        ] {
            assert!(sed_print_only(bad).is_err(), "{bad}");
        }
    }
}
