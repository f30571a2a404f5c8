//! Compiling a `timestamp` stage: its format and fallback formats parsed
//! once (Go layouts and Promtail's names), in its location if it names one.

use crate::config::TimestampStage;
use crate::pipeline::{Op, TimeFormat};
use crate::plan::names::{Errors, Names};

/// A `timestamp` stage: the line's time from an extracted value.
pub(super) fn timestamp(t: &TimestampStage, names: &Names, e: &mut Errors<'_>) -> Option<Op> {
    if !names.has(&t.source) {
        e(".timestamp.source", format!("`{}` is not extracted by an earlier stage", t.source));
    }
    let fudge = match t.action_on_failure.as_deref() {
        None | Some("skip") => false,
        Some("fudge") => true,
        Some(other) => {
            e(".timestamp.action_on_failure", format!("`{other}`: use \"skip\" or \"fudge\""));
            false
        }
    };
    let mut formats = Vec::new();
    let all = std::iter::once((".timestamp.format".to_string(), &t.format));
    let fallbacks =
        t.fallback_formats.iter().enumerate().map(|(n, f)| (format!(".timestamp.fallback_formats[{n}]"), f));
    for (k, f) in all.chain(fallbacks) {
        let parsed = TimeFormat::parse(f).and_then(|tf| match &t.location {
            Some(l) => tf.in_location(l),
            None => Ok(tf),
        });
        match parsed {
            Ok(tf) => formats.push(tf),
            Err(m) if m.contains("IANA") => e(".timestamp.location", m),
            Err(m) => e(&k, m),
        }
    }
    (formats.len() == 1 + t.fallback_formats.len()).then(|| Op::Timestamp { source: t.source.clone(), formats, fudge })
}
