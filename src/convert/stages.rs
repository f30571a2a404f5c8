//! Promtail `pipeline_stages` as tailship `stages`.
//!
//! The stages keep their order, and so does the extracted map they share:
//! `labels` and `structured_metadata` become stages of their own at the same
//! place, `source` keys carry over. `static_labels` and a `tenant` with a
//! fixed `value` become the source's `labels` and `tenant_id`; a leading
//! `multiline` becomes the source's `multiline` rule; `drop` and `tenant`
//! are read in `filters.rs`. Each stage is checked the way `tailship check` will
//! check it (regexes, JSON paths, time formats, label names), so a stage
//! that would not compile is reported instead of written.

use regex::Regex;

use super::filters::{self, DropRule, Tenant};
use super::golayout;
use super::render::Val;
use super::replace;
use super::yaml::{pairs, scalar, truthy, Map, Report};
use crate::pipeline::{JsonPath, TimeFormat};
use crate::util::is_valid_label_name;
use yaml_rust2::Yaml;

/// What a job's pipeline becomes.
#[derive(Debug, Clone, Default)]
pub struct Pipeline {
    pub stages: Vec<Stage>,
    pub multiline: Option<Val>,
    /// `static_labels`, in order (later ones win).
    pub static_labels: Vec<(String, String)>,
    /// `labeldrop` names: labels the source must not have.
    pub drop_labels: Vec<String>,
    pub tenant: Option<String>,
    /// A `structured_metadata` stage was translated: the client must send it.
    pub metadata: bool,
}

#[derive(Debug, Clone)]
pub struct Stage {
    pub(super) kind: Kind,
    labels: Option<Vec<String>>,
    metadata: Option<Vec<String>>,
}

/// A tailship stage; `Option<String>` is the `source` a stage reads instead of the line.
#[derive(Debug, Clone)]
pub(super) enum Kind {
    /// The regex and its named captures.
    Regex(String, Vec<String>, Option<String>),
    Json(Vec<(String, String)>, Option<String>),
    Logfmt(Vec<(String, String)>, Option<String>),
    Drop(DropRule),
    Timestamp(String, String),
    Output(String),
    Replace(String, String, Option<String>),
    Cri,
    Docker,
    Limit(f64, Option<i64>),
    /// `tenant = { source | label = name }`.
    Tenant(&'static str, String),
    /// A stage of `(label, extracted name)` picks only: labels, then structured metadata.
    Labels(Vec<(String, String)>, Vec<(String, String)>),
}

impl Stage {
    pub(super) fn plain(kind: Kind) -> Self {
        Self { kind, labels: None, metadata: None }
    }

    /// The names this stage extracts.
    fn extracts(&self) -> Vec<String> {
        match &self.kind {
            Kind::Regex(_, names, _) => names.clone(),
            Kind::Json(f, _) | Kind::Logfmt(f, _) => f.iter().map(|(n, _)| n.clone()).collect(),
            Kind::Cri | Kind::Docker => vec!["stream".into()],
            _ => Vec::new(),
        }
    }

    /// An empty `logfmt` table extracts every key.
    fn extracts_any(&self) -> bool {
        matches!(&self.kind, Kind::Logfmt(f, _) if f.is_empty())
    }

