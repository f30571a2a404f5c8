//! Metrics that `metrics` stages define from log lines (Promtail's
//! `promtail_custom_*`): one [`Family`] per metric name, one series per
//! label set of the lines that update it, served on `/metrics` beside the
//! agent's own. A series not updated for the family's `max_idle` is removed
//! when `/metrics` is read (as Promtail prunes on collection).
//!
//! A family lives as long as a stage holds it: a reload that keeps the
//! same definition keeps its series; one that removes it removes the metric.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use prometheus::core::{Collector, Desc};
use prometheus::proto;

/// What a family counts.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Counter,
    Gauge,
    /// The upper bounds of the buckets, increasing.
    Histogram(Vec<f64>),
}

/// One change to a series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Update {
    Inc,
    Dec,
    Add(f64),
    Sub(f64),
    Set(f64),
    Observe(f64),
}

/// One series: its labels, value (or histogram counts) and last update.
#[derive(Debug)]
struct Series {
    labels: Vec<(String, String)>,
    value: f64,
    counts: Vec<u64>,
    count: u64,
    last: Instant,
}

/// A metric defined by `metrics` stages, with its series.
#[derive(Debug)]
pub struct Family {
    name: String,
    help: String,
    kind: Kind,
    max_idle: Duration,
    /// Series by the hash of their labels (collisions share a bucket).
    series: Mutex<HashMap<u64, Vec<Series>>>,
}

/// Every family defined, by name (the one defined last wins its name).
type Defined = Mutex<Vec<(String, Weak<Family>)>>;

fn families() -> &'static Defined {
    static F: OnceLock<Defined> = OnceLock::new();
    F.get_or_init(|| Mutex::new(Vec::new()))
}

/// The family `name`: the one already defined when its definition is the
/// same (its series carry on), else a new one, which replaces it on `/metrics`.
pub fn family(name: &str, help: &str, kind: Kind, max_idle: Duration) -> Arc<Family> {
    let Ok(mut all) = families().lock() else {
        return Arc::new(Family::new(name, help, kind, max_idle));
    };
    all.retain(|(_, w)| w.strong_count() > 0);
    if let Some(f) = all.iter().find(|(n, _)| n == name).and_then(|(_, w)| w.upgrade()) {
        if f.help == help && f.kind == kind && f.max_idle == max_idle {
            return f;
        }
    }
    let f = Arc::new(Family::new(name, help, kind, max_idle));
    all.retain(|(n, _)| n != name);
    all.push((name.to_string(), Arc::downgrade(&f)));
    f
}

fn labels_hash(labels: &[(&str, &str)]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for (k, v) in labels {
        k.hash(&mut h);
        v.hash(&mut h);
    }
    h.finish()
}

