//! Compiling a `metrics` stage with Promtail's rules: each problem named by
//! its key (`stages[2].metrics.lines.config.action`).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::config::{Config, MetricStage, StageConfig};
use crate::metrics::custom::{self, Kind};
use crate::pipeline::{Metric, MetricAction};
use crate::plan::names::{Errors, Names};

/// Promtail's prefix when a metric names none.
const DEFAULT_PREFIX: &str = "promtail_custom_";

/// Promtail's default: a series idle this long is removed.
const DEFAULT_MAX_IDLE: Duration = Duration::from_secs(300);

/// Prometheus's default histogram buckets (as Promtail uses them).
const DEFAULT_BUCKETS: [f64; 11] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// The metrics of a `metrics` stage; `None` when any is wrong (all reported).
pub(super) fn compile(all: &BTreeMap<String, MetricStage>, names: &Names, e: &mut Errors<'_>) -> Option<Vec<Metric>> {
    if all.is_empty() {
        e(".metrics", "empty: define at least one metric".into());
        return None;
    }
    let mut out = Vec::new();
    let mut ok = true;
    for (name, m) in all {
        match one(name, m, names, e) {
            Some(metric) => out.push(metric),
            None => ok = false,
        }
    }
    ok.then_some(out)
}

fn one(name: &str, m: &MetricStage, names: &Names, e: &mut Errors<'_>) -> Option<Metric> {
    let k = format!(".metrics.{name}");
    let mut bad = |key: &str, msg: String| {
        e(&format!("{k}{key}"), msg);
        false
    };
    let mut ok = true;
    let prefix = m.prefix.as_deref().filter(|p| !p.is_empty()).unwrap_or(DEFAULT_PREFIX);
    let full = format!("{prefix}{name}");
    if !is_metric_name(&full) {
        ok &= bad("", format!("`{full}` is not a valid metric name"));
    }
    let max_idle = m.max_idle_duration.map_or(DEFAULT_MAX_IDLE, |d| d.0);
    if max_idle < Duration::from_secs(1) {
        ok &= bad(".max_idle_duration", "less than 1s is not allowed (Promtail refuses it too)".into());
    }
    let c = &m.config;
    let action = c.action.as_deref().map(str::to_ascii_lowercase);
    let match_all = c.match_all.unwrap_or(false);
    let count_bytes = c.count_entry_bytes.unwrap_or(false);
    let kind_name = m.kind.to_ascii_lowercase();
    if kind_name != "counter" && (c.match_all.is_some() || c.count_entry_bytes.is_some()) {
        ok &= bad(".config", "`match_all` and `count_entry_bytes` go with a counter".into());
    }
    if kind_name != "histogram" && c.buckets.is_some() {
        ok &= bad(".config.buckets", "buckets go with a histogram".into());
    }
    let (kind, action) = match kind_name.as_str() {
        "counter" => {
            let a = match action.as_deref() {
                Some("inc") => MetricAction::Inc,
                Some("add") => MetricAction::Add,
                Some(other) => {
                    bad(".config.action", format!("`{other}`: a counter's action is `inc` or `add`"));
                    return None;
                }
                None => {
                    bad(".config.action", "missing: a counter's action is `inc` or `add`".into());
                    return None;
                }
            };
            if match_all && c.value.is_some() {
                ok &= bad(".config.match_all", "`match_all = true` cannot be combined with `value`".into());
            }
            if count_bytes && !match_all {
                ok &= bad(".config.count_entry_bytes", "goes only with `match_all = true`".into());
            }
            if count_bytes && a != MetricAction::Add {
                ok &= bad(".config.count_entry_bytes", "goes only with `action = \"add\"`".into());
            }
            (Kind::Counter, a)
        }
        "gauge" => {
            let a = match action.as_deref() {
                Some("set") => MetricAction::Set,
                Some("inc") => MetricAction::Inc,
                Some("dec") => MetricAction::Dec,
                Some("add") => MetricAction::Add,
                Some("sub") => MetricAction::Sub,
                other => {
                    let what = other.map_or("missing".to_string(), |o| format!("`{o}`"));
                    bad(".config.action", format!("{what}: a gauge's action is `set`, `inc`, `dec`, `add` or `sub`"));
                    return None;
                }
            };
            (Kind::Gauge, a)
        }
        "histogram" => {
            if action.is_some() {
                ok &= bad(".config.action", "a histogram observes the value: it takes no action".into());
            }
            let buckets = c.buckets.clone().unwrap_or_else(|| DEFAULT_BUCKETS.to_vec());
            if buckets.is_empty() || buckets.iter().any(|b| b.is_nan()) || buckets.windows(2).any(|w| w[0] >= w[1]) {
                ok &= bad(".config.buckets", "must be increasing numbers".into());
            }
            (Kind::Histogram(buckets), MetricAction::Observe)
        }
        other => {
            bad(".type", format!("`{other}`: use counter, gauge or histogram"));
            return None;
        }
    };
    let source = m.source.clone().unwrap_or_else(|| name.to_string());
    if !match_all && !names.has(&source) {
        let key = if m.source.is_some() { ".source" } else { "" };
        ok &= bad(
            key,
            format!("`{source}` is not extracted by an earlier stage (without `source`, the metric's name is read)"),
        );
    }
    if !ok {
        return None;
    }
    let help = m.description.clone().unwrap_or_default();
    Some(Metric {
        family: custom::family(&full, &help, kind, max_idle),
        source,
        value: c.value.clone(),
        action,
        match_all,
        count_bytes,
    })
}

/// `[a-zA-Z_:][a-zA-Z0-9_:]*`.
fn is_metric_name(n: &str) -> bool {
    let mut chars = n.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// A metric name defined by two `metrics` stages with different types is
/// refused, as Promtail refuses it (Prometheus would not register the
/// second): the later definition is named, and the earlier one in the message.
pub(in crate::plan) fn one_type_per_name(config: &Config, problems: &mut Vec<(String, String)>) {
    let mut seen: Vec<(String, String, String)> = Vec::new();
    for (i, src) in config.sources.iter().enumerate() {
        walk(&format!("sources[{i}].stages"), &src.stages, &mut seen, problems);
    }
}

fn walk(
    key: &str,
    stages: &[StageConfig],
    seen: &mut Vec<(String, String, String)>,
    problems: &mut Vec<(String, String)>,
) {
    for (j, st) in stages.iter().enumerate() {
        if let Some(m) = &st.match_ {
            walk(&format!("{key}[{j}].match.stages"), &m.stages, seen, problems);
        }
        for (name, m) in st.metrics.iter().flatten() {
            let prefix = m.prefix.as_deref().filter(|p| !p.is_empty()).unwrap_or(DEFAULT_PREFIX);
            let full = format!("{prefix}{name}");
            let kind = m.kind.to_ascii_lowercase();
            let here = format!("{key}[{j}].metrics.{name}.type");
            match seen.iter().find(|(n, _, _)| *n == full) {
                Some((_, k, at)) if *k != kind => problems.push((
                    here,
                    format!(
                        "`{full}` is a {kind} here but a {k} at {at}: one name, one type (Promtail refuses it too)"
                    ),
                )),
                Some(_) => {}
                None => seen.push((full, kind, here)),
            }
        }
    }
}
