//! Compiling the stages that extract values from a line: `regex`, `json`,
//! `logfmt`, and the container runtimes' formats `cri` and `docker`.

use std::collections::BTreeMap;

use crate::config::{CriStage, SourceType};
use crate::pipeline::{JsonField, Op};
use crate::plan::names::{regex as compile_regex, Errors, Names};

/// A `regex` stage: its named captures are extracted.
pub(super) fn regex(r: &str, source: Option<String>, names: &mut Names, e: &mut Errors<'_>) -> Option<Op> {
    let re = compile_regex(".regex", r, e)?;
    let found: Vec<String> = re.capture_names().flatten().map(String::from).collect();
    if found.is_empty() {
        e(".regex", "has no named capture (?P<name>...) to extract".into());
    }
    names.known.extend(found.iter().cloned());
    Some(Op::Regex { re, names: found, source })
}

/// A `json` stage: `(name, path)` pairs, or every top-level field when empty.
pub(super) fn json(
    fields: &BTreeMap<String, String>,
    source: Option<String>,
    drop_malformed: bool,
    names: &mut Names,
    e: &mut Errors<'_>,
) -> Op {
    let mut out = Vec::new();
    for (name, path) in fields {
        match JsonField::parse(path) {
            Ok(p) => out.push((name.clone(), p)),
            Err(m) => e(&format!(".json.{name}"), m),
        }
        names.known.push(name.clone());
    }
    names.any |= fields.is_empty();
    Op::Json { fields: out, source, drop_malformed }
}

/// A `logfmt` stage: `(name, key)` pairs, or every key when empty.
pub(super) fn logfmt(
    fields: &BTreeMap<String, String>,
    source: Option<String>,
    names: &mut Names,
    e: &mut Errors<'_>,
) -> Op {
    for (name, key) in fields {
        if key.is_empty() || key.contains(['=', '"', ' ']) {
            e(&format!(".logfmt.{name}"), format!("`{key}` is not a logfmt key"));
        }
        names.known.push(name.clone());
    }
    names.any |= fields.is_empty();
    let fields = fields.iter().map(|(n, k)| (n.clone(), k.clone())).collect();
    Op::Logfmt { fields, source }
}

/// A `cri` stage (`cri` set) or a `docker` stage (`cri` unset): both read
/// container runtimes' log files and extract the line's `stream`.
pub(super) fn container(cri: Option<&CriStage>, kind: SourceType, names: &mut Names, e: &mut Errors<'_>) -> Option<Op> {
    if !kind.reads_files() {
        let k = if cri.is_some() { "cri" } else { "docker" };
        e(&format!(".{k}"), format!("`{k}` parses container runtimes' log files; use it on a file source"));
        return None;
    }
    names.known.push("stream".into());
    let Some(c) = cri else { return Some(Op::Docker) };
    let part_max = match (c.max_partial_line_size, c.max_partial_line_size_truncate) {
        (Some(n), Some(true)) if n.get() > 0 => Some(n.get() as usize),
        (_, Some(true)) => {
            e(".cri.max_partial_line_size", "needed, above 0, with max_partial_line_size_truncate".into());
            return None;
        }
        (Some(_), _) => {
            e(".cri.max_partial_line_size", "cuts parts only with max_partial_line_size_truncate = true".into());
            return None;
        }
        (None, _) => None,
    };
    if c.max_partial_lines == Some(0) {
        e(".cri.max_partial_lines", "must be above 0".into());
        return None;
    }
    Some(Op::Cri(part_max, c.max_partial_lines.unwrap_or(100) as usize))
}
