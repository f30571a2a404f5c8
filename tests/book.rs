//! The book (`book/`, built with mdbook by `.ci/run`): every chapter its
//! SUMMARY.md names exists, and every relative link of a chapter, and of
//! the README into the book, names a file that exists.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The relative link targets of a markdown text (`](target)`), without anchors.
fn relative_links(text: &str) -> Vec<String> {
    let re = regex::Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    re.captures_iter(text)
        .map(|c| c[1].to_string())
        .filter(|t| !t.contains("://") && !t.starts_with('#') && !t.starts_with("mailto:"))
        .map(|t| t.split('#').next().unwrap_or_default().to_string())
        .filter(|t| !t.is_empty())
        .collect()
}

fn chapters(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            chapters(&p, out);
        } else if p.extension().is_some_and(|x| x == "md") {
            out.push(p);
        }
    }
}

#[test]
fn every_chapter_of_the_summary_exists_and_every_chapter_is_in_it() {
    let src = root().join("book/src");
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap();
    let listed = relative_links(&summary);
    assert!(!listed.is_empty());
    for l in &listed {
        assert!(src.join(l).is_file(), "SUMMARY.md names {l}, which is missing");
    }
    let mut all = Vec::new();
    chapters(&src, &mut all);
    for c in all {
        let rel = c.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
        assert!(rel == "SUMMARY.md" || listed.contains(&rel), "{rel} is not in SUMMARY.md (mdbook would not build it)");
    }
}

#[test]
fn relative_links_of_the_book_and_the_readme_into_it_resolve() {
    let src = root().join("book/src");
    let mut all = Vec::new();
    chapters(&src, &mut all);
    for c in all {
        let text = std::fs::read_to_string(&c).unwrap();
        for l in relative_links(&text) {
            let target = c.parent().unwrap().join(&l);
            assert!(target.exists(), "{}: link {l} resolves to nothing", c.display());
        }
    }
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let into_book: Vec<String> = relative_links(&readme).into_iter().filter(|l| l.starts_with("book/")).collect();
    assert!(!into_book.is_empty(), "the README links into the book");
    for l in into_book {
        assert!(root().join(&l).exists(), "README: link {l} resolves to nothing");
    }
}
