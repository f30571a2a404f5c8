//! Compiling a source's `stages` list, each problem reported with its key.
//!
//! Names are checked in order, as Promtail's extracted map fills: a stage
//! that reads a value (`source`, `labels`, `output`, `timestamp`, `tenant`)
//! must come after one that extracts it.

use super::names::{regex, Names};
use crate::config::{DropSpec, MatchStage, Picks, SourceConfig, SourceType, StageConfig};
use crate::pipeline::{GoTemplate, JsonField, Op, Stage, TenantFrom, TimeFormat, Truncated};
use crate::util::is_valid_label_name;

/// The keys that name what a stage does; at most one is set per stage.
const KINDS: &str = "`regex`, `json`, `logfmt`, `drop`, `timestamp`, `output`, `replace`, `cri`, `docker`, \
                     `limit`, `tenant`, `match`, `template`, `decolorize`, `labelallow`, `static_labels`, `labeldrop`, `truncate`, `sampling`, `pack`, `metrics`, `multiline` or `geoip` \
                     (or only `labels` / `structured_metadata`)";

/// Terminal escape sequences: colours (`ESC[31m`), cursor moves, titles (the
/// widely used ansi-regex pattern, which Loki's decolorizer also uses).
const ANSI_ESCAPES: &str = r"[\x1b\x{9b}][\[\]()#;?]*(?:(?:(?:[a-zA-Z\d]*(?:;[a-zA-Z\d]*)*)?\x07)|(?:(?:\d{1,4}(?:;\d{0,4})*)?[\dA-PRZcf-ntqry=><~]))";

/// The `stages` list of a source, in order, the stages of a `match` inline
/// after it, and the labels a line may leave them with (the source's and
/// those stages set). `metadata_on` is `client.structured_metadata`.
pub fn compile(
    key: &str,
    s: &SourceConfig,
    metadata_on: bool,
    errors: &mut Vec<(String, String)>,
) -> (Vec<Stage>, Vec<String>) {
    let mut out = Vec::new();
    let labels: Vec<String> = s.labels.keys().cloned().collect();
    let mut names = Names { labels: labels.clone(), initial: labels, ..Default::default() };
    // A docker or kubernetes source parses its lines before the stages (see
    // plan::source): each line's `stream` is extracted for them to read.
    if matches!(s.kind, SourceType::Docker | SourceType::Kubernetes) {
        names.known.push("stream".into());
    }
    let mut list = List { kind: s.kind, metadata_on, names: &mut names, out: &mut out, errors };
    list.stages(&format!("{key}.stages"), &s.stages);
    let mut labels = names.labels;
    labels.sort();
    labels.dedup();
    (out, labels)
}

/// What compiling one list of stages (a source's, or a `match`'s) works on.
struct List<'a> {
    kind: SourceType,
    metadata_on: bool,
    names: &'a mut Names,
    out: &'a mut Vec<Stage>,
    errors: &'a mut Vec<(String, String)>,
}

