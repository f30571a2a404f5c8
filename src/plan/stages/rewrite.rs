//! Compiling the stages that rewrite the line or an extracted value:
//! `output`, `replace` (with text or a Go template), `template`,
//! `decolorize` and `truncate`.

use crate::config::{TemplateStage, TruncateStage};
use crate::pipeline::{GoTemplate, Op, Truncated};
use crate::plan::names::{regex, Errors, Names};

/// Terminal escape sequences: colours (`ESC[31m`), cursor moves, titles (the
/// widely used ansi-regex pattern, which Loki's decolorizer also uses).
const ANSI_ESCAPES: &str = r"[\x1b\x{9b}][\[\]()#;?]*(?:(?:(?:[a-zA-Z\d]*(?:;[a-zA-Z\d]*)*)?\x07)|(?:(?:\d{1,4}(?:;\d{0,4})*)?[\dA-PRZcf-ntqry=><~]))";

/// An `output` stage: the line becomes an extracted value.
pub(super) fn output(o: &str, names: &Names, e: &mut Errors<'_>) -> Op {
    if !names.has(o) {
        e(".output", format!("`{o}` is not extracted by an earlier stage"));
    }
    Op::Output(o.to_string())
}

/// A `replace` stage: its regex's matches replaced `with` text, or each
/// capture group rendered `with_template`.
pub(super) fn replace(
    r: &str,
    with: Option<&str>,
    with_template: Option<&str>,
    source: Option<String>,
    names: &mut Names,
    e: &mut Errors<'_>,
) -> Option<Op> {
    if let Some(t) = with_template {
        if with.is_some() {
            e(".with_template", "give `with` or `with_template`, not both".into());
            return None;
        }
        let template = match GoTemplate::parse(t) {
            Ok(t) => t,
            Err(m) => {
                e(".with_template", format!("not a Go template tailship reads: {m}"));
                return None;
            }
        };
        let re = regex(".replace", r, e)?;
        names.known.extend(re.capture_names().flatten().map(String::from));
        return Some(Op::ReplaceGroups { re, template, source });
    }
    let Some(with) = with else {
        e(".with", "a `replace` stage needs `with`, the replacement text (\"\" removes the matches)".into());
        return None;
    };
    regex(".replace", r, e).map(|re| Op::Replace { re, with: with.to_string(), source })
}

/// A `decolorize` stage: terminal escape sequences removed.
pub(super) fn decolorize(e: &mut Errors<'_>) -> Option<Op> {
    regex(".decolorize", ANSI_ESCAPES, e).map(Op::Decolorize)
}

/// A `template` stage: a Go template's result written to an extracted value.
pub(super) fn template(t: &TemplateStage, names: &mut Names, e: &mut Errors<'_>) -> Option<Op> {
    if t.source.is_empty() {
        e(".template.source", "empty: name the extracted value the template writes".into());
        return None;
    }
    match GoTemplate::parse(&t.template) {
        Ok(template) => {
            names.known.push(t.source.clone());
            Some(Op::Template { source: t.source.clone(), template })
        }
        Err(m) => {
            e(".template.template", format!("not a Go template tailship reads: {m}"));
            None
        }
    }
}

/// A `truncate` stage: the line, or named labels, metadata or extracted
/// values, cut to a size.
pub(super) fn truncate(t: &TruncateStage, e: &mut Errors<'_>) -> Option<Op> {
    let limit = t.limit.get() as usize;
    if limit == 0 || t.suffix.len() >= limit {
        e(".truncate.limit", "must be above 0 and longer than the suffix".into());
        return None;
    }
    let names = t.sources.clone();
    let target = match t.source_type.as_deref() {
        None | Some("line") if names.is_empty() => Truncated::Line,
        None | Some("line") => {
            e(".truncate.sources", "a line has no names: give `source_type` with `sources`".into());
            return None;
        }
        Some("label") => Truncated::Labels(names),
        Some("structured_metadata") => Truncated::Metadata(names),
        Some("extracted") => Truncated::Extracted(names),
        Some(other) => {
            e(".truncate.source_type", format!("`{other}`: use line, label, structured_metadata or extracted"));
            return None;
        }
    };
    Some(Op::Truncate { limit, suffix: t.suffix.clone(), target })
}
