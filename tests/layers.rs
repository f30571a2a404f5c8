//! The layering rule of `src/lib.rs` (and DESIGN.md section 2), checked on
//! the source: a module imports only modules of its own layer or below, the
//! product never imports the embedded store, and no file passes the size
//! limits. A `crate::X` path in code (not in comments) counts as an import.

use std::path::{Path, PathBuf};

/// Bottom up; the modules of one row may import each other's.
const LAYERS: &[&[&str]] = &[
    &["util", "metrics", "status", "shutdown", "systemd", "logging", "pool"],
    &["logql"],
    &["config"],
    &["positions"],
    &["client"],
    &["queue"],
    &["batch"],
    &["spool"],
    &["pipeline", "relabel"],
    &["discovery"],
    &["source"],
    &["cloud", "admin"],
    &["alert"],
    &["plan"],
    &["convert"],
    &["agent", "inspect"],
    &["receive"],
    &["cli"],
    &["commands"],
    &["main", "lib"],
];

fn rank(module: &str) -> Option<usize> {
    LAYERS.iter().position(|row| row.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn sources() -> Vec<(String, PathBuf, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(&src).unwrap();
            let top =
                rel.components().next().unwrap().as_os_str().to_string_lossy().trim_end_matches(".rs").to_string();
            let text = std::fs::read_to_string(&p).unwrap();
            (top, p, text)
        })
        .collect()
}

/// `crate::NAME` paths outside comments.
fn imports(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            let after = &rest[i + 7..];
            let name: String = after.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            out.push((n + 1, name));
            rest = after;
        }
    }
    out
}

#[test]
fn every_module_imports_only_its_own_layer_or_below() {
    let mut wrong = Vec::new();
    for (top, path, text) in sources() {
        let Some(own) = rank(&top) else {
            wrong.push(format!("{}: module `{top}` has no layer in tests/layers.rs", path.display()));
            continue;
        };
        for (line, name) in imports(&text) {
            if let Some(r) = rank(&name) {
                if r > own {
                    wrong.push(format!("{}:{line}: `{top}` imports `{name}`, a layer above it", path.display()));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "layering rule broken:\n{}", wrong.join("\n"));
}

#[test]
fn the_product_never_imports_the_embedded_store() {
    for (top, path, text) in sources() {
        if matches!(top.as_str(), "receive" | "commands" | "cli" | "main" | "lib") {
            continue;
        }
        for (line, name) in imports(&text) {
            assert_ne!(name, "receive", "{}:{line} imports the embedded store", path.display());
        }
    }
}

#[test]
fn no_file_passes_the_size_limits() {
    for (top, path, text) in sources() {
        let lines = text.lines().count();
        let limit = if top == "commands" { 250 } else { 600 };
        assert!(lines <= limit, "{} has {lines} lines (limit {limit})", path.display());
    }
}

#[test]
fn the_checker_sees_imports_and_skips_comments() {
    let text = "use crate::batch::Shipper;\n// crate::receive in a comment\nlet x = crate::util::now_ns();\n";
    assert_eq!(imports(text), vec![(1, "batch".to_string()), (3, "util".to_string())]);
}
