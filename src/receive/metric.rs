//! Metric queries of the store: the value of each series at one instant
//! (`/query`, a vector), at every step of a range (`/query_range`, a matrix),
//! and the streams a selector matches (`/series`), as Loki answers them.

use std::collections::BTreeMap;

use serde::Serialize;

use super::store::Labels;
use super::Shared;
use crate::logql::{Grouping, LogSelector, MetricQuery, RangeFn};

/// Most steps a range metric query may have (Loki's limit is 11,000).
pub(super) const MAX_STEPS: i64 = 11_000;

/// Unix seconds as a JSON number with millisecond precision (as Prometheus writes it).
pub(super) fn unix_seconds(ns: i64) -> serde_json::Number {
    let ms = ns.div_euclid(1_000_000);
    if ms % 1000 == 0 {
        serde_json::Number::from(ms / 1000)
    } else {
        serde_json::Number::from_f64(ms as f64 / 1000.0).unwrap_or_else(|| serde_json::Number::from(ms / 1000))
    }
}

/// The value of every series of `m` at `time`.
pub(super) fn evaluate(sh: &Shared, tenants: &[String], m: &MetricQuery, time: i64) -> BTreeMap<Labels, f64> {
    let samples = sh.backend.sample(tenants, tenants.len() > 1, &m.selector, time.saturating_sub(m.range_ns), time);
    let range_secs = m.range_ns as f64 / 1e9;
    let value = |count: u64, bytes: u64| match m.func {
        RangeFn::CountOverTime => count as f64,
        RangeFn::Rate => count as f64 / range_secs,
        RangeFn::BytesOverTime => bytes as f64,
        RangeFn::BytesRate => bytes as f64 / range_secs,
    };
    let mut series: BTreeMap<Labels, f64> = BTreeMap::new();
    for s in samples {
        let v = value(s.count, s.bytes);
        let key: Labels = match &m.sum {
            None => s.labels,
            Some(Grouping::All) => Vec::new(),
            Some(Grouping::By(keep)) => s.labels.into_iter().filter(|(k, _)| keep.contains(k)).collect(),
            Some(Grouping::Without(drop)) => s.labels.into_iter().filter(|(k, _)| !drop.contains(k)).collect(),
        };
        *series.entry(key).or_insert(0.0) += v;
    }
    series
}

#[derive(Serialize)]
struct JsonSeries {
    metric: BTreeMap<String, String>,
    values: Vec<(serde_json::Number, String)>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct MatrixData {
    result_type: &'static str,
    result: Vec<JsonSeries>,
    stats: serde_json::Map<String, serde_json::Value>,
}

/// A range metric query: each series' value at `start`, `start + step`, ... up to `end`.
pub(super) fn matrix(
    sh: &Shared,
    tenants: &[String],
    m: &MetricQuery,
    (start, end, step): (i64, i64, i64),
) -> MatrixData {
    let mut series: BTreeMap<Labels, Vec<(serde_json::Number, String)>> = BTreeMap::new();
    let mut t = start;
    while t <= end {
        for (labels, v) in evaluate(sh, tenants, m, t) {
            series.entry(labels).or_default().push((unix_seconds(t), v.to_string()));
        }
        t += step;
    }
    let result = series
        .into_iter()
        .map(|(labels, values)| JsonSeries { metric: labels.into_iter().collect(), values })
        .collect();
    MatrixData { result_type: "matrix", result, stats: serde_json::Map::new() }
}

/// The label sets of the streams `selector` matches with entries in `[start, end]`.
pub(super) fn series(
    sh: &Shared,
    tenants: &[String],
    selector: &LogSelector,
    start: i64,
    end: i64,
) -> Vec<BTreeMap<String, String>> {
    let mut sets: Vec<BTreeMap<String, String>> = sh
        .backend
        .sample(tenants, tenants.len() > 1, selector, start.saturating_sub(1), end)
        .into_iter()
        .map(|s| s.labels.into_iter().collect())
        .collect();
    sets.sort();
    sets.dedup();
    sets
}
