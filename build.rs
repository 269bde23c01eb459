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
//! Only where the linker is known to be lld: release builds for x86_64 Linux, whose default linker
//! is rust-lld since Rust 1.90, unless the flags choose another one.

// A build script speaks to cargo on stdout.
#![allow(clippy::print_stdout)]

use std::env;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=scripts/startup-order.txt");
    println!("cargo:rerun-if-env-changed=PABLO_LINK_MAP");
    println!("cargo:rerun-if-env-changed=PABLO_NO_STARTUP_ORDER");
    let var = |name: &str| env::var(name).unwrap_or_default();
    // Cargo sets PROFILE to "release" for the release profile and every profile inheriting it.
    if var("TARGET") != "x86_64-unknown-linux-gnu" || var("PROFILE") != "release" {
        return;
    }
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    let other_linker = [
        "linker-features=-lld",
        "link-self-contained",
        "fuse-ld",
        "linker-flavor",
    ]
    .iter()
    .any(|f| flags.contains(f))
        || env::var_os("RUSTC_LINKER").is_some();
    if other_linker {
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
