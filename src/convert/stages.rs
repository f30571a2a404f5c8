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

use regex::Regex;

use super::filters::{self, Tenant};
use super::pipeline::{Kind, Timestamp};
pub use super::pipeline::{Pipeline, Stage};
use super::render::Val;
use super::replace;
use super::yaml::{list, pairs, scalar, truthy, Map, Report};
use crate::pipeline::{golayout, re2, JsonField, JsonPath, TimeFormat};
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

/// Stages whose body is a mapping of options.
const MAPPED: &[&str] = &[
    "docker",
    "cri",
    "regex",
    "json",
    "logfmt",
    "timestamp",
    "output",
    "replace",
    "drop",
    "limit",
    "multiline",
    "tenant",
    "template",
    "decolorize",
    "sampling",
    "pack",
    "geoip",
];

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
            for l in super::yaml::list(k, Some(body), r).iter().filter_map(scalar) {
                if l == "filename" {
                    // Set by the source on every file line: taken off by a stage, as Promtail does.
                    p.stages.push(Stage::plain(Kind::LabelDrop(vec![l])));
                } else {
                    p.drop_labels.push(l);
                }
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

fn mapped(p: &mut Pipeline, index: usize, k: &str, name: &str, body: &Yaml, r: &mut Report) {
    let mut m = Map::new(k, body, r);
    match name {
        "docker" => {
            // Promtail's docker stage reads no options: whatever is written there does nothing.
            for key in m.keys() {
                m.ignore(&key);
                r.note(m.key(&key), "Promtail's docker stage takes no options and ignores this one; so does tailship");
            }
            p.stages.push(Stage::plain(Kind::Docker))
        }
        "cri" => {
            let truncate = m.text("max_partial_line_size_truncate", r).is_some_and(|v| truthy(&v));
            let size = m.text("max_partial_line_size", r).filter(|s| s != "0");
            let part_max = match (size, truncate) {
                (Some(s), true) => match super::filters::promtail_size(&s) {
                    Some(ours) => Some(ours),
                    None => return r.skip(m.key("max_partial_line_size"), format!("`{s}` is not a size")),
                },
                (Some(_), false) => {
                    r.note(
                        m.key("max_partial_line_size"),
                        "Promtail cuts nothing without max_partial_line_size_truncate: left out",
                    );
                    None
                }
                (None, _) => None,
            };
            let max_lines = m.text("max_partial_lines", r).and_then(|v| v.parse::<i64>().ok()).filter(|n| *n > 0);
            if max_lines.is_some() {
                r.note(
                    m.key("max_partial_lines"),
                    "tailship counts the streams holding a part per file (Promtail: across the job's files)",
                );
            }
            p.stages.push(Stage::plain(Kind::Cri(part_max, max_lines)));
        }
        "regex" => {
            let Some(expr) = m.text("expression", r) else { return missing(&m, "expression", r) };
            let Ok(src) = p.source(&mut m, r) else { return };
            let Some(re) = compiles(&m.key("expression"), &expr, r) else { return };
            let names: Vec<String> = re.capture_names().flatten().map(String::from).collect();
            if names.is_empty() {
                return r.skip(m.key("expression"), "has no named capture to extract");
            }
            p.stages.push(Stage::plain(Kind::Regex(expr, names, src)));
        }
        "json" => json(p, &mut m, r),
        "logfmt" => {
            let Ok(src) = p.source(&mut m, r) else { return };
            let mut fields = Vec::new();
            for (n, key) in m.pairs("mapping", r) {
                let key = if key.is_empty() { n.clone() } else { key };
                if key.contains(['=', '"', ' ']) {
                    r.skip(format!("{}.{n}", m.key("mapping")), format!("`{key}` is not a logfmt key"));
                } else {
                    fields.push((n, key));
                }
            }
            p.stages.push(Stage::plain(Kind::Logfmt(fields, src)));
        }
        "timestamp" => timestamp(p, &mut m, r),
        "output" => {
            let Some(src) = m.text("source", r) else { return missing(&m, "source", r) };
            if !p.extracted(&src) {
                return p.unextracted(m.key("source"), &src, r);
            }
            p.stages.push(Stage::plain(Kind::Output(src)));
        }
        "replace" => {
            let Some(expr) = m.text("expression", r) else { return missing(&m, "expression", r) };
            let Ok(src) = p.source(&mut m, r) else { return };
            let with = m.text("replace", r).unwrap_or_default();
            if compiles(&m.key("expression"), &expr, r).is_none() {
                return;
            }
            if with.contains("{{") {
                if let Err(e) = crate::pipeline::GoTemplate::parse(&with) {
                    return r.skip(m.key("replace"), format!("not a Go template tailship reads: {e}"));
                }
                p.stages.push(Stage::plain(Kind::ReplaceGroups(expr, with, src)));
                return m.finish(r, "no tailship equivalent");
            }
            match replace::translate(&expr, &with) {
                Ok(t) => {
                    if let Some((re, names)) = t.extract {
                        p.stages.push(Stage::plain(Kind::Regex(re, names, src.clone())));
                    }
                    p.stages.push(Stage::plain(Kind::Replace(t.regex, t.with, src)));
                }
                Err(why) => return r.skip(k, why),
            }
        }
        "drop" => {
            if let Some(rule) = filters::drop(&mut m, p, r) {
                p.stages.push(Stage::plain(Kind::Drop(rule)));
            }
        }
        "limit" => limit(p, &mut m, r),
        "multiline" => {
            let Some(first) = m.text("firstline", r) else { return missing(&m, "firstline", r) };
            if compiles(&m.key("firstline"), &first, r).is_none() {
                return;
            }
            let mut t = vec![("start".to_string(), Val::str(first))];
            if let Some(n) = m.text("max_lines", r).and_then(|n| n.parse::<i64>().ok()) {
                t.push(("max_lines".into(), Val::Int(n)));
            }
            if let Some(w) = m.text("max_wait_time", r) {
                t.push(("max_wait".into(), Val::str(w)));
            }
            // First, it joins the lines as they are read (the source's rule);
            // after other stages, it is a stage at the same place.
            if index == 0 {
                p.multiline = Some(Val::Table(t));
            } else {
                p.stages.push(Stage::plain(Kind::Multiline(Val::Table(t))));
            }
        }
        "decolorize" => p.stages.push(Stage::plain(Kind::Decolorize)),
        "geoip" => {
            let Some(db) = m.text("db", r).filter(|d| !d.is_empty()) else {
                return r.refuse(m.key("db"), "db path cannot be empty (Promtail refuses it too)");
            };
            let db_type = m.text("db_type", r).unwrap_or_default();
            match db_type.as_str() {
                "city" | "asn" => {}
                "" => {
                    return r.refuse(m.key("db_type"), "db type should be either city or asn (Promtail refuses it too)")
                }
                other => return r.skip(m.key("db_type"), format!("`{other}`: Promtail looks nothing up with it")),
            }
            let Ok(src) = p.source(&mut m, r) else { return };
            let Some(src) = src else {
                return r.skip(k, "without `source`, Promtail's geoip stage looks nothing up: left out");
            };
            p.stages.push(Stage::plain(Kind::GeoIp(db, src, db_type)));
        }
        "sampling" => {
            let Some(rate) = m.text("rate", r).and_then(|v| v.parse::<f64>().ok()) else {
                return missing(&m, "rate", r);
            };
            if !(rate > 0.0 && rate <= 1.0) {
                return r.skip(m.key("rate"), format!("{rate}: tailship keeps a share above 0 and at most 1"));
            }
            let reason = m.text("drop_counter_reason", r);
            p.stages.push(Stage::plain(Kind::Sampling(rate, reason)));
        }
        "pack" => {
            // Without labels, Promtail packs the line alone: {"_entry": ...}.
            let names = m.texts("labels", r);
            let ingest = m.text("ingest_timestamp", r).is_none_or(|v| truthy(&v));
            p.stages.push(Stage::plain(Kind::Pack(names, ingest)));
        }
        "template" => {
            let Some(src) = m.text("source", r) else { return missing(&m, "source", r) };
            let text = m.text("template", r).unwrap_or_default();
            if let Err(e) = crate::pipeline::GoTemplate::parse(&text) {
                return r.skip(m.key("template"), format!("not a Go template tailship reads: {e}"));
            }
            p.stages.push(Stage::plain(Kind::Template(src, text)));
        }
        "tenant" => match filters::tenant(&mut m, p, r) {
            // Under a match, the lines it selects only.
            Some(Tenant::Fixed(v)) if index == usize::MAX => p.stages.push(Stage::plain(Kind::Tenant("value", v))),
            Some(Tenant::Fixed(v)) => p.tenant = Some(v),
            Some(Tenant::Stage(from, name)) => p.stages.push(Stage::plain(Kind::Tenant(from, name))),
            None => {}
        },
        _ => return r.skip(k, unsupported(name)),
    }
    m.finish(r, "no tailship equivalent");
}

fn json(p: &mut Pipeline, m: &mut Map<'_>, r: &mut Report) {
    let Ok(src) = p.source(m, r) else { return };
    let drop_malformed = m.text("drop_malformed", r).is_some_and(|v| truthy(&v));
    let mut fields = Vec::new();
    for (n, expr) in m.pairs("expressions", r) {
        let expr = if expr.is_empty() { n.clone() } else { expr };
        // A plain path is written as tailship's (read without JMESPath); anything else as it is.
        let ours = plain_path(&expr).filter(|path| JsonPath::parse(path).is_ok()).unwrap_or(expr.clone());
        match JsonField::parse(&ours) {
            Ok(_) => fields.push((n, ours)),
            Err(e) => r.refuse(format!("{}.{n}", m.key("expressions")), format!("{e} (Promtail refuses it too)")),
        }
    }
    if fields.is_empty() {
        return r.skip(m.key("expressions"), "no expression: the json stage is left out (Promtail refuses it)");
    }
    p.stages.push(Stage::plain(Kind::Json(fields, src, drop_malformed)));
}

/// A JMESPath of identifiers, quoted identifiers and indexes as a tailship path.
fn plain_path(expr: &str) -> Option<String> {
    let mut out = String::new();
    let mut rest = expr.trim();
    let mut first = true;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('"') {
            let end = r.find('"')?;
            out.push_str(&format!("[\"{}\"]", &r[..end]));
            rest = &r[end + 1..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            let idx = &r[..end];
            if idx.is_empty() || !idx.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            out.push_str(&format!("[{idx}]"));
            rest = &r[end + 1..];
        } else if let Some(r) = rest.strip_prefix('.').filter(|_| !first) {
            if r.starts_with('"') {
                rest = r;
                continue;
            }
            out.push('.');
            rest = r;
        } else {
            let end = rest.find(['.', '[', '"']).unwrap_or(rest.len());
            let id = &rest[..end];
            if id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return None;
            }
            out.push_str(id);
            rest = &rest[end..];
        }
        first = false;
    }
    (!out.is_empty()).then_some(out)
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

fn timestamp(p: &mut Pipeline, m: &mut Map<'_>, r: &mut Report) {
    let Some(src) = m.text("source", r) else { return missing(m, "source", r) };
    let Some(format) = m.text("format", r) else { return missing(m, "format", r) };
    if !p.extracted(&src) {
        return p.unextracted(m.key("source"), &src, r);
    }
    let Some(ours) = time_format(&m.key("format"), &format, r) else { return };
    let mut fallbacks = Vec::new();
    for (i, f) in m.texts("fallback_formats", r).iter().enumerate() {
        fallbacks.extend(time_format(&format!("{}[{i}]", m.key("fallback_formats")), f, r));
    }
    let location = m.text("location", r);
    if let Some(l) = &location {
        // `Local`: the machine's zone in Go, as in tailship.
        if l != "Local" && l.parse::<chrono_tz::Tz>().is_err() {
            return r.refuse(m.key("location"), format!("`{l}` is not a time zone (Promtail refuses it too)"));
        }
    }
    // Promtail's default is `fudge`; tailship's is `skip`, so it is written out.
    let fudge = match m.text("action_on_failure", r).as_deref() {
        Some("fudge") | None => true,
        Some("skip") => false,
        Some(other) => {
            return r.refuse(
                m.key("action_on_failure"),
                format!("`{other}` is neither skip nor fudge (Promtail refuses it too)"),
            )
        }
    };
    p.stages.push(Stage::plain(Kind::Timestamp(Timestamp { source: src, format: ours, fallbacks, location, fudge })));
}

/// A Promtail time format as tailship's, checked; reported when it has none.
fn time_format(key: &str, format: &str, r: &mut Report) -> Option<String> {
    if format.starts_with("Stamp") {
        r.note(
            key,
            format!("Promtail reads `{format}` as a literal layout and so no time at all; tailship reads Go's {format} layout (no year: the closest one, as Promtail guesses it for layouts without a year)"),
        );
    }
    let ours = match golayout::translate(format) {
        Ok(f) => f,
        Err(why) => {
            r.skip(key, why);
            return None;
        }
    };
    match TimeFormat::parse(&ours) {
        Ok(_) => Some(ours),
        Err(e) => {
            r.skip(key, format!("translated to `{ours}`, which tailship refuses: {e}"));
            None
        }
    }
}

fn limit(p: &mut Pipeline, m: &mut Map<'_>, r: &mut Report) {
    let Some(rate) = m.text("rate", r).and_then(|v| v.parse::<f64>().ok()).filter(|v| *v > 0.0) else {
        return r.skip(m.key("rate"), "needs a rate above 0");
    };
    let burst = m.text("burst", r).and_then(|v| v.parse::<i64>().ok()).filter(|b| *b > 0);
    let drop = m.text("drop", r).is_some_and(|v| truthy(&v));
    let by_label = m.text("by_label_name", r).filter(|n| !n.is_empty());
    if by_label.is_some() && !drop {
        return r.refuse(m.key("drop"), "must be true with by_label_name (Promtail refuses it too)");
    }
    let max_distinct = m.text("max_distinct_labels", r).and_then(|v| v.parse::<i64>().ok()).filter(|n| *n > 0);
    p.stages.push(Stage::plain(Kind::Limit(rate, burst, by_label.map(|n| (n, max_distinct)), drop)));
}

/// Compiles the RE2 regex `re` as `tailship check` will (see
/// [`crate::pipeline::re2`]); a regex that does not compile is refused (RE2
/// refuses it too), a difference that remains is noted.
fn compiles(key: &str, re: &str, r: &mut Report) -> Option<Regex> {
    for d in re2::translate(re).differences {
        r.note(key, d);
    }
    match re2::compile(re) {
        Ok(re) => Some(re),
        Err(e) => {
            r.refuse(key, format!("bad regex (Promtail refuses it too): {e}"));
            None
        }
    }
}

fn missing(m: &Map<'_>, key: &str, r: &mut Report) {
    r.skip(m.key(key), "missing: the stage is left out");
}

/// Why a Promtail stage has no tailship equivalent.
fn unsupported(name: &str) -> String {
    match name {
        "pack" => "pack has no tailship equivalent (structured_metadata keeps values beside the line)".into(),
        "eventlogmessage" => "eventlogmessage reads Windows event logs, which tailship does not".into(),
        other => format!("unknown stage `{other}`"),
    }
}

#[cfg(test)]
mod tests {
    use super::plain_path as jmespath;

    #[test]
    fn plain_jmespaths_become_tailship_paths() {
        assert_eq!(jmespath("level").as_deref(), Some("level"));
        assert_eq!(jmespath("a.b[0].c").as_deref(), Some("a.b[0].c"));
        assert_eq!(jmespath("\"a.b\"").as_deref(), Some("[\"a.b\"]"));
        assert_eq!(jmespath("req.\"x-id\"").as_deref(), Some("req[\"x-id\"]"));
        for bad in ["a[*].b", "length(a)", "a || b", "a[?x==1]", "@", "a.b | c"] {
            assert_eq!(jmespath(bad), None, "{bad}");
        }
    }
}