    /// The stage as a TOML inline table.
    pub fn to_val(&self) -> Val {
        let mut t: Vec<(String, Val)> = match &self.kind {
            Kind::Regex(re, _, src) => sourced(vec![("regex".into(), Val::str(re))], src),
            Kind::Json(f, src) => sourced(vec![("json".into(), Val::pairs(f))], src),
            Kind::Logfmt(f, src) => sourced(vec![("logfmt".into(), Val::pairs(f))], src),
            Kind::Drop(rule) => rule.to_vals(),
            Kind::Timestamp(s, f) => vec![(
                "timestamp".into(),
                Val::Table(vec![("source".into(), Val::str(s)), ("format".into(), Val::str(f))]),
            )],
            Kind::Output(s) => vec![("output".into(), Val::str(s))],
            Kind::Replace(re, with, src) => {
                sourced(vec![("replace".into(), Val::str(re)), ("with".into(), Val::str(with))], src)
            }
            Kind::Cri => vec![("cri".into(), Val::Table(Vec::new()))],
            Kind::Docker => vec![("docker".into(), Val::Table(Vec::new()))],
            Kind::Limit(rate, burst) => {
                let mut l = vec![("rate".into(), Val::Float(*rate))];
                if let Some(b) = burst {
                    l.push(("burst".into(), Val::Int(*b)));
                }
                vec![("limit".into(), Val::Table(l))]
            }
            Kind::Tenant(from, name) => vec![("tenant".into(), Val::Table(vec![((*from).into(), Val::str(name))]))],
            Kind::Labels(labels, metadata) => {
                let mut t = Vec::new();
                if !labels.is_empty() {
                    t.push(("labels".into(), picks(labels)));
                }
                if !metadata.is_empty() {
                    t.push(("structured_metadata".into(), picks(metadata)));
                }
                t
            }
        };
        // A regex stage without `labels` would make every capture a label; Promtail makes none.
        let labels = match (&self.kind, &self.labels) {
            (Kind::Regex(..), None) => Some(Vec::new()),
            (_, l) => l.clone(),
        };
        if let Some(l) = labels {
            t.push(("labels".into(), Val::strs(&l)));
        }
        if let Some(m) = &self.metadata {
            t.push(("structured_metadata".into(), Val::strs(m)));
        }
        Val::Table(t)
    }
}

impl Pipeline {
    pub(super) fn extracted(&self, name: &str) -> bool {
        self.stages.iter().any(|s| s.extracts_any() || s.extracts().iter().any(|n| n == name))
    }

    /// Leaves out the `cri` and `docker` stages (a journal entry is no
    /// container log line, and tailship refuses them there); reports them.
    pub fn drop_container_stages(&mut self, key: &str, r: &mut Report) {
        let before = self.stages.len();
        self.stages.retain(|s| !matches!(s.kind, Kind::Cri | Kind::Docker));
        if self.stages.len() != before {
            r.skip(key, "cri and docker stages read container log files; on a journal job they are left out");
        }
    }

    /// Drops the `labeldrop` names from the extracted labels.
    pub fn apply_label_drops(&mut self) {
        let drops = self.drop_labels.clone();
        for s in &mut self.stages {
            if let Some(l) = &mut s.labels {
                l.retain(|n| !drops.contains(n));
            }
            if let Kind::Labels(l, _) = &mut s.kind {
                l.retain(|(n, _)| !drops.contains(n));
            }
        }
        self.stages.retain(|s| !matches!(&s.kind, Kind::Labels(l, m) if l.is_empty() && m.is_empty()));
    }

    /// A label a line of this job has before a stage sets one: a static
    /// label, or one a `labels` stage so far set.
    pub(super) fn may_be_label(&self, name: &str) -> bool {
        self.static_labels.iter().any(|(l, _)| l == name)
            || self.stages.iter().any(|s| matches!(&s.kind, Kind::Labels(l, _) if l.iter().any(|(n, _)| n == name)))
    }

    /// `source` of a stage, checked: `Err` when no translated stage extracts it.
    pub(super) fn source(&self, m: &mut Map<'_>, r: &mut Report) -> Result<Option<String>, ()> {
        let Some(src) = m.text("source", r) else { return Ok(None) };
        if self.extracted(&src) {
            return Ok(Some(src));
        }
        r.skip(m.key("source"), format!("`{src}` is not extracted by a translated stage: the stage is left out"));
        Err(())
    }
}

/// Converts the `pipeline_stages` list at `key`.
pub fn convert(key: &str, items: &[Yaml], r: &mut Report) -> Pipeline {
    let mut p = Pipeline::default();
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
        stage(&mut p, i, &k, &name, body, r);
    }
    p.apply_label_drops();
    p
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
];

