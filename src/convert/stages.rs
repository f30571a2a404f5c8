//! Promtail `pipeline_stages` as tailship `stages`.
//!
//! The stages keep their order, and so does the extracted map they share:
//! `labels` and `structured_metadata` become stages of their own at the same
//! place, `source` keys carry over. `static_labels` and a `tenant` with a
//! fixed `value` become the source's `labels` and `tenant_id` (under a
//! `match`, stages acting on the lines it selects); a leading
//! `multiline` becomes the source's `multiline` rule; `drop` and `tenant`
//! are read in `filters.rs`. Each stage is checked the way `tailship check` will
//! check it (regexes, JSON paths, time formats, label names), so a stage
//! that would not compile is reported instead of written.

use super::mapped::{mapped, missing, unsupported, MAPPED};
use super::pipeline::Kind;
pub use super::pipeline::{Pipeline, Stage};
use super::yaml::{list, pairs, scalar, Map, Report};
use crate::pipeline::re2;
use crate::util::is_valid_label_name;
use yaml_rust2::Yaml;

/// Converts the `pipeline_stages` list at `key`.
/// `available`: every name the job may ever have (see [`super::names`]).
pub fn convert(
    key: &str,
    items: &[Yaml],
    available: Option<Vec<String>>,
    targets: Vec<String>,
    r: &mut Report,
) -> Pipeline {
    let mut p = Pipeline { available, target_labels: targets, ..Default::default() };
    stages(&mut p, key, items, false, r);
    p.apply_label_drops();
    p
}

/// Translates a list of stages into `p.stages`; `nested` under a `match`.
fn stages(p: &mut Pipeline, key: &str, items: &[Yaml], nested: bool, r: &mut Report) {
    for (i, item) in items.iter().enumerate() {
        let sk = format!("{key}[{i}]");
        let Yaml::Hash(h) = item else {
            r.skip(sk, "expected a stage (a mapping with one key)");
            continue;
        };
        if h.len() != 1 {
            r.skip(sk, "a stage has exactly one key");
            continue;
        }
        let Some((name, body)) = h.iter().next().and_then(|(k, v)| Some((scalar(k)?, v))) else { continue };
        let k = format!("{sk}.{name}");
        if name == "match" {
            matching(p, &k, body, r);
        } else if nested && matches!(name.as_str(), "static_labels" | "labeldrop") {
            // Under a match, they act on the lines it selects: stages of their own.
            per_line(p, &k, &name, body, r);
        } else {
            // Under a match, a `multiline` is a stage at its place, never the source's rule.
            stage(p, if nested { usize::MAX } else { i }, &k, &name, body, r);
        }
    }
}

/// Promtail's `match`: its stages are translated in place (they see the
/// names earlier stages extract), then moved under it.
fn matching(p: &mut Pipeline, k: &str, body: &Yaml, r: &mut Report) {
    let mut m = Map::new(k, body, r);
    let Some(selector) = m.text("selector", r) else {
        m.ignore("stages");
        return missing(&m, "selector", r);
    };
    if let Err(e) = crate::logql::parse_match_selector(&selector, re2::compile) {
        m.ignore("stages");
        return r.refuse(m.key("selector"), format!("not a selector (Promtail refuses it too): {e}"));
    }
    let drop = match m.text("action", r).as_deref() {
        None | Some("keep") => false,
        Some("drop") => true,
        Some(other) => {
            m.ignore("stages");
            return r.skip(m.key("action"), format!("`{other}` is neither keep nor drop: the match is left out"));
        }
    };
    let reason = m.text("drop_counter_reason", r);
    if m.get("pipeline_name").is_some() {
        r.note(
            m.key("pipeline_name"),
            "names the nested pipeline in Promtail's own metrics; tailship has none to name",
        );
    }
    let at = p.stages.len();
    p.stages.push(Stage::plain(Kind::Match(selector.clone(), drop, reason.clone(), Vec::new())));
    let key = m.key("stages");
    stages(p, &key, list(&key, m.get("stages"), r), true, r);
    let inner: Vec<Stage> = p.stages.drain(at + 1..).collect();
    m.finish(r, "no tailship equivalent");
    if drop != inner.is_empty() {
        p.stages.truncate(at);
        let why = if drop { "a match that drops runs no stages" } else { "none of its stages could be translated" };
        return r.skip(k, format!("{why}: the match is left out"));
    }
    p.stages[at] = Stage::plain(Kind::Match(selector, drop, reason, inner));
}

