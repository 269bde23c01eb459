//! The release link of the `pablo` binary lays out the functions that run before the first frame
//! (and then through a first turn) next to each other, so that start-up maps a megabyte or two of
//! code instead of pages from all over the file (resident memory and page faults at the idle
//! prompt; BENCHMARKS.md, issue 29).
//!
//! The list is `scripts/startup-order.txt`, mangled names one per line, handed to lld as
//! `--symbol-ordering-file`; `scripts/startup_order.py` regenerates it from a run of the release
//! binary under callgrind. A name the build no longer has is skipped silently, so a stale list
//! costs locality, never the build. `PABLO_LINK_MAP=FILE` also writes lld's map of the link to FILE
//! (what the script reads); `PABLO_NO_STARTUP_ORDER=1` links without the list, to compare.
//!
//! Only in release builds for x86_64 Linux (where the list was made), and only when the linker
//! takes the flags: rust-lld is that target's default since Rust 1.90, but a distribution's rustc,
//! a configured linker or the flags may choose GNU ld, which knows no `--symbol-ordering-file`.
//! So the script first links an empty program with the same rustc, flags and linker, and with
//! the two options; if that fails, the binary is linked without them.
//!
//! The same release link also packs the relative relocations of the position-independent binary
//! (`-z pack-relative-relocs`, the DT_RELR format): 0.9 MB of `.rela.dyn` becomes a few
//! kilobytes, and the executable keeps its address-space randomisation (BENCHMARKS.md, issue 46
//! item 7). The dynamic loader must read that format (glibc 2.36 and later; an older one refuses to
//! start the program, naming the missing `GLIBC_ABI_DT_RELR`), so the probe program is linked with
//! it and also run: on a machine whose C library cannot start it, or when building for another
//! machine, pablo is linked without it, one megabyte larger.

// A build script speaks to cargo on stdout.
#![allow(clippy::print_stdout)]

use std::env;
use std::path::Path;
use std::process::{Command, Stdio};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=scripts/startup-order.txt");
    println!("cargo:rerun-if-env-changed=PABLO_LINK_MAP");
    println!("cargo:rerun-if-env-changed=PABLO_NO_STARTUP_ORDER");
    let var = |name: &str| env::var(name).unwrap_or_default();
    // `pablo --version` names the optimisation level it was built with: `cargo bench` writes its
    // opt-level 3 build to the same `target/release/pablo` as `cargo build --release` ("z"), and
    // the size test must tell the shipped build from the bench's.
    println!("cargo:rustc-env=PABLO_BUILD_OPT_LEVEL={}", var("OPT_LEVEL"));
    // Cargo sets PROFILE to "release" for the release profile and every profile inheriting it.
    if var("TARGET") != "x86_64-unknown-linux-gnu" || var("PROFILE") != "release" {
        return;
    }
    let out_dir = Path::new(&var("OUT_DIR")).to_path_buf();
    let relr = "-Wl,-z,pack-relative-relocs";
    if var("HOST") == var("TARGET") && probe_links(&out_dir, "relr_probe", &[relr.into()], true) {
        println!("cargo:rustc-link-arg-bin=pablo={relr}");
    } else {
        println!(
            "cargo:warning=this machine's C library cannot start a binary with packed relocations \
             (glibc 2.36 or later can), or it is built for another machine: pablo is linked \
             without them (about 0.9 MB larger; BENCHMARKS.md, issue 46)"
        );
    }
    if !linker_takes_orderings(&out_dir) {
        println!(
            "cargo:warning=the linker does not take --symbol-ordering-file: pablo is linked \
             without its start-up order (more memory at start; BENCHMARKS.md, issue 29)"
        );
        return;
    }
    if env::var_os("PABLO_NO_STARTUP_ORDER").is_none() {
        let order = Path::new(&var("CARGO_MANIFEST_DIR")).join("scripts/startup-order.txt");
        if order.is_file() {
            println!(
                "cargo:rustc-link-arg-bin=pablo=-Wl,--symbol-ordering-file={}",
                order.display()
            );
            println!("cargo:rustc-link-arg-bin=pablo=-Wl,--no-warn-symbol-ordering");
        }
    }
    if let Some(map) = env::var_os("PABLO_LINK_MAP") {
        println!(
            "cargo:rustc-link-arg-bin=pablo=-Wl,-Map={}",
            Path::new(&map).display()
        );
    }
}

/// Whether an empty program links with this build's rustc, flags and linker when given lld's
/// ordering options (an empty list, so nothing else is at stake).
fn linker_takes_orderings(out_dir: &Path) -> bool {
    let list = out_dir.join("ordering_probe.txt");
    if std::fs::write(&list, "").is_err() {
        return false;
    }
    let args = [
        format!("-Wl,--symbol-ordering-file={}", list.display()),
        "-Wl,--no-warn-symbol-ordering".to_string(),
    ];
    probe_links(out_dir, "ordering_probe", &args, false)
}

/// Whether an empty program links with this build's rustc, flags and linker when given
/// `link_args`, and, with `run`, whether the program it makes then starts and exits cleanly here.
fn probe_links(out_dir: &Path, name: &str, link_args: &[String], run: bool) -> bool {
    let source = out_dir.join(format!("{name}.rs"));
    let program = out_dir.join(name);
    if std::fs::write(&source, "fn main() {}\n").is_err() {
        return false;
    }
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let mut probe = Command::new(rustc);
    probe
        .arg("--crate-type=bin")
        .arg("--target")
        .arg(env::var_os("TARGET").unwrap_or_default())
        .arg("-o")
        .arg(&program)
        .arg(&source);
    for arg in link_args {
        probe.arg("-C").arg(format!("link-arg={arg}"));
    }
    if let Ok(flags) = env::var("CARGO_ENCODED_RUSTFLAGS") {
        probe.args(flags.split('\x1f').filter(|f| !f.is_empty()));
    }
    if let Some(linker) = env::var_os("RUSTC_LINKER") {
        let mut arg = std::ffi::OsString::from("linker=");
        arg.push(linker);
        probe.arg("-C").arg(arg);
    }
    let quiet = |c: &mut Command| {
        c.stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    quiet(&mut probe) && (!run || quiet(&mut Command::new(&program)))
}
