//! What a job's `pipeline_stages` become: tailship stages in order, and the
//! source-level keys some Promtail stages turn into; rendered as TOML.

use super::filters::{DropRule, Known};
use super::render::Val;
use super::yaml::{Map, Report};

/// What a job's pipeline becomes.
#[derive(Debug, Clone, Default)]
pub struct Pipeline {
    pub stages: Vec<Stage>,
    pub multiline: Option<Val>,
    /// The labels every target of the job has: values each line's map starts with.
    pub target_labels: Vec<String>,
    /// `static_labels`, in order (later ones win).
    pub static_labels: Vec<(String, String)>,
    /// `labeldrop` names: labels the source must not have.
    pub drop_labels: Vec<String>,
    pub tenant: Option<String>,
    /// A `structured_metadata` stage was translated: the client must send it.
    pub metadata: bool,
    /// Every name the job may ever extract or carry as a label (`None`: any);
    /// see [`super::names`].
    pub available: Option<Vec<String>>,
}

#[derive(Debug, Clone)]
pub struct Stage {
    pub(super) kind: Kind,
    labels: Option<Vec<String>>,
    metadata: Option<Vec<String>>,
}

/// A translated `timestamp` stage.
#[derive(Debug, Clone)]
pub(super) struct Timestamp {
    pub source: String,
    pub format: String,
    pub fallbacks: Vec<String>,
    pub location: Option<String>,
    pub fudge: bool,
}

/// A tailship stage; `Option<String>` is the `source` a stage reads instead of the line.
#[derive(Debug, Clone)]
pub(super) enum Kind {
    /// The regex and its named captures.
    Regex(String, Vec<String>, Option<String>),
    /// The expressions, the source, `drop_malformed`.
    Json(Vec<(String, String)>, Option<String>, bool),
    Logfmt(Vec<(String, String)>, Option<String>),
    Drop(DropRule),
    Timestamp(Timestamp),
    Output(String),
    Replace(String, String, Option<String>),
    /// `cri`: `max_partial_line_size` (with truncation), as tailship writes it.
    Cri(Option<String>, Option<i64>),
    Docker,
    /// `limit`: rate, burst, `by_label_name` and `max_distinct_labels`.
    Limit(f64, Option<i64>, Option<(String, Option<i64>)>, bool),
    /// `tenant = { source | label | value = name }`.
    Tenant(&'static str, String),
    /// A stage of `(label, extracted name)` picks only: labels, then structured metadata.
    Labels(Vec<(String, String)>, Vec<(String, String)>),
    Decolorize,
    /// `labelallow`: the labels kept.
    LabelAllow(Vec<String>),
    /// `static_labels` under a `match`: set on the lines it selects.
    StaticLabels(Vec<(String, String)>),
    /// `labeldrop` under a `match`: taken off the lines it selects.
    LabelDrop(Vec<String>),
    /// `template`: the extracted value written, the Go template.
    Template(String, String),
    /// `sampling`: the rate and the counter reason.
    Sampling(f64, Option<String>),
    /// `pack`: the names and `ingest_timestamp`.
    Pack(Vec<String>, bool),
    /// `metrics`: the table of metrics, as written.
    Metrics(Val),
    /// `multiline` after other stages: `start`, `max_lines`, `max_wait`.
    Multiline(Val),
    /// `replace` with a Go template: the regex, the template, the source.
    ReplaceGroups(String, String, Option<String>),
    /// `geoip`: the database, the source, the database type.
    GeoIp(String, String, String),
    /// `match`: the selector, whether it drops, the counter reason, its stages.
    Match(String, bool, Option<String>, Vec<Stage>),
}

impl Stage {
    pub(super) fn plain(kind: Kind) -> Self {
        Self { kind, labels: None, metadata: None }
    }

