//! Reading the book's markdown: chapters, fenced code blocks, relative
//! links, and the rows of the configuration reference.

use std::path::{Path, PathBuf};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn src() -> PathBuf {
    root().join("book/src")
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every `.md` file under `dir`, sorted.
pub fn chapters(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.expect("a directory entry").path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// A fenced code block: its info string, its text, and the line it starts at.
pub struct Block {
    pub lang: String,
    pub text: String,
    pub line: usize,
}

/// The fenced (```) code blocks of a markdown text.
pub fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (n, line) in text.lines().enumerate() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut open, fence) {
            (None, Some(info)) => {
                open = Some(Block { lang: info.trim().to_string(), text: String::new(), line: n + 1 })
            }
            (Some(_), Some(_)) => out.extend(open.take()),
            (Some(b), None) => {
                b.text.push_str(line);
                b.text.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

/// The text outside fenced code blocks and inline code.
pub fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            let mut code = false;
            for part in line.split('`') {
                if !code {
                    out.push_str(part);
                }
                code = !code;
            }
            out.push('\n');
        }
    }
    out
}

/// The relative link targets of a markdown text (`](target)`), anchors kept.
pub fn relative_links(text: &str) -> Vec<String> {
    let re = regex::Regex::new(r"\]\(([^)\s]+)\)").expect("a regex");
    re.captures_iter(&prose(text))
        .map(|c| c[1].to_string())
        .filter(|t| !t.contains("://") && !t.starts_with("mailto:"))
        .collect()
}

/// The cells of a table row (`| a | b \| c |` -> `a`, `b \| c`).
pub fn cells(row: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cell = String::new();
    let mut prev = ' ';
    for c in row.trim().trim_start_matches('|').chars() {
        if c == '|' && prev != '\\' {
            out.push(cell.trim().to_string());
            cell.clear();
        } else {
            cell.push(c);
        }
        prev = c;
    }
    out
}

/// A row of the configuration reference: `| `key` | default | what |`.
pub struct Row {
    pub key: String,
    pub default: String,
    pub text: String,
    pub file: String,
}

/// The rows of the reference pages whose first cell is one key in backticks.
pub fn reference_rows() -> Vec<Row> {
    let mut out = Vec::new();
    for page in chapters(&src().join("reference")) {
        let file = page.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        for line in read(&page).lines().filter(|l| l.starts_with("| `")) {
            let c = cells(line);
            let Some(key) = c.first().and_then(|k| k.strip_prefix('`')).and_then(|k| k.strip_suffix('`')) else {
                continue;
            };
            if key.contains('`') || c.len() < 3 {
                continue;
            }
            out.push(Row { key: key.to_string(), default: c[1].clone(), text: line.to_string(), file: file.clone() });
        }
    }
    out
}
