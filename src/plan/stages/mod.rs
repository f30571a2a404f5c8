//! Compiling a source's `stages` list, each problem reported with its key.
//!
//! Names are checked in order, as Promtail's extracted map fills: a stage
//! that reads a value (`source`, `labels`, `output`, `timestamp`, `tenant`)
//! must come after one that extracts it.
//!
//! This file walks the list (and `match` stages) and checks the keys every
//! stage shares; each stage's own compilation is beside its family:
//! `parsing.rs` (regex, json, logfmt, cri, docker), `rewrite.rs` (output,
//! replace, template, decolorize, truncate), `labels.rs` (tenant,
//! static_labels, labeldrop, labelallow, pack), `time.rs` (timestamp),
//! `flow.rs` (limit, sampling, multiline), `drop.rs`, `metrics.rs`,
//! `geoip.rs`. What the stages do to a line is in `crate::pipeline`.

mod drop;
mod flow;
mod geoip;
mod labels;
pub(super) mod metrics;
mod parsing;
mod rewrite;
mod time;

use crate::config::{DropSpec, MatchStage, Picks, SourceConfig, SourceType, StageConfig};
use crate::pipeline::{Op, Stage};
use crate::plan::names::{Errors, Names};
use crate::util::is_valid_label_name;

/// The keys that name what a stage does; at most one is set per stage.
const KINDS: &str = "`regex`, `json`, `logfmt`, `drop`, `timestamp`, `output`, `replace`, `cri`, `docker`, \
                     `limit`, `tenant`, `match`, `template`, `decolorize`, `labelallow`, `static_labels`, `labeldrop`, `truncate`, `sampling`, `pack`, `metrics`, `multiline` or `geoip` \
                     (or only `labels` / `structured_metadata`)";

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

/// The stage's operation, compiled beside its family (`parsing`, `rewrite`,
/// `labels`, `time`, `flow`, `drop`, `metrics`, `geoip`); records what it
/// extracts in `names`.
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
    let source = keys_that_go_with(st, names, &mut e);
    if let Some(r) = &st.regex {
        return parsing::regex(r, source, names, &mut e);
    }
    if let Some(fields) = &st.json {
        return Some(parsing::json(fields, source, st.drop_malformed.unwrap_or(false), names, &mut e));
    }
    if let Some(fields) = &st.logfmt {
        return Some(parsing::logfmt(fields, source, names, &mut e));
    }
    if let Some(d) = &st.drop {
        return drop::compile(d, source, names, &mut e).map(Op::Drop);
    }
    if let Some(t) = &st.timestamp {
        return time::timestamp(t, names, &mut e);
    }
    if let Some(o) = &st.output {
        return Some(rewrite::output(o, names, &mut e));
    }
    if let Some(r) = &st.replace {
        return rewrite::replace(r, st.with.as_deref(), st.with_template.as_deref(), source, names, &mut e);
    }
    if st.cri.is_some() || st.docker.is_some() {
        return parsing::container(st.cri.as_ref(), kind, names, &mut e);
    }
    if let Some(t) = &st.tenant {
        return labels::tenant(t, names, &mut e);
    }
    if let Some(set) = &st.static_labels {
        return labels::static_labels(set, names, &mut e);
    }
    if let Some(drop) = &st.labeldrop {
        return labels::labeldrop(drop, &mut e);
    }
    if let Some(allow) = &st.labelallow {
        return labels::labelallow(allow, names, &mut e);
    }
    if st.decolorize.is_some() {
        return rewrite::decolorize(&mut e);
    }
    if let Some(t) = &st.template {
        return rewrite::template(t, names, &mut e);
    }
    if let Some(t) = &st.truncate {
        return rewrite::truncate(t, &mut e);
    }
    if let Some(sm) = &st.sampling {
        return flow::sampling(sm, &mut e);
    }
    if let Some(pk) = &st.pack {
        return Some(labels::pack(pk, names));
    }
    if let Some(m) = &st.metrics {
        return metrics::compile(m, names, &mut e).map(Op::Metrics);
    }
    if let Some(g) = &st.geoip {
        return geoip::compile(g, names, &mut e).map(Op::GeoIp);
    }
    if let Some(m) = &st.multiline {
        return flow::multiline(m, &mut e);
    }
    let Some(l) = st.limit.as_ref() else { return Some(Op::Labels) };
    flow::limit(l, &mut e)
}

/// Reports the keys set without the stage they go with (`with`,
/// `with_template`, `drop_malformed`, `source`); the stage's `source`, when
/// it is set, fits the stage and names an extracted value.
fn keys_that_go_with(st: &StageConfig, names: &Names, e: &mut Errors<'_>) -> Option<String> {
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
    match &st.source {
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
    }
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