    /// The names this stage (or a `match`'s stages) may extract.
    fn extracts(&self) -> Vec<String> {
        match &self.kind {
            Kind::Regex(_, names, _) => names.clone(),
            Kind::Json(f, ..) | Kind::Logfmt(f, _) => f.iter().map(|(n, _)| n.clone()).collect(),
            Kind::Cri(..) | Kind::Docker => vec!["stream".into()],
            Kind::Template(source, _) => vec![source.clone()],
            Kind::ReplaceGroups(re, ..) => crate::pipeline::re2::compile(re)
                .map(|re| re.capture_names().flatten().map(String::from).collect())
                .unwrap_or_default(),
            Kind::Match(.., inner) => inner.iter().flat_map(Stage::extracts).collect(),
            _ => Vec::new(),
        }
    }

    /// An empty `logfmt` table extracts every key.
    fn extracts_any(&self) -> bool {
        match &self.kind {
            Kind::Logfmt(f, _) => f.is_empty(),
            Kind::Match(.., inner) => inner.iter().any(Stage::extracts_any),
            _ => false,
        }
    }

    /// Whether this stage (or a `match`'s stages) sets label `name`.
    fn sets_label(&self, name: &str) -> bool {
        match &self.kind {
            Kind::Labels(l, _) | Kind::StaticLabels(l) => l.iter().any(|(n, _)| n == name),
            Kind::Match(.., inner) => inner.iter().any(|s| s.sets_label(name)),
            _ => false,
        }
    }

    /// Leaves out the `labeldrop` names from the labels this stage sets.
    fn drop_labels(&mut self, drops: &[String]) {
        if let Some(l) = &mut self.labels {
            l.retain(|n| !drops.contains(n));
        }
        match &mut self.kind {
            Kind::Labels(l, _) => l.retain(|(n, _)| !drops.contains(n)),
            Kind::Match(.., inner) => {
                inner.iter_mut().for_each(|s| s.drop_labels(drops));
                inner.retain(|s| !s.is_empty_picks());
            }
            _ => {}
        }
    }

    fn is_empty_picks(&self) -> bool {
        matches!(&self.kind, Kind::Labels(l, m) if l.is_empty() && m.is_empty())
    }

