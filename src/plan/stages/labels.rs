//! Compiling the stages that set or take away labels, or choose the
//! tenant: `tenant`, `static_labels`, `labeldrop`, `labelallow` and `pack`.
//! (The `labels` key of an extracting stage is checked in `picks`.)

use std::collections::BTreeMap;

use crate::config::{PackStage, TenantStage};
use crate::pipeline::{Op, TenantFrom};
use crate::plan::names::{Errors, Names};
use crate::util::is_valid_label_name;

/// A `tenant` stage: the tenant from an extracted value, a label or a value.
pub(super) fn tenant(t: &TenantStage, names: &Names, e: &mut Errors<'_>) -> Option<Op> {
    match (&t.source, &t.label, &t.value) {
        (Some(s), None, None) if names.has(s) => Some(Op::Tenant(TenantFrom::Extracted(s.clone()))),
        (Some(s), None, None) => {
            e(".tenant.source", format!("`{s}` is not extracted by an earlier stage"));
            None
        }
        // Read per line: a line without the label keeps the source's tenant.
        (None, Some(l), None) if is_valid_label_name(l) => Some(Op::Tenant(TenantFrom::Label(l.clone()))),
        (None, Some(l), None) => {
            e(".tenant.label", format!("`{l}` is not a valid label name"));
            None
        }
        (None, None, Some(v)) if !v.is_empty() => match crate::util::tenant_problem(v) {
            None => Some(Op::Tenant(TenantFrom::Value(v.clone()))),
            Some(why) => {
                e(".tenant.value", format!("`{}`: {why}", v.escape_debug()));
                None
            }
        },
        _ => {
            e(".tenant", "needs exactly one of `source` (an extracted value), `label` or `value` (not empty)".into());
            None
        }
    }
}

/// A `static_labels` stage: fixed labels set on every line.
pub(super) fn static_labels(set: &BTreeMap<String, String>, names: &mut Names, e: &mut Errors<'_>) -> Option<Op> {
    if let Some(bad) = set.keys().find(|l| !is_valid_label_name(l)) {
        e(&format!(".static_labels.{bad}"), "not a valid label name".into());
        return None;
    }
    // An empty value sets nothing (as in Promtail).
    let set: Vec<(String, String)> =
        set.iter().filter(|(_, v)| !v.is_empty()).map(|(k, v)| (k.clone(), v.clone())).collect();
    names.labels.extend(set.iter().map(|(k, _)| k.clone()));
    Some(Op::StaticLabels(set))
}

/// A `labeldrop` stage: the named labels taken away.
pub(super) fn labeldrop(drop: &[String], e: &mut Errors<'_>) -> Option<Op> {
    if let Some(bad) = drop.iter().find(|l| !is_valid_label_name(l)) {
        e(".labeldrop", format!("`{bad}` is not a valid label name"));
        return None;
    }
    Some(Op::LabelDrop(drop.to_vec()))
}

/// A `labelallow` stage: every label but the named ones taken away.
pub(super) fn labelallow(allow: &[String], names: &mut Names, e: &mut Errors<'_>) -> Option<Op> {
    if allow.is_empty() {
        e(".labelallow", "empty: it would take every label away".into());
        return None;
    }
    if let Some(bad) = allow.iter().find(|l| !is_valid_label_name(l)) {
        e(".labelallow", format!("`{bad}` is not a valid label name"));
        return None;
    }
    names.labels.retain(|l| allow.contains(l));
    Some(Op::LabelAllow(allow.to_vec()))
}

/// A `pack` stage: the named labels packed into the line as JSON.
pub(super) fn pack(pk: &PackStage, names: &mut Names) -> Op {
    // A name without a value on a line is left out of it (a label may come from discovery).
    names.labels.retain(|l| !pk.labels.contains(l));
    Op::Pack { labels: pk.labels.clone(), ingest_timestamp: pk.ingest_timestamp.unwrap_or(true) }
}
