//! Compiling a source's `stages` list, each problem reported with its key.

use regex::Regex;

use crate::config::{SourceConfig, SourceType, StageConfig};
use crate::pipeline::{JsonPath, Op, Stage, TimeFormat};
use crate::util::is_valid_label_name;

/// The keys that name what a stage does; exactly one is set per stage.
const KINDS: &str = "`regex`, `json`, `logfmt`, `drop`, `timestamp`, `output`, `replace`, `cri`, `docker` or `limit`";

/// What earlier stages extract, for checking the names later stages use.
#[derive(Default)]
struct Names {
    known: Vec<String>,
    /// An earlier stage extracts names known only per line (`json = {}`).
    any: bool,
}

impl Names {
    fn has(&self, n: &str) -> bool {
        self.any || self.known.iter().any(|k| k == n)
    }
}

/// The `stages` list of a source, in order. `metadata_on` is
/// `client.structured_metadata`.
pub fn compile(key: &str, s: &SourceConfig, metadata_on: bool, errors: &mut Vec<(String, String)>) -> Vec<Stage> {
    let mut out = Vec::new();
    let mut names = Names::default();
    for (i, st) in s.stages.iter().enumerate() {
        let sk = format!("{key}.stages[{i}]");
        let before = errors.len();
        let Some(op) = op(&sk, st, s.kind, &mut names, errors) else { continue };
        let labels = picks(&sk, "labels", st.labels.as_deref(), &op, &names, errors);
        let metadata = picks(&sk, "structured_metadata", st.structured_metadata.as_deref(), &op, &names, errors);
        if st.structured_metadata.is_some() && !metadata_on {
            errors.push((
                format!("{sk}.structured_metadata"),
                "structured metadata is sent only with `client.structured_metadata = true`: Loki 3 stores it, \
                 but the log service in spec/ documents [timestamp, line] pairs only, so it is off unless you turn it on"
                    .into(),
            ));
        }
        if errors.len() == before {
            // A regex stage without `labels` makes every named capture a label.
            let labels = match (&op, &st.labels) {
                (Op::Regex { names, .. }, None) => names.clone(),
                (Op::Cri | Op::Docker, None) => vec!["stream".to_string()],
                _ => labels,
            };
            out.push(Stage { op, labels, metadata });
        }
    }
    out
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
    let set = [
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
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if set != 1 {
        e("", format!("a stage needs exactly one of {KINDS}"));
        return None;
    }
    if st.with.is_some() && st.replace.is_none() {
        e(".with", "`with` goes with a `replace` stage".into());
    }
    let regex = |k: &str, r: &str, e: &mut dyn FnMut(&str, String)| match Regex::new(r) {
        Ok(re) => Some(re),
        Err(err) => {
            e(k, format!("bad regex: {}", one_line(&err.to_string())));
            None
        }
    };
    if let Some(r) = &st.regex {
        let re = regex(".regex", r, &mut e)?;
        let found: Vec<String> = re.capture_names().flatten().map(String::from).collect();
        if found.is_empty() {
            e(".regex", "has no named capture (?P<name>...) to extract".into());
        }
        names.known.extend(found.iter().cloned());
        return Some(Op::Regex { re, names: found });
    }
    if let Some(fields) = &st.json {
        let mut out = Vec::new();
        for (name, path) in fields {
            match JsonPath::parse(path) {
                Ok(p) => out.push((name.clone(), p)),
                Err(m) => e(&format!(".json.{name}"), m),
            }
            names.known.push(name.clone());
        }
        names.any |= fields.is_empty();
        return Some(Op::Json { fields: out });
    }
    if let Some(fields) = &st.logfmt {
        for (name, key) in fields {
            if key.is_empty() || key.contains(['=', '"', ' ']) {
                e(&format!(".logfmt.{name}"), format!("`{key}` is not a logfmt key"));
            }
            names.known.push(name.clone());
        }
        names.any |= fields.is_empty();
        return Some(Op::Logfmt { fields: fields.iter().map(|(n, k)| (n.clone(), k.clone())).collect() });
    }
    if let Some(d) = &st.drop {
        return regex(".drop", d, &mut e).map(Op::Drop);
    }
    if let Some(t) = &st.timestamp {
        if !names.has(&t.source) {
            e(".timestamp.source", format!("`{}` is not extracted by an earlier stage", t.source));
        }
        return match TimeFormat::parse(&t.format) {
            Ok(format) => Some(Op::Timestamp { source: t.source.clone(), format }),
            Err(m) => {
                e(".timestamp.format", m);
                None
            }
        };
    }
    if let Some(o) = &st.output {
        if !names.has(o) {
            e(".output", format!("`{o}` is not extracted by an earlier stage"));
        }
        return Some(Op::Output(o.clone()));
    }
    if let Some(r) = &st.replace {
        let Some(with) = &st.with else {
            e(".with", "a `replace` stage needs `with`, the replacement text (\"\" removes the matches)".into());
            return None;
        };
        return regex(".replace", r, &mut e).map(|re| Op::Replace { re, with: with.clone() });
    }
    if st.cri.is_some() || st.docker.is_some() {
        if !kind.reads_files() {
            let k = if st.cri.is_some() { "cri" } else { "docker" };
            e(&format!(".{k}"), format!("`{k}` parses container runtimes' log files; use it on a file source"));
            return None;
        }
        names.known.push("stream".into());
        return Some(if st.cri.is_some() { Op::Cri } else { Op::Docker });
    }
    let l = st.limit.as_ref()?;
    if !(l.rate.is_finite() && l.rate > 0.0) {
        e(".limit.rate", "must be a number of lines per second above 0".into());
        return None;
    }
    // Without a burst, a second's worth of lines may come at once.
    let burst = if l.burst == 0 { l.rate.ceil().max(1.0) } else { f64::from(l.burst) };
    Some(Op::Limit { rate: l.rate, burst })
}

/// The names a stage's `labels` or `structured_metadata` list picks, checked.
fn picks(
    sk: &str,
    field: &str,
    list: Option<&[String]>,
    op: &Op,
    names: &Names,
    errors: &mut Vec<(String, String)>,
) -> Vec<String> {
    let Some(list) = list else { return Vec::new() };
    if !matches!(op, Op::Regex { .. } | Op::Json { .. } | Op::Logfmt { .. } | Op::Cri | Op::Docker) {
        errors.push((
            format!("{sk}.{field}"),
            format!("`{field}` goes with a stage that extracts values (regex, json, logfmt, cri, docker)"),
        ));
        return Vec::new();
    }
    for n in list {
        if !is_valid_label_name(n) {
            errors.push((format!("{sk}.{field}"), format!("`{n}` is not a valid label name")));
        } else if !names.has(n) {
            let what = match op {
                Op::Regex { .. } => "a named capture of the regex",
                _ => "extracted by this or an earlier stage",
            };
            errors.push((format!("{sk}.{field}"), format!("`{n}` is not {what}")));
        }
    }
    list.to_vec()
}

/// A multi-line message (a regex error) on one line.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