    /// The stage as a TOML inline table.
    pub fn to_val(&self) -> Val {
        let mut t = self.kind.to_keys();
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

impl Kind {
    /// The stage's own keys: its inline table without the `labels` and
    /// `structured_metadata` lists a [`Stage`] adds.
    fn to_keys(&self) -> Vec<(String, Val)> {
        match self {
            Kind::Regex(re, _, src) => sourced(vec![("regex".into(), Val::str(re))], src),
            Kind::Json(f, src, drop_malformed) => {
                let mut t = sourced(vec![("json".into(), Val::pairs(f))], src);
                if *drop_malformed {
                    t.push(("drop_malformed".into(), Val::Bool(true)));
                }
                t
            }
            Kind::Logfmt(f, src) => sourced(vec![("logfmt".into(), Val::pairs(f))], src),
            Kind::Drop(rule) => rule.to_vals(),
            Kind::Timestamp(t) => vec![("timestamp".into(), t.to_val())],
            Kind::Output(s) => vec![("output".into(), Val::str(s))],
            Kind::Replace(re, with, src) => {
                sourced(vec![("replace".into(), Val::str(re)), ("with".into(), Val::str(with))], src)
            }
            Kind::Cri(part_max, max_lines) => vec![("cri".into(), cri_val(part_max.as_deref(), *max_lines))],
            Kind::Docker => vec![("docker".into(), Val::Table(Vec::new()))],
            Kind::Limit(rate, burst, by_label, drop) => {
                vec![("limit".into(), limit_val(*rate, *burst, by_label.as_ref(), *drop))]
            }
            Kind::Tenant(from, name) => vec![("tenant".into(), Val::Table(vec![((*from).into(), Val::str(name))]))],
            Kind::Decolorize => vec![("decolorize".into(), Val::Table(Vec::new()))],
            Kind::LabelAllow(names) => vec![("labelallow".into(), Val::strs(names))],
            Kind::StaticLabels(set) => vec![("static_labels".into(), Val::pairs(set))],
            Kind::LabelDrop(names) => vec![("labeldrop".into(), Val::strs(names))],
            Kind::Template(source, text) => vec![(
                "template".into(),
                Val::Table(vec![("source".into(), Val::str(source)), ("template".into(), Val::str(text))]),
            )],
            Kind::Sampling(rate, reason) => {
                let mut t = vec![("rate".to_string(), Val::Float(*rate))];
                if let Some(r) = reason {
                    t.push(("reason".into(), Val::str(r)));
                }
                vec![("sampling".into(), Val::Table(t))]
            }
            Kind::Pack(names, ingest) => {
                let mut t = vec![("labels".to_string(), Val::strs(names))];
                if !*ingest {
                    t.push(("ingest_timestamp".into(), Val::Bool(false)));
                }
                vec![("pack".into(), Val::Table(t))]
            }
            Kind::Metrics(v) => vec![("metrics".into(), v.clone())],
            Kind::Multiline(v) => vec![("multiline".into(), v.clone())],
            Kind::ReplaceGroups(re, t, src) => {
                sourced(vec![("replace".into(), Val::str(re)), ("with_template".into(), Val::str(t))], src)
            }
            Kind::GeoIp(db, src, kind) => vec![(
                "geoip".into(),
                Val::Table(vec![
                    ("db".into(), Val::str(db)),
                    ("source".into(), Val::str(src)),
                    ("db_type".into(), Val::str(kind)),
                ]),
            )],
            Kind::Match(selector, drop, reason, inner) => {
                vec![("match".into(), match_val(selector, *drop, reason.as_deref(), inner))]
            }
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
        }
    }
}

impl Timestamp {
    /// The `timestamp` table: source, format, fallbacks, location, and
    /// `action_on_failure` when fudged.
    fn to_val(&self) -> Val {
        let mut v = vec![("source".to_string(), Val::str(&self.source)), ("format".into(), Val::str(&self.format))];
        if !self.fallbacks.is_empty() {
            v.push(("fallback_formats".into(), Val::strs(&self.fallbacks)));
        }
        if let Some(l) = &self.location {
            v.push(("location".into(), Val::str(l)));
        }
        if self.fudge {
            v.push(("action_on_failure".into(), Val::str("fudge")));
        }
        Val::Table(v)
    }
}

/// The `cri` table: the partial line size (truncating) and the most partial lines.
fn cri_val(part_max: Option<&str>, max_lines: Option<i64>) -> Val {
    let mut opts = match part_max {
        Some(n) => vec![
            ("max_partial_line_size".into(), Val::str(n)),
            ("max_partial_line_size_truncate".into(), Val::Bool(true)),
        ],
        None => Vec::new(),
    };
    if let Some(n) = max_lines {
        opts.push(("max_partial_lines".into(), Val::Int(n)));
    }
    Val::Table(opts)
}

/// The `limit` table: rate, burst, `drop = false` when it waits, and the
/// label it limits by.
fn limit_val(rate: f64, burst: Option<i64>, by_label: Option<&(String, Option<i64>)>, drop: bool) -> Val {
    let mut l = vec![("rate".into(), Val::Float(rate))];
    if let Some(b) = burst {
        l.push(("burst".into(), Val::Int(b)));
    }
    if !drop {
        l.push(("drop".into(), Val::Bool(false)));
    }
    if let Some((name, max)) = by_label {
        l.push(("by_label_name".into(), Val::str(name)));
        if let Some(n) = max {
            l.push(("max_distinct_labels".into(), Val::Int(*n)));
        }
    }
    Val::Table(l)
}

/// The `match` table: the selector, then `action = "drop"` or its stages,
/// and the counter reason.
fn match_val(selector: &str, drop: bool, reason: Option<&str>, inner: &[Stage]) -> Val {
    let mut m = vec![("selector".to_string(), Val::str(selector))];
    if drop {
        m.push(("action".into(), Val::str("drop")));
    } else {
        m.push(("stages".into(), Val::Arr(inner.iter().map(Stage::to_val).collect())));
    }
    if let Some(r) = reason {
        m.push(("reason".into(), Val::str(r)));
    }
    Val::Table(m)
}

impl Pipeline {
    /// True when `name` is in Promtail's extracted map by now: a translated
    /// stage extracts it, or it is a label the map starts with (a static
    /// label or `filename`).
    pub(super) fn extracted(&self, name: &str) -> bool {
        name == "filename"
            || self.target_labels.iter().any(|l| l == name)
            || self.static_labels.iter().any(|(l, _)| l == name)
            || self.stages.iter().any(|s| s.extracts_any() || s.extracts().iter().any(|n| n == name))
    }

    /// A leading `multiline` as the first stage instead of the source's
    /// rule (a journal source has no rule: its stage joins entries).
    pub fn multiline_as_stage(&mut self) {
        if let Some(ml) = self.multiline.take() {
            self.stages.insert(0, Stage::plain(Kind::Multiline(ml)));
        }
    }

    /// Leaves out the `cri` and `docker` stages (a journal entry is no
    /// container log line, and tailship refuses them there); reports them.
    pub fn drop_container_stages(&mut self, key: &str, r: &mut Report) {
        let before = self.stages.len();
        self.stages.retain(|s| !matches!(s.kind, Kind::Cri(..) | Kind::Docker));
        if self.stages.len() != before {
            r.skip(key, "cri and docker stages read container log files; on a journal job they are left out");
        }
    }

    /// Drops the `labeldrop` names from the extracted labels.
    pub fn apply_label_drops(&mut self) {
        let drops = self.drop_labels.clone();
        self.stages.iter_mut().for_each(|s| s.drop_labels(&drops));
        self.stages.retain(|s| !s.is_empty_picks());
    }

    /// A label a line of this job has before a stage sets one: a static
    /// label, or one a `labels` stage so far set.
    pub(super) fn may_be_label(&self, name: &str) -> bool {
        self.static_labels.iter().any(|(l, _)| l == name) || self.stages.iter().any(|s| s.sets_label(name))
    }

    /// `source` of a stage, checked: `Err` when no translated stage extracts it.
    pub(super) fn source(&self, m: &mut Map<'_>, r: &mut Report) -> Result<Option<String>, ()> {
        let Some(src) = m.text("source", r) else { return Ok(None) };
        if self.extracted(&src) {
            return Ok(Some(src));
        }
        self.unextracted(m.key("source"), &src, r);
        Err(())
    }

    /// Reports a stage that reads `name`, which no translated stage extracts:
    /// it is left out, and the report says whether an untranslated stage
    /// extracts it or no stage of the job ever does. Promtail accepts the
    /// latter and skips the stage on every line ("source does not exist in
    /// the set of extracted values", at debug level): public configs carry
    /// such stages, so the conversion goes on without it.
    pub(super) fn unextracted(&self, key: String, name: &str, r: &mut Report) {
        match &self.available {
            Some(a) if !super::names::is_available(a, name) => r.skip(
                key,
                format!(
                    "`{name}` is extracted by no stage of this job and is no label of its targets: the stage \
                     never does anything (in Promtail neither); left out (a misspelt name?)"
                ),
            ),
            _ => r.skip(key, format!("`{name}` is not extracted by a translated stage: the stage is left out")),
        }
    }
}

impl Known for Pipeline {
    fn extracted(&self, name: &str) -> bool {
        Pipeline::extracted(self, name)
    }

    fn unextracted(&self, key: String, name: &str, r: &mut Report) {
        Pipeline::unextracted(self, key, name, r)
    }
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
