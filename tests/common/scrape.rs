//! A Prometheus text scrape parsed into families (name, type) and samples
//! (name, labels, value), for tests that compare tailship's `/metrics`
//! with the real Promtail's.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};

/// One scrape: per family its type, and per sample its name, labels and value.
pub struct Scrape {
    pub types: BTreeMap<String, String>,
    pub samples: Vec<(String, BTreeMap<String, String>, f64)>,
}

impl Scrape {
    pub fn parse(text: &str) -> Scrape {
        let mut types = BTreeMap::new();
        let mut samples = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').unwrap();
                types.insert(name.to_string(), kind.to_string());
                continue;
            }
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let (series, value) = line.rsplit_once(' ').unwrap();
            let (name, labels) = match series.split_once('{') {
                Some((n, l)) => (n, parse_labels(l.trim_end_matches('}'))),
                None => (series, BTreeMap::new()),
            };
            samples.push((name.to_string(), labels, value.parse().unwrap_or(f64::NAN)));
        }
        Scrape { types, samples }
    }

    /// The family a sample name belongs to (`x_bucket` to `x`, for histograms).
    pub fn family<'a>(&self, name: &'a str) -> &'a str {
        for suffix in ["_bucket", "_sum", "_count"] {
            if let Some(base) = name.strip_suffix(suffix) {
                if self.types.get(base).is_some_and(|t| t == "histogram") {
                    return base;
                }
            }
        }
        name
    }

    /// Per `promtail_*` family: its type and the label names of its samples.
    pub fn promtail_families(&self) -> BTreeMap<String, (String, BTreeSet<String>)> {
        self.families(|n| n.starts_with("promtail_"))
    }

    /// Per family whose name `keep` keeps: its type and the label names of its samples.
    pub fn families(&self, keep: impl Fn(&str) -> bool) -> BTreeMap<String, (String, BTreeSet<String>)> {
        let mut out: BTreeMap<String, (String, BTreeSet<String>)> = BTreeMap::new();
        for (name, kind) in self.types.iter().filter(|(n, _)| keep(n)) {
            out.insert(name.clone(), (kind.clone(), BTreeSet::new()));
        }
        for (name, labels, _) in &self.samples {
            if let Some(f) = out.get_mut(self.family(name)) {
                f.1.extend(labels.keys().cloned());
            }
        }
        out
    }

    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.samples
            .iter()
            .find(|(n, l, _)| {
                n == name
                    && l.len() == labels.len()
                    && labels.iter().all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|s| s.2)
    }

    pub fn has(&self, name: &str) -> bool {
        self.samples.iter().any(|(n, _, _)| n == name)
    }
}

fn parse_labels(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut rest = text;
    while let Some((name, after)) = rest.split_once("=\"") {
        let mut value = String::new();
        let mut chars = after.char_indices();
        let mut end = after.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, n)) = chars.next() {
                        value.push(match n {
                            'n' => '\n',
                            other => other,
                        });
                    }
                }
                '"' => {
                    end = i + 1;
                    break;
                }
                c => value.push(c),
            }
        }
        out.insert(name.trim_start_matches(',').trim().to_string(), value);
        rest = &after[end..];
    }
    out
}