impl List<'_> {
    fn stages(&mut self, prefix: &str, stages: &[StageConfig]) {
        for (i, st) in stages.iter().enumerate() {
            let sk = format!("{prefix}[{i}]");
            if let Some(m) = &st.match_ {
                self.matching(&sk, st, m);
                continue;
            }
            self.one(&sk, st);
        }
    }

    /// A `match` stage, then its own stages.
    fn matching(&mut self, sk: &str, st: &StageConfig, m: &MatchStage) {
        let before = self.errors.len();
        let mut e = |k: &str, msg: String| self.errors.push((format!("{sk}.match{k}"), msg));
        if kinds(st) > 1 || st.labels.is_some() || st.structured_metadata.is_some() || st.source.is_some() {
            e("", format!("a stage needs exactly one of {KINDS}"));
        }
        let selector = match crate::logql::parse_match_selector(&m.selector, crate::pipeline::re2::compile) {
            Ok(sel) => Some(sel),
            Err(err) => {
                e(".selector", format!("not a selector (`{{app=\"web\"}} |= \"error\"`): {err}"));
                None
            }
        };
        let drop = match m.action.as_deref() {
            None | Some("keep") => false,
            Some("drop") => true,
            Some(other) => {
                e(".action", format!("`{other}`: use \"keep\" or \"drop\""));
                false
            }
        };
        match (drop, m.stages.is_empty()) {
            (true, false) => e(".stages", "a match that drops its lines runs no stages".into()),
            (false, true) => e(".stages", "a match that keeps its lines needs stages to run on them".into()),
            _ => {}
        }
        if m.reason.as_deref() == Some("") {
            e(".reason", "empty: leave it out for `match_stage`".into());
        }
        let Some(selector) = selector.filter(|_| self.errors.len() == before) else { return };
        let reason = m.reason.clone().unwrap_or_else(|| "match_stage".into());
        let at = self.out.len();
        self.out.push(Stage::plain(Op::Match { selector, drop, skip: 0, reason }));
        self.stages(&format!("{sk}.match.stages"), &m.stages);
        let inner = self.out.len() - at - 1;
        if let Op::Match { skip, .. } = &mut self.out[at].op {
            *skip = inner;
        }
    }

    fn one(&mut self, sk: &str, st: &StageConfig) {
        let before = self.errors.len();
        let Some(op) = op(sk, st, self.kind, self.names, self.errors) else { return };
        let labels = picks(sk, "labels", st.labels.as_ref(), &op, self.names, self.errors);
        self.names.labels.extend(labels.iter().map(|(l, _)| l.clone()));
        let metadata = picks(sk, "structured_metadata", st.structured_metadata.as_ref(), &op, self.names, self.errors);
        if st.structured_metadata.is_some() && !self.metadata_on {
            self.errors.push((
                format!("{sk}.structured_metadata"),
                "structured metadata is sent only with `client.structured_metadata = true`: Loki 3 stores it, \
                 but the log service in spec/ documents [timestamp, line] pairs only, so it is off unless you turn it on"
                    .into(),
            ));
        }
        if self.errors.len() == before {
            // A regex stage without `labels` makes every named capture a label.
            let labels = match (&op, &st.labels) {
                (Op::Regex { names, .. }, None) => names.iter().map(|n| (n.clone(), n.clone())).collect(),
                (Op::Cri(..) | Op::Docker, None) => vec![("stream".to_string(), "stream".to_string())],
                _ => labels,
            };
            self.out.push(Stage { op, labels, metadata });
        }
    }
}