fn stage(p: &mut Pipeline, index: usize, k: &str, name: &str, body: &Yaml, r: &mut Report) {
    match name {
        "labels" | "structured_metadata" => {
            let mut picked = Vec::new();
            for (label, source) in pairs(k, body, r) {
                if let Some(pair) = pick(p, &format!("{k}.{label}"), name == "labels", &label, &source, r) {
                    picked.push(pair);
                }
            }
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
                    p.static_labels.retain(|(l, _)| *l != label);
                    p.static_labels.push((label, value));
                } else {
                    r.skip(format!("{k}.{label}"), "not a valid label name");
                }
            }
        }
        "labeldrop" => {
            for l in super::yaml::list(k, Some(body), r).iter().filter_map(scalar) {
                if l == "filename" {
                    r.skip(k, "tailship always labels file lines with `filename`");
                }
                p.drop_labels.push(l);
            }
        }
        n if MAPPED.contains(&n) => mapped(p, index, k, name, body, r),
        _ => r.skip(k, unsupported(name)),
    }
}

fn mapped(p: &mut Pipeline, index: usize, k: &str, name: &str, body: &Yaml, r: &mut Report) {
    let mut m = Map::new(k, body, r);
    match name {
        "docker" | "cri" => {
            p.stages.push(Stage::plain(if name == "cri" { Kind::Cri } else { Kind::Docker }));
            for opt in ["max_partial_lines", "max_partial_line_size", "max_partial_line_size_truncate"] {
                if m.get(opt).is_some() {
                    r.note(m.key(opt), "tailship joins partial lines up to the source's max_line_bytes (256 KiB)");
                }
            }
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
                return r.skip(m.key("source"), format!("`{src}` is not extracted by a translated stage"));
            }
            p.stages.push(Stage::plain(Kind::Output(src)));
        }
        "replace" => {
            let Some(expr) = m.text("expression", r) else { return missing(&m, "expression", r) };
            let Ok(src) = p.source(&mut m, r) else { return };
            let with = m.text("replace", r).unwrap_or_default();
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
            let extracted = |n: &str| p.extracted(n);
            if let Some(rule) = filters::drop(&mut m, &extracted, r) {
                p.stages.push(Stage::plain(Kind::Drop(rule)));
            }
        }
        "limit" => limit(p, &mut m, r),
        "multiline" => {
            if index > 0 {
                return r.skip(
                    k,
                    "tailship joins lines before the stages run; a multiline stage after other stages has no \
                     equivalent (make it the first stage)",
                );
            }
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
            p.multiline = Some(Val::Table(t));
        }
        "tenant" => {
            let (extracted, label) = (|n: &str| p.extracted(n), |n: &str| p.may_be_label(n));
            match filters::tenant(&mut m, &extracted, &label, r) {
                Some(Tenant::Fixed(v)) => p.tenant = Some(v),
                Some(Tenant::Stage(from, name)) => p.stages.push(Stage::plain(Kind::Tenant(from, name))),
                None => {}
            }
        }
        _ => return r.skip(k, unsupported(name)),
    }
    m.finish(r, "no tailship equivalent");
}

fn json(p: &mut Pipeline, m: &mut Map<'_>, r: &mut Report) {
    let Ok(src) = p.source(m, r) else { return };
    if m.text("drop_malformed", r).is_some_and(|v| truthy(&v)) {
        r.skip(m.key("drop_malformed"), "tailship passes a line that is not JSON on unchanged (and counts it)");
    }
    let mut fields = Vec::new();
    for (n, expr) in m.pairs("expressions", r) {
        let expr = if expr.is_empty() { n.clone() } else { expr };
        match jmespath(&expr) {
            Some(path) if JsonPath::parse(&path).is_ok() => fields.push((n, path)),
            _ => r.skip(
                format!("{}.{n}", m.key("expressions")),
                format!("the JMESPath `{expr}` is not a plain path (a.b[0].c); tailship's json stage takes paths only"),
            ),
        }
    }
    if fields.is_empty() {
        return r.skip(m.key("expressions"), "no expression could be translated: the json stage is left out");
    }
    p.stages.push(Stage::plain(Kind::Json(fields, src)));
}

/// A JMESPath of identifiers, quoted identifiers and indexes as a tailship path.
fn jmespath(expr: &str) -> Option<String> {
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
        r.skip(k, format!("`{source}` is not extracted by a translated stage"));
        return None;
    }
    Some((label.to_string(), source.to_string()))
}

/// `(label, extracted name)` pairs: a list of names when none renames.
fn picks(pairs: &[(String, String)]) -> Val {
    if pairs.iter().all(|(l, s)| l == s) {
        Val::strs(&pairs.iter().map(|(l, _)| l.clone()).collect::<Vec<_>>())
    } else {
        Val::pairs(pairs)
    }
}

