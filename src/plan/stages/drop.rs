//! Compiling a `drop` stage: a regex on the line (or on `source`), or a
//! table of conditions that must all hold (Promtail's `drop`).

use crate::config::DropSpec;
use crate::pipeline::DropRule;

use crate::plan::names::{regex, Errors, Names};

/// The counter reason of a drop stage that names none.
const DEFAULT_REASON: &str = "drop_stage";

/// A `drop` stage; `source` is the stage's own `source` key (string form only).
pub(super) fn compile(d: &DropSpec, source: Option<String>, names: &Names, e: &mut Errors<'_>) -> Option<DropRule> {
    let mut rule = DropRule { separator: ";".into(), reason: DEFAULT_REASON.into(), ..Default::default() };
    match d {
        DropSpec::Regex(r) => {
            rule.regex = Some(regex(".drop", r, e)?);
            rule.sources = source.into_iter().collect();
        }
        DropSpec::Rule(t) => {
            let before_sources = t.source.as_ref().map(|s| s.names()).unwrap_or_default();
            for s in &before_sources {
                if !names.has(s) {
                    e(".drop.source", format!("`{s}` is not extracted by an earlier stage"));
                    return None;
                }
            }
            if t.source.is_none() && t.expression.is_none() && t.older_than.is_none() && t.longer_than.is_none() {
                e(".drop", "needs at least one of `source`, `expression`, `older_than` or `longer_than`".into());
                return None;
            }
            if t.value.is_some() && t.expression.is_some() {
                e(".drop.value", "`value` and `expression` exclude each other".into());
                return None;
            }
            if t.value.is_some() && t.source.is_none() {
                e(".drop.value", "`value` is compared with `source`, which is not set".into());
                return None;
            }
            if let Some(r) = &t.expression {
                rule.regex = Some(regex(".drop.expression", r, e)?);
            }
            rule.sources = before_sources;
            rule.value = t.value.clone();
            if let Some(sep) = &t.separator {
                rule.separator = sep.clone();
            }
            rule.older_than_ns = t.older_than.map(|d| i64::try_from(d.get().as_nanos()).unwrap_or(i64::MAX));
            rule.longer_than = t.longer_than.map(|n| usize::try_from(n.get()).unwrap_or(usize::MAX));
            match t.reason.as_deref() {
                Some("") => {
                    e(".drop.reason", "empty: leave it out for `drop_stage`".into());
                    return None;
                }
                Some(r) => rule.reason = r.to_string(),
                None => {}
            }
        }
    }
    Some(rule)
}
