//! The Promtail stages whose body is a mapping of options ([`MAPPED`]):
//! each one's options read, checked the way `tailship check` will, and
//! written as a tailship stage. The list around them (`match`, `labels`,
//! `static_labels`, `labeldrop`, `metrics`) is read in `stages.rs`; `drop`
//! and `tenant` options in `filters.rs`.

use regex::Regex;
use yaml_rust2::Yaml;

use super::filters::{self, Tenant};
use super::pipeline::{Kind, Pipeline, Stage, Timestamp};
use super::render::Val;
use super::replace;
use super::yaml::{truthy, Map, Report};
use crate::pipeline::{golayout, re2, JsonField, JsonPath, TimeFormat};

/// What is said of an option a stage's translation leaves unread.
const NO_EQUIVALENT: &str = "no tailship equivalent";

/// Stages whose body is a mapping of options.
pub(super) const MAPPED: &[&str] = &[
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

/// Translates the stage `name` (one of [`MAPPED`]) at `k`; `index` is its
/// place in the list (`usize::MAX` under a `match`). A stage left out is
/// reported by its translation; one written has its unread options reported.
pub(super) fn mapped(p: &mut Pipeline, index: usize, k: &str, name: &str, body: &Yaml, r: &mut Report) {
    let m = Map::new(k, body, r);
    match name {
        "docker" => docker(p, m, r),
        "cri" => cri(p, m, r),
        "regex" => regex(p, m, r),
        "json" => finished(json, p, m, r),
        "logfmt" => logfmt(p, m, r),
        "timestamp" => finished(timestamp, p, m, r),
        "output" => output(p, m, r),
        "replace" => replace(p, k, m, r),
        "drop" => drop(p, m, r),
        "limit" => finished(limit, p, m, r),
        "multiline" => multiline(p, index, m, r),
        "decolorize" => {
            p.stages.push(Stage::plain(Kind::Decolorize));
            m.finish(r, NO_EQUIVALENT);
        }
        "geoip" => geoip(p, k, m, r),
        "sampling" => sampling(p, m, r),
        "pack" => pack(p, m, r),
        "template" => template(p, m, r),
        "tenant" => tenant(p, index, m, r),
        _ => r.skip(k, unsupported(name)),
    }
}

/// Runs a translation that reports its own problems, then reports the
/// options it left unread (whether or not it wrote a stage).
fn finished(translate: fn(&mut Pipeline, &mut Map<'_>, &mut Report), p: &mut Pipeline, mut m: Map<'_>, r: &mut Report) {
    translate(p, &mut m, r);
    m.finish(r, NO_EQUIVALENT);
}

/// A `docker` stage. Promtail's reads no options: whatever is written
/// there does nothing.
fn docker(p: &mut Pipeline, mut m: Map<'_>, r: &mut Report) {
    for key in m.keys() {
        m.ignore(&key);
        r.note(m.key(&key), "Promtail's docker stage takes no options and ignores this one; so does tailship");
    }
    p.stages.push(Stage::plain(Kind::Docker));
    m.finish(r, NO_EQUIVALENT);
}

/// A `cri` stage: the size a partial line is cut to, if asked, and how
/// many streams may hold a part.
fn cri(p: &mut Pipeline, mut m: Map<'_>, r: &mut Report) {
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
    m.finish(r, NO_EQUIVALENT);
}

/// A `regex` stage: its named captures are extracted.
fn regex(p: &mut Pipeline, mut m: Map<'_>, r: &mut Report) {
    let Some(expr) = m.text("expression", r) else { return missing(&m, "expression", r) };
    let Ok(src) = p.source(&mut m, r) else { return };
    let Some(re) = compiles(&m.key("expression"), &expr, r) else { return };
    let names: Vec<String> = re.capture_names().flatten().map(String::from).collect();
    if names.is_empty() {
        return r.skip(m.key("expression"), "has no named capture to extract");
    }
    p.stages.push(Stage::plain(Kind::Regex(expr, names, src)));
    m.finish(r, NO_EQUIVALENT);
}

/// A `logfmt` stage: its mapping of names to keys (a name alone: the same key).
fn logfmt(p: &mut Pipeline, mut m: Map<'_>, r: &mut Report) {
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
    m.finish(r, NO_EQUIVALENT);
}

/// An `output` stage: the line becomes an extracted value.
fn output(p: &mut Pipeline, mut m: Map<'_>, r: &mut Report) {
    let Some(src) = m.text("source", r) else { return missing(&m, "source", r) };
    if !p.extracted(&src) {
        return p.unextracted(m.key("source"), &src, r);
    }
    p.stages.push(Stage::plain(Kind::Output(src)));
    m.finish(r, NO_EQUIVALENT);
}

/// A `replace` stage: a Go template as it is; plain text translated (its
/// capture groups extracted by a regex stage before it).
fn replace(p: &mut Pipeline, k: &str, mut m: Map<'_>, r: &mut Report) {
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
        return m.finish(r, NO_EQUIVALENT);
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
    m.finish(r, NO_EQUIVALENT);
}

/// A `drop` stage (its options read in `filters.rs`).
fn drop(p: &mut Pipeline, mut m: Map<'_>, r: &mut Report) {
    if let Some(rule) = filters::drop(&mut m, p, r) {
        p.stages.push(Stage::plain(Kind::Drop(rule)));
    }
    m.finish(r, NO_EQUIVALENT);
}

/// A `multiline` stage: first in the list, the source's rule; later, a
/// stage at its place.
fn multiline(p: &mut Pipeline, index: usize, mut m: Map<'_>, r: &mut Report) {
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
    m.finish(r, NO_EQUIVALENT);
}

/// A `geoip` stage: a city or asn database and the extracted address.
fn geoip(p: &mut Pipeline, k: &str, mut m: Map<'_>, r: &mut Report) {
    let Some(db) = m.text("db", r).filter(|d| !d.is_empty()) else {
        return r.refuse(m.key("db"), "db path cannot be empty (Promtail refuses it too)");
    };
    let db_type = m.text("db_type", r).unwrap_or_default();
    match db_type.as_str() {
        "city" | "asn" => {}
        "" => return r.refuse(m.key("db_type"), "db type should be either city or asn (Promtail refuses it too)"),
        other => return r.skip(m.key("db_type"), format!("`{other}`: Promtail looks nothing up with it")),
    }
    let Ok(src) = p.source(&mut m, r) else { return };
    let Some(src) = src else {
        return r.skip(k, "without `source`, Promtail's geoip stage looks nothing up: left out");
    };
    p.stages.push(Stage::plain(Kind::GeoIp(db, src, db_type)));
    m.finish(r, NO_EQUIVALENT);
}

/// A `sampling` stage: the share of lines kept.
fn sampling(p: &mut Pipeline, mut m: Map<'_>, r: &mut Report) {
    let Some(rate) = m.text("rate", r).and_then(|v| v.parse::<f64>().ok()) else {
        return missing(&m, "rate", r);
    };
    if !(rate > 0.0 && rate <= 1.0) {
        return r.skip(m.key("rate"), format!("{rate}: tailship keeps a share above 0 and at most 1"));
    }
    let reason = m.text("drop_counter_reason", r);
    p.stages.push(Stage::plain(Kind::Sampling(rate, reason)));
    m.finish(r, NO_EQUIVALENT);
}

/// A `pack` stage: the named labels packed into the line.
fn pack(p: &mut Pipeline, mut m: Map<'_>, r: &mut Report) {
    // Without labels, Promtail packs the line alone: {"_entry": ...}.
    let names = m.texts("labels", r);
    let ingest = m.text("ingest_timestamp", r).is_none_or(|v| truthy(&v));
    p.stages.push(Stage::plain(Kind::Pack(names, ingest)));
    m.finish(r, NO_EQUIVALENT);
}

/// A `template` stage: a Go template's result written to an extracted value.
fn template(p: &mut Pipeline, mut m: Map<'_>, r: &mut Report) {
    let Some(src) = m.text("source", r) else { return missing(&m, "source", r) };
    let text = m.text("template", r).unwrap_or_default();
    if let Err(e) = crate::pipeline::GoTemplate::parse(&text) {
        return r.skip(m.key("template"), format!("not a Go template tailship reads: {e}"));
    }
    p.stages.push(Stage::plain(Kind::Template(src, text)));
    m.finish(r, NO_EQUIVALENT);
}

/// A `tenant` stage (its options read in `filters.rs`): a fixed value is
/// the source's tenant, except under a `match` (`index` is `usize::MAX`).
fn tenant(p: &mut Pipeline, index: usize, mut m: Map<'_>, r: &mut Report) {
    match filters::tenant(&mut m, p, r) {
        // Under a match, the lines it selects only.
        Some(Tenant::Fixed(v)) if index == usize::MAX => p.stages.push(Stage::plain(Kind::Tenant("value", v))),
        Some(Tenant::Fixed(v)) => p.tenant = Some(v),
        Some(Tenant::Stage(from, name)) => p.stages.push(Stage::plain(Kind::Tenant(from, name))),
        None => {}
    }
    m.finish(r, NO_EQUIVALENT);
}

/// A `json` stage: its expressions as tailship paths where they are plain.
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

/// A `timestamp` stage: its formats translated from Go layouts and checked.
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

/// A `limit` stage: a rate, a burst, per label value if asked.
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
pub(super) fn compiles(key: &str, re: &str, r: &mut Report) -> Option<Regex> {
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

pub(super) fn missing(m: &Map<'_>, key: &str, r: &mut Report) {
    r.skip(m.key(key), "missing: the stage is left out");
}

/// Why a Promtail stage has no tailship equivalent.
pub(super) fn unsupported(name: &str) -> String {
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