/// `t` with `source = src` when the stage reads an extracted value.
fn sourced(mut t: Vec<(String, Val)>, src: &Option<String>) -> Vec<(String, Val)> {
    if let Some(s) = src {
        t.push(("source".into(), Val::str(s)));
    }
    t
}

fn timestamp(p: &mut Pipeline, m: &mut Map<'_>, r: &mut Report) {
    let Some(src) = m.text("source", r) else { return missing(m, "source", r) };
    let Some(format) = m.text("format", r) else { return missing(m, "format", r) };
    if !p.extracted(&src) {
        return r.skip(m.key("source"), format!("`{src}` is not extracted by a translated stage"));
    }
    let ours = match golayout::translate(&format) {
        Ok(f) => f,
        Err(why) => return r.skip(m.key("format"), why),
    };
    if let Err(e) = TimeFormat::parse(&ours) {
        return r.skip(m.key("format"), format!("translated to `{ours}`, which tailship refuses: {e}"));
    }
    if m.get("fallback_formats").is_some() {
        r.skip(m.key("fallback_formats"), "tailship tries one format; a line it cannot read keeps its read time");
    }
    if m.get("location").is_some() {
        r.skip(m.key("location"), "tailship reads a time without an offset as UTC");
    }
    match m.text("action_on_failure", r).as_deref() {
        Some("fudge") => r.note(
            m.key("action_on_failure"),
            "tailship keeps the read time of a line whose time it cannot read (Promtail's `skip`)",
        ),
        Some("skip") | None => {}
        Some(other) => r.skip(m.key("action_on_failure"), format!("unknown action `{other}`")),
    }
    p.stages.push(Stage::plain(Kind::Timestamp(src, ours)));
}

fn limit(p: &mut Pipeline, m: &mut Map<'_>, r: &mut Report) {
    let Some(rate) = m.text("rate", r).and_then(|v| v.parse::<f64>().ok()).filter(|v| *v > 0.0) else {
        return r.skip(m.key("rate"), "needs a rate above 0");
    };
    let burst = m.text("burst", r).and_then(|v| v.parse::<i64>().ok()).filter(|b| *b > 0);
    let drop = m.text("drop", r).is_some_and(|v| truthy(&v));
    if !drop {
        r.note(
            m.key("drop"),
            "Promtail waits when over the limit (drop: false); tailship drops and counts the lines over it \
             (tailship_lines_dropped_total{reason=\"limit\"})",
        );
    }
    if m.text("by_label_name", r).is_some() || m.get("max_distinct_labels").is_some() {
        r.note(m.key("by_label_name"), "tailship limits each stream separately (not by one label)");
    } else {
        r.note(m.key("rate"), "Promtail limits the whole job; tailship limits each stream of it separately");
    }
    p.stages.push(Stage::plain(Kind::Limit(rate, burst)));
}

/// Compiles `re` as `tailship check` will; reports it when it does not.
fn compiles(key: &str, re: &str, r: &mut Report) -> Option<Regex> {
    match Regex::new(re) {
        Ok(re) => Some(re),
        Err(e) => {
            let e = e.to_string();
            r.skip(key, format!("not a regex tailship reads: {}", e.lines().last().unwrap_or("")));
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
        "match" => "match stages (conditional stages by selector) have no tailship equivalent: give those \
                    lines their own source, or leave the stages out"
            .into(),
        "template" => "Go templates have no tailship equivalent".into(),
        "pack" => "pack has no tailship equivalent (structured_metadata keeps values beside the line)".into(),
        "metrics" => {
            "metrics from log lines have no tailship equivalent (count them in the log service instead)".into()
        }
        "labelallow" => "labelallow has no tailship equivalent: list the labels to keep on the stages".into(),
        "decolorize" => "no tailship equivalent: add { replace = '\\x1b\\[[0-9;]*m', with = \"\" }".into(),
        "sampling" | "geoip" | "eventlogmessage" | "truncate" | "luhn" => format!("no tailship `{name}` stage"),
        other => format!("unknown stage `{other}`"),
    }
}

#[cfg(test)]
mod tests {
    use super::jmespath;

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