impl Family {
    fn new(name: &str, help: &str, kind: Kind, max_idle: Duration) -> Self {
        Self { name: name.into(), help: help.into(), kind, max_idle, series: Mutex::new(HashMap::new()) }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Applies `u` to the series of `labels` (sorted by name), made on first use.
    /// A counter never goes down: a negative `Add` is refused (false).
    pub fn update(&self, labels: &[(&str, &str)], u: Update) -> bool {
        if matches!((&self.kind, u), (Kind::Counter, Update::Add(v)) if v < 0.0)
            || matches!(u, Update::Add(v) | Update::Sub(v) | Update::Set(v) | Update::Observe(v) if v.is_nan())
        {
            return false;
        }
        let Ok(mut all) = self.series.lock() else { return false };
        let slot = all.entry(labels_hash(labels)).or_default();
        let same = |s: &Series| {
            s.labels.len() == labels.len() && s.labels.iter().zip(labels).all(|(a, b)| a.0 == b.0 && a.1 == b.1)
        };
        let at = slot.iter().position(same);
        let s = match at {
            Some(i) => &mut slot[i],
            None => {
                let buckets = match &self.kind {
                    Kind::Histogram(b) => b.len(),
                    _ => 0,
                };
                slot.push(Series {
                    labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
                    value: 0.0,
                    counts: vec![0; buckets],
                    count: 0,
                    last: Instant::now(),
                });
                let n = slot.len() - 1;
                &mut slot[n]
            }
        };
        s.last = Instant::now();
        match u {
            Update::Inc => s.value += 1.0,
            Update::Dec => s.value -= 1.0,
            Update::Add(v) => s.value += v,
            Update::Sub(v) => s.value -= v,
            Update::Set(v) => s.value = v,
            Update::Observe(v) => {
                if let Kind::Histogram(bounds) = &self.kind {
                    for (c, b) in s.counts.iter_mut().zip(bounds) {
                        if v <= *b {
                            *c += 1;
                        }
                    }
                }
                s.value += v;
                s.count += 1;
            }
        }
        true
    }

    /// The family as Prometheus data, idle series removed first.
    fn collect(&self) -> Option<proto::MetricFamily> {
        let mut all = self.series.lock().ok()?;
        let now = Instant::now();
        for slot in all.values_mut() {
            slot.retain(|s| now.duration_since(s.last) < self.max_idle);
        }
        all.retain(|_, slot| !slot.is_empty());
        let mut mf = proto::MetricFamily::default();
        mf.set_name(self.name.clone());
        mf.set_help(self.help.clone());
        mf.set_field_type(match self.kind {
            Kind::Counter => proto::MetricType::COUNTER,
            Kind::Gauge => proto::MetricType::GAUGE,
            Kind::Histogram(_) => proto::MetricType::HISTOGRAM,
        });
        let mut metrics = Vec::new();
        for s in all.values().flatten() {
            let pairs = s
                .labels
                .iter()
                .map(|(k, v)| {
                    let mut p = proto::LabelPair::default();
                    p.set_name(k.clone());
                    p.set_value(v.clone());
                    p
                })
                .collect();
            let mut m = proto::Metric::from_label(pairs);
            match &self.kind {
                Kind::Counter => {
                    let mut c = proto::Counter::default();
                    c.set_value(s.value);
                    m.set_counter(c);
                }
                Kind::Gauge => {
                    let mut g = proto::Gauge::default();
                    g.set_value(s.value);
                    m.set_gauge(g);
                }
                Kind::Histogram(bounds) => {
                    let mut h = proto::Histogram::default();
                    h.set_sample_count(s.count);
                    h.set_sample_sum(s.value);
                    let buckets = bounds
                        .iter()
                        .zip(&s.counts)
                        .map(|(b, c)| {
                            let mut pb = proto::Bucket::default();
                            pb.set_upper_bound(*b);
                            pb.set_cumulative_count(*c);
                            pb
                        })
                        .collect();
                    h.set_bucket(buckets);
                    m.set_histogram(h);
                }
            }
            metrics.push(m);
        }
        mf.set_metric(metrics);
        Some(mf)
    }
}

/// The collector of every family, registered once with the agent's registry.
/// It declares no descriptors: the families and their labels change at run time.
pub(super) struct Custom;

impl Collector for Custom {
    fn desc(&self) -> Vec<&Desc> {
        Vec::new()
    }

    fn collect(&self) -> Vec<proto::MetricFamily> {
        let live: Vec<Arc<Family>> = match families().lock() {
            Ok(all) => all.iter().filter_map(|(_, w)| w.upgrade()).collect(),
            Err(_) => Vec::new(),
        };
        live.iter().filter_map(|f| f.collect()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_by_labels_and_histogram_buckets() {
        let f = Family::new("h", "", Kind::Histogram(vec![1.0, 5.0]), Duration::from_secs(60));
        assert!(f.update(&[("a", "1")], Update::Observe(0.5)));
        assert!(f.update(&[("a", "1")], Update::Observe(3.0)));
        assert!(f.update(&[("a", "2")], Update::Observe(9.0)));
        let mf = f.collect().unwrap();
        assert_eq!(mf.get_metric().len(), 2);
        let one = mf.get_metric().iter().find(|m| m.get_label()[0].value() == "1").unwrap();
        let h = one.get_histogram();
        assert_eq!((h.get_sample_count(), h.get_sample_sum()), (2, 3.5));
        let counts: Vec<u64> = h.get_bucket().iter().map(|b| b.cumulative_count()).collect();
        assert_eq!(counts, vec![1, 2]);
    }

    #[test]
    fn a_counter_never_goes_down_and_idle_series_go() {
        let f = Family::new("c", "", Kind::Counter, Duration::ZERO);
        assert!(!f.update(&[], Update::Add(-1.0)));
        assert!(f.update(&[], Update::Add(2.0)));
        assert!(f.collect().unwrap().get_metric().is_empty(), "idle at once with a zero max_idle");
    }
}