/// How many of the keys that name what a stage does are set.
fn kinds(st: &StageConfig) -> usize {
    [
        st.regex.is_some(),
        st.json.is_some(),
        st.logfmt.is_some(),
        st.drop.is_some(),
        st.timestamp.is_some(),
        st.output.is_some(),
        st.replace.is_some(),
        st.cri.is_some(),
        st.docker.is_some(),
        st.limit.is_some(),
        st.tenant.is_some(),
        st.match_.is_some(),
        st.template.is_some(),
        st.decolorize.is_some(),
        st.labelallow.is_some(),
        st.static_labels.is_some(),
        st.labeldrop.is_some(),
        st.truncate.is_some(),
        st.sampling.is_some(),
        st.pack.is_some(),
        st.metrics.is_some(),
        st.multiline.is_some(),
        st.geoip.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count()
}

/// The stage's operation; records what it extracts in `names`.
fn op(
    sk: &str,
    st: &StageConfig,
    kind: SourceType,
    names: &mut Names,
    errors: &mut Vec<(String, String)>,
) -> Option<Op> {
    let mut e = |k: &str, m: String| errors.push((format!("{sk}{k}"), m));
    let set = kinds(st);
    let picks_only = st.labels.is_some() || st.structured_metadata.is_some();
    if set > 1 || (set == 0 && !picks_only) {
        e("", format!("a stage needs exactly one of {KINDS}"));
        return None;
    }
    if st.with.is_some() && st.replace.is_none() {
        e(".with", "`with` goes with a `replace` stage".into());
    }
    if st.with_template.is_some() && st.replace.is_none() {
        e(".with_template", "`with_template` goes with a `replace` stage".into());
    }
    if st.drop_malformed.is_some() && st.json.is_none() {
        e(".drop_malformed", "`drop_malformed` goes with a `json` stage".into());
    }
    let reads_source = st.regex.is_some()
        || st.json.is_some()
        || st.logfmt.is_some()
        || st.replace.is_some()
        || matches!(st.drop, Some(DropSpec::Regex(_)));
    let source = match &st.source {
        Some(_) if !reads_source => {
            e(
                ".source",
                "`source` goes with a regex, json, logfmt or replace stage, or a drop regex \
                 (a drop table takes its own `source`)"
                    .into(),
            );
            None
        }
        Some(src) if src.is_empty() => {
            e(".source", "empty: name an extracted value".into());
            None
        }
        Some(src) if !names.has(src) => {
            e(".source", format!("`{src}` is not extracted by an earlier stage"));
            None
        }
        other => other.clone(),
    };
    if let Some(r) = &st.regex {
        let re = regex(".regex", r, &mut e)?;
        let found: Vec<String> = re.capture_names().flatten().map(String::from).collect();
        if found.is_empty() {
            e(".regex", "has no named capture (?P<name>...) to extract".into());
        }
        names.known.extend(found.iter().cloned());
        return Some(Op::Regex { re, names: found, source });
    }
    if let Some(fields) = &st.json {
        let mut out = Vec::new();
        for (name, path) in fields {
            match JsonField::parse(path) {
                Ok(p) => out.push((name.clone(), p)),
                Err(m) => e(&format!(".json.{name}"), m),
            }
            names.known.push(name.clone());
        }
        names.any |= fields.is_empty();
        let drop_malformed = st.drop_malformed.unwrap_or(false);
        return Some(Op::Json { fields: out, source, drop_malformed });
    }
    if let Some(fields) = &st.logfmt {
        for (name, key) in fields {
            if key.is_empty() || key.contains(['=', '"', ' ']) {
                e(&format!(".logfmt.{name}"), format!("`{key}` is not a logfmt key"));
            }
            names.known.push(name.clone());
        }
        names.any |= fields.is_empty();
        let fields = fields.iter().map(|(n, k)| (n.clone(), k.clone())).collect();
        return Some(Op::Logfmt { fields, source });
    }
    if let Some(d) = &st.drop {
        return super::drop::compile(d, source, names, &mut e).map(Op::Drop);
    }
    if let Some(t) = &st.timestamp {
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
        return (formats.len() == 1 + t.fallback_formats.len()).then(|| Op::Timestamp {
            source: t.source.clone(),
            formats,
            fudge,
        });
    }
    if let Some(o) = &st.output {
        if !names.has(o) {
            e(".output", format!("`{o}` is not extracted by an earlier stage"));
        }
        return Some(Op::Output(o.clone()));
    }
    if let Some(r) = &st.replace {
        if let Some(t) = &st.with_template {
            if st.with.is_some() {
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
            let re = regex(".replace", r, &mut e)?;
            names.known.extend(re.capture_names().flatten().map(String::from));
            return Some(Op::ReplaceGroups { re, template, source });
        }
        let Some(with) = &st.with else {
            e(".with", "a `replace` stage needs `with`, the replacement text (\"\" removes the matches)".into());
            return None;
        };
        return regex(".replace", r, &mut e).map(|re| Op::Replace { re, with: with.clone(), source });
    }
    if st.cri.is_some() || st.docker.is_some() {
        if !kind.reads_files() {
            let k = if st.cri.is_some() { "cri" } else { "docker" };
            e(&format!(".{k}"), format!("`{k}` parses container runtimes' log files; use it on a file source"));
            return None;
        }
        names.known.push("stream".into());
        let Some(c) = &st.cri else { return Some(Op::Docker) };
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
        return Some(Op::Cri(part_max, c.max_partial_lines.unwrap_or(100) as usize));
    }
    if let Some(t) = &st.tenant {
        return match (&t.source, &t.label, &t.value) {
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
            (None, None, Some(v)) if !v.is_empty() => Some(Op::Tenant(TenantFrom::Value(v.clone()))),
            _ => {
                e(
                    ".tenant",
                    "needs exactly one of `source` (an extracted value), `label` or `value` (not empty)".into(),
                );
                None
            }
        };
    }
    if let Some(set) = &st.static_labels {
        if let Some(bad) = set.keys().find(|l| !is_valid_label_name(l)) {
            e(&format!(".static_labels.{bad}"), "not a valid label name".into());
            return None;
        }
        // An empty value sets nothing (as in Promtail).
        let set: Vec<(String, String)> =
            set.iter().filter(|(_, v)| !v.is_empty()).map(|(k, v)| (k.clone(), v.clone())).collect();
        names.labels.extend(set.iter().map(|(k, _)| k.clone()));
        return Some(Op::StaticLabels(set));
    }
    if let Some(drop) = &st.labeldrop {
        if let Some(bad) = drop.iter().find(|l| !is_valid_label_name(l)) {
            e(".labeldrop", format!("`{bad}` is not a valid label name"));
            return None;
        }
        return Some(Op::LabelDrop(drop.clone()));
    }
    if let Some(allow) = &st.labelallow {
        if allow.is_empty() {
            e(".labelallow", "empty: it would take every label away".into());
            return None;
        }
        if let Some(bad) = allow.iter().find(|l| !is_valid_label_name(l)) {
            e(".labelallow", format!("`{bad}` is not a valid label name"));
            return None;
        }
        names.labels.retain(|l| allow.contains(l));
        return Some(Op::LabelAllow(allow.clone()));
    }
    if st.decolorize.is_some() {
        return regex(".decolorize", ANSI_ESCAPES, &mut e).map(Op::Decolorize);
    }
    if let Some(t) = &st.template {
        if t.source.is_empty() {
            e(".template.source", "empty: name the extracted value the template writes".into());
            return None;
        }
        return match GoTemplate::parse(&t.template) {
            Ok(template) => {
                names.known.push(t.source.clone());
                Some(Op::Template { source: t.source.clone(), template })
            }
            Err(m) => {
                e(".template.template", format!("not a Go template tailship reads: {m}"));
                None
            }
        };
    }
    if let Some(t) = &st.truncate {
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
        return Some(Op::Truncate { limit, suffix: t.suffix.clone(), target });
    }
    if let Some(sm) = &st.sampling {
        if !(sm.rate > 0.0 && sm.rate <= 1.0) {
            e(".sampling.rate", "the share of lines kept: above 0 and at most 1".into());
            return None;
        }
        let reason = sm.reason.clone().unwrap_or_else(|| "sampling_stage".into());
        return Some(Op::Sampling { rate: sm.rate, reason });
    }
    if let Some(pk) = &st.pack {
        // A name without a value on a line is left out of it (a label may come from discovery).
        names.labels.retain(|l| !pk.labels.contains(l));
        return Some(Op::Pack { labels: pk.labels.clone(), ingest_timestamp: pk.ingest_timestamp.unwrap_or(true) });
    }
    if let Some(m) = &st.metrics {
        return super::metrics::compile(m, names, &mut e).map(Op::Metrics);
    }
    if let Some(g) = &st.geoip {
        return super::geoip::compile(g, names, &mut e).map(Op::GeoIp);
    }
    if let Some(m) = &st.multiline {
        if kind == SourceType::Journal {
            e(
                ".multiline",
                "journal entries are whole already: a multiline stage goes on a file or stdin source".into(),
            );
            return None;
        }
        if m.start.is_empty() {
            e(".multiline.start", "missing: the regex of a line that starts an entry".into());
            return None;
        }
        if m.max_lines == 0 {
            e(".multiline.max_lines", "must be at least 1".into());
            return None;
        }
        let start = regex(".multiline.start", &m.start, &mut e)?;
        return Some(Op::Multiline { start, max_lines: m.max_lines, max_wait: m.max_wait.get() });
    }
    let Some(l) = st.limit.as_ref() else { return Some(Op::Labels) };
    if !(l.rate.is_finite() && l.rate > 0.0) {
        e(".limit.rate", "must be a number of lines per second above 0".into());
        return None;
    }
    // Without a burst, a second's worth of lines may come at once.
    let burst = if l.burst == 0 { l.rate.ceil().max(1.0) } else { f64::from(l.burst) };
    let drop = l.drop.unwrap_or(true);
    if !drop && l.by_label_name.is_some() {
        e(".limit.drop", "must be true with by_label_name (Promtail refuses it too)".into());
        return None;
    }
    let by_label = match &l.by_label_name {
        None => None,
        Some(n) if !is_valid_label_name(n) => {
            e(".limit.by_label_name", format!("`{n}` is not a valid label name"));
            return None;
        }
        Some(n) => Some(crate::pipeline::ByLabel {
            name: n.clone(),
            max_values: l.max_distinct_labels.unwrap_or(0).max(10_000) as usize,
            buckets: Default::default(),
        }),
    };
    Some(Op::Limit { rate: l.rate, burst, by_label, drop, bucket: Default::default() })
}

/// The `(label, extracted name)` pairs a stage's `labels` or
/// `structured_metadata` picks, checked.
fn picks(
    sk: &str,
    field: &str,
    list: Option<&Picks>,
    op: &Op,
    names: &Names,
    errors: &mut Vec<(String, String)>,
) -> Vec<(String, String)> {
    let Some(list) = list else { return Vec::new() };
    if !matches!(op, Op::Regex { .. } | Op::Json { .. } | Op::Logfmt { .. } | Op::Cri(..) | Op::Docker | Op::Labels) {
        errors.push((
            format!("{sk}.{field}"),
            format!(
                "`{field}` goes with a stage that extracts values (regex, json, logfmt, cri, docker) or stands alone"
            ),
        ));
        return Vec::new();
    }
    for (label, src) in &list.0 {
        if !is_valid_label_name(label) {
            errors.push((format!("{sk}.{field}"), format!("`{label}` is not a valid label name")));
        } else if !(names.has(src) || (field == "structured_metadata" && names.may_be_label(src))) {
            let what = match op {
                Op::Regex { .. } => "a named capture of the regex",
                _ => "extracted by this or an earlier stage",
            };
            errors.push((format!("{sk}.{field}.{label}"), format!("`{src}` is not {what}")));
        }
    }
    list.0.clone()
}
