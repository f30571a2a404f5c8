//! Release builds name their commit in `tailship --version`, and, for x86_64
//! Linux with glibc, place the functions the agent runs first in the
//! binary's code, in the order of `packaging/symbol-order.txt`.
//!
//! The kernel maps a program's code 64 KiB at a time around each page it
//! runs. `tailship run` runs about 3.5 MiB of its 17 MiB of code; left where
//! the compiler puts it, that code is spread so thin that 11 MiB of pages
//! were resident, most of the daemon's memory. Placed together, a few MiB are.
//! The list is made by `benches/hot_symbols.py` (which says how); a name no
//! longer in the program is passed over, so an old list only places less.
//!
//! The linker is LLD, Rust's default on x86_64 Linux. With another linker set,
//! `TAILSHIP_SYMBOL_ORDER=0` leaves the order to the compiler.

use std::path::Path;

fn main() {
    commit();
    symbol_order();
}

/// `tailship --version` names the commit a release build was made from
/// (`TAILSHIP_COMMIT` when set, as a build from a source tarball can; else
/// git's HEAD). Other builds say they are not a release: naming the commit
/// would rebuild the crate at every commit.
fn commit() {
    println!("cargo:rerun-if-env-changed=TAILSHIP_COMMIT");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let commit = match std::env::var("TAILSHIP_COMMIT") {
        Ok(c) if !c.is_empty() => c,
        _ if !release => "not a release build".to_string(),
        _ => git_head().unwrap_or_else(|| "commit unknown".to_string()),
    };
    println!("cargo:rustc-env=TAILSHIP_COMMIT={commit}");
}

fn git_head() -> Option<String> {
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git").args(args).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    // Built again when HEAD moves: HEAD itself, the branch it names, and packed refs.
    for path in ["HEAD", "packed-refs"] {
        if let Some(p) = git(&["rev-parse", "--git-path", path]) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        if let Some(p) = git(&["rev-parse", "--git-path", &branch]) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    git(&["rev-parse", "--short=12", "HEAD"])
}

fn symbol_order() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=packaging/symbol-order.txt");
    println!("cargo:rerun-if-env-changed=TAILSHIP_SYMBOL_ORDER");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let target = std::env::var("TARGET").unwrap_or_default();
    let wanted = std::env::var("TAILSHIP_SYMBOL_ORDER").map_or(true, |v| v != "0");
    // The static (musl) release binary links with the system's linker driver, which may not
    // be LLD: it keeps the compiler's order.
    if !(release && wanted && target == "x86_64-unknown-linux-gnu") {
        return;
    }
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let list = Path::new(&dir).join("packaging").join("symbol-order.txt");
    if list.is_file() {
        println!("cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}", list.display());
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}
