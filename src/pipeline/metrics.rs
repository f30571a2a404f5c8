//! A `metrics` stage: counters, gauges and histograms updated from the
//! line's extracted values, with the line's labels at that point as the
//! series' labels (Promtail's `metrics` stage; the families live in
//! [`crate::metrics::custom`]).

use std::sync::Arc;

use super::line::Line;
use crate::metrics::custom::{Family, Update};

/// What a metric does with a line's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Inc,
    Dec,
    Add,
    Sub,
    Set,
    Observe,
}

/// One compiled metric of a `metrics` stage.
#[derive(Debug, Clone)]
pub struct Metric {
    pub family: Arc<Family>,
    /// The extracted value read.
    pub source: String,
    /// Only this value updates the metric.
    pub value: Option<String>,
    pub action: Action,
    /// A counter that counts every line (its value or not).
    pub match_all: bool,
    /// With `match_all` and `Add`: the line's length in bytes is added.
    pub count_bytes: bool,
}

/// Updates every metric of a stage from `line`; `base` are the labels of
/// its file, which the labels stages set so far change.
pub fn apply(metrics: &[Metric], line: &Line<'_, '_>, base: &[(String, String)]) {
    let mut labels: Vec<(&str, &str)> = base
        .iter()
        .filter(|(k, _)| !line.labels.iter().any(|(n, _)| n == k))
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .chain(line.labels.iter().filter_map(|(k, v)| Some((k.as_ref(), v.as_deref()?))))
        .collect();
    labels.sort_unstable();
    for m in metrics {
        if m.match_all {
            let u = if m.count_bytes { Update::Add(line.text.len() as f64) } else { Update::Inc };
            m.family.update(&labels, u);
            continue;
        }
        let Some(v) = line.extracted.get(&m.source) else { continue };
        if m.value.as_deref().is_some_and(|want| want != v) {
            continue;
        }
        let number = || to_float(v);
        let u = match m.action {
            Action::Inc => Some(Update::Inc),
            Action::Dec => Some(Update::Dec),
            Action::Add => number().map(Update::Add),
            Action::Sub => number().map(Update::Sub),
            Action::Set => number().map(Update::Set),
            Action::Observe => number().map(Update::Observe),
        };
        if let Some(u) = u {
            m.family.update(&labels, u);
        }
    }
}

/// A value as a number as Promtail reads it: a float, or a Go duration
/// (`0.5ms`, `1h30m`) in seconds.
pub fn to_float(v: &str) -> Option<f64> {
    match v.parse::<f64>() {
        Ok(f) => Some(f),
        Err(_) => go_duration_secs(v),
    }
}

/// A Go duration (`300ms`, `-1.5h`, `2h45m`, `1µs`) in seconds.
fn go_duration_secs(s: &str) -> Option<f64> {
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Some(0.0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total = 0.0;
    while !rest.is_empty() {
        let n = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let num = &rest[..n];
        if num.is_empty() || num == "." {
            return None;
        }
        let x: f64 = num.parse().ok()?;
        rest = &rest[n..];
        let u = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let scale = match &rest[..u] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += x * scale;
        rest = &rest[u..];
    }
    Some(if neg { -total } else { total })
}

#[cfg(test)]
mod tests {
    use super::to_float;

    #[test]
    fn numbers_and_go_durations() {
        assert_eq!(to_float("0.804"), Some(0.804));
        assert_eq!(to_float("0.5ms"), Some(0.0005));
        assert_eq!(to_float("1h30m"), Some(5400.0));
        assert_eq!(to_float("-2s"), Some(-2.0));
        assert_eq!(to_float("10"), Some(10.0));
        assert_eq!(to_float("abc"), None);
        assert_eq!(to_float("5x"), None);
        assert_eq!(to_float(""), None);
    }
}