fn stage(p: &mut Pipeline, index: usize, k: &str, name: &str, body: &Yaml, r: &mut Report) {
    match name {
        "labels" | "structured_metadata" | "non_indexed_labels" => {
            let mut picked = Vec::new();
            for (label, source) in pairs(k, body, r) {
                if let Some(pair) = pick(p, &format!("{k}.{label}"), name == "labels", &label, &source, r) {
                    picked.push(pair);
                }
            }
            // Promtail holds them in a map: their order is none, so by name
            // (a config copied from its /config page lists them so).
            picked.sort();
            if !picked.is_empty() {
                p.metadata |= name == "structured_metadata";
                let kind =
                    if name == "labels" { Kind::Labels(picked, Vec::new()) } else { Kind::Labels(Vec::new(), picked) };
                p.stages.push(Stage::plain(kind));
            }
        }
        "static_labels" => {
            for (label, value) in pairs(k, body, r) {
                if is_valid_label_name(&label) {
                    // An empty value sets nothing, as in Promtail.
                    if !value.is_empty() {
                        p.static_labels.retain(|(l, _)| *l != label);
                        p.static_labels.push((label, value));
                    }
                } else {
                    r.skip(format!("{k}.{label}"), "not a valid label name");
                }
            }
        }
        "labelallow" => {
            let names: Vec<String> = list(k, Some(body), r).iter().filter_map(scalar).collect();
            match names.iter().find(|n| !is_valid_label_name(n)) {
                _ if names.is_empty() => r.skip(k, "an empty list: Promtail refuses it"),
                Some(bad) => r.skip(k, format!("`{bad}` is not a valid label name")),
                None => p.stages.push(Stage::plain(Kind::LabelAllow(names))),
            }
        }
        "labeldrop" => {
            let mut here = Vec::new();
            for l in super::yaml::list(k, Some(body), r).iter().filter_map(scalar) {
                if l == "host" || p.may_be_label(&l) || p.target_labels.contains(&l) {
                    // A static label (every target's), the source's `host`, or one a stage
                    // sets: never set.
                    p.drop_labels.push(l);
                } else {
                    // Set by the source (`filename`) or by relabel rules: taken off by a
                    // stage at this place, as Promtail does (a stage before may use it).
                    here.push(l);
                }
            }
            if !here.is_empty() {
                p.stages.push(Stage::plain(Kind::LabelDrop(here)));
            }
        }
        "metrics" => super::metrics::convert(p, k, body, r),
        n if MAPPED.contains(&n) => mapped(p, index, k, name, body, r),
        n if !super::names::PROMTAIL_STAGES.contains(&n) => {
            r.refuse(k, format!("unknown stage `{n}` (Promtail refuses it too: \"Unknown stage type\")"))
        }
        _ => r.skip(k, unsupported(name)),
    }
}

/// `static_labels` or `labeldrop` under a `match`: a stage acting on the lines it selects.
fn per_line(p: &mut Pipeline, k: &str, name: &str, body: &Yaml, r: &mut Report) {
    if name == "static_labels" {
        let mut set = Vec::new();
        for (label, value) in pairs(k, body, r) {
            if !is_valid_label_name(&label) {
                r.refuse(format!("{k}.{label}"), "not a valid label name (Promtail refuses it too)");
            } else if !value.is_empty() {
                set.retain(|(l, _): &(String, String)| *l != label);
                set.push((label, value));
            }
        }
        if !set.is_empty() {
            p.stages.push(Stage::plain(Kind::StaticLabels(set)));
        }
        return;
    }
    let names: Vec<String> = list(k, Some(body), r).iter().filter_map(scalar).collect();
    match names.iter().find(|n| !is_valid_label_name(n)) {
        Some(bad) => r.skip(k, format!("`{bad}` is not a valid label name")),
        None if names.is_empty() => {}
        None => p.stages.push(Stage::plain(Kind::LabelDrop(names))),
    }
}

/// A Promtail `labels` (or `structured_metadata`) entry: `label` from the
/// extracted value `source` ("" means the same name); structured metadata
/// may also take a label (which then leaves the stream).
fn pick(p: &Pipeline, k: &str, as_label: bool, label: &str, source: &str, r: &mut Report) -> Option<(String, String)> {
    let source = if source.is_empty() { label } else { source };
    if !is_valid_label_name(label) {
        r.skip(k, format!("`{label}` is not a valid label name"));
        return None;
    }
    if !(p.extracted(source) || (!as_label && p.may_be_label(source))) {
        p.unextracted(k.to_string(), source, r);
        return None;
    }
    Some((label.to_string(), source.to_string()))
}
