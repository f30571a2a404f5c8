//! Release builds for x86_64 Linux place the functions the agent runs first
//! in the binary's code, in the order of `packaging/symbol-order.txt`.
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
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=packaging/symbol-order.txt");
    println!("cargo:rerun-if-env-changed=TAILSHIP_SYMBOL_ORDER");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let target = std::env::var("TARGET").unwrap_or_default();
    let wanted = std::env::var("TAILSHIP_SYMBOL_ORDER").map_or(true, |v| v != "0");
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
