//! Target files (`targets_from`, Promtail's `file_sd_configs`): the files a
//! file source reads, and their labels, named by JSON or YAML files of
//! Prometheus' file discovery format:
//!
//! ```yaml
//! - targets: [localhost]
//!   labels: { __path__: /var/log/app/*.log, __path_exclude__: /var/log/app/debug.log, job: app }
//! ```
//!
//! How it works. At start the target files (`targets_from.files`, globs
//! allowed) are read; each group's `__path__` becomes an include glob of the
//! source ([`super::LiveGlobs`]) and its labels the `__meta`-like labels of
//! the files it names ([`super::publish::SdTargets`]: the source's relabel
//! rules see them per file, as Promtail's `relabel_configs` do, and labels
//! starting `__` are removed after them). Prometheus' `__meta_filepath` (the
//! target file) and `__address__` (the group's first target) come along.
//! The target files are a [`Lister`] whose wait looks at them every second
//! (by modification time and size) and reads them all again every
//! `refresh_interval`, returning once a group changed: a changed set
//! takes effect at the source's next scan, so files are added, and files no
//! target names any more are read to their end and closed, without a
//! restart. A target file that does not parse (or a `__path__` that is no
//! glob) is logged, counted in `tailship_file_events_total{event="bad_target_file"}`,
//! and its previous targets are kept. Positions are those of any file source.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde::Deserialize;

use super::lister::{published, Listed, Lister};
use super::poll::{poll, Backoff};
use super::{FileMatch, Found, Labels, Serving};
use crate::config::{FileSdConfig, SourceConfig};
use crate::metrics::Metrics;

/// How often the target files are looked at for changes.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// One target group as a target file writes it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGroup {
    #[serde(default)]
    targets: Vec<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
}

/// Why a target file was not taken.
#[derive(Debug, thiserror::Error)]
pub enum TargetFileError {
    #[error("cannot read it: {0}")]
    Read(#[from] std::io::Error),
    #[error("not a list of target groups: {0}")]
    Json(#[from] serde_json::Error),
    #[error("not YAML: {0}")]
    Yaml(String),
}

/// The target groups of the file at `path` (JSON by its `.json` name, YAML otherwise).
fn parse(path: &Path, text: &str) -> Result<Vec<RawGroup>, TargetFileError> {
    if path.extension().is_some_and(|e| e == "json") {
        return Ok(serde_json::from_str(text)?);
    }
    let docs = yaml_rust2::YamlLoader::load_from_str(text).map_err(|e| TargetFileError::Yaml(e.to_string()))?;
    let value = docs.first().map(yaml_to_json).unwrap_or(serde_json::Value::Array(Vec::new()));
    Ok(serde_json::from_value(value)?)
}

/// A YAML document as JSON (scalars as strings: label values are text).
fn yaml_to_json(y: &yaml_rust2::Yaml) -> serde_json::Value {
    use serde_json::Value;
    use yaml_rust2::Yaml;
    match y {
        Yaml::Array(a) => Value::Array(a.iter().map(yaml_to_json).collect()),
        Yaml::Hash(h) => Value::Object(
            h.iter().filter_map(|(k, v)| Some((scalar(k)?, yaml_to_json(v)))).collect::<serde_json::Map<_, _>>(),
        ),
        Yaml::Null => Value::Null,
        other => scalar(other).map(Value::String).unwrap_or(Value::Null),
    }
}

fn scalar(y: &yaml_rust2::Yaml) -> Option<String> {
    use yaml_rust2::Yaml;
    match y {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A target file's modification time and size, as last read.
type Stamp = (Option<SystemTime>, u64);

/// The target files of a source: what each held when last read, and when
/// they were last read in full.
struct TargetFiles {
    name: Arc<str>,
    files: FileMatch,
    last_full: Instant,
    /// By target file: its modification time and size, and its groups.
    known: BTreeMap<PathBuf, (Stamp, Vec<RawGroup>)>,
}

impl TargetFiles {
    /// Reads the target files that changed (all of them when `full`);
    /// returns whether any group changed.
    fn refresh(&mut self, full: bool) -> bool {
        let found = self.files.candidates();
        let mut changed = false;
        self.known.retain(|p, _| {
            let keep = found.contains(p);
            changed |= !keep;
            keep
        });
        for path in found {
            let Ok(meta) = std::fs::metadata(&path) else { continue };
            let stamp = (meta.modified().ok(), meta.len());
            if !full && self.known.get(&path).is_some_and(|(s, _)| *s == stamp) {
                continue;
            }
            match std::fs::read_to_string(&path).map_err(TargetFileError::from).and_then(|t| parse(&path, &t)) {
                Ok(groups) => {
                    self.known.insert(path, (stamp, groups));
                    changed = true;
                }
                Err(e) => {
                    bad(&self.name, &path, &e.to_string());
                    // Its previous targets stay; it is read again once it changes.
                    let previous = self.known.remove(&path).map(|(_, g)| g).unwrap_or_default();
                    self.known.insert(path, (stamp, previous));
                }
            }
        }
        changed
    }

    /// The groups known now, each one's labels with `__meta_filepath` and `__address__`.
    fn targets(&self) -> Vec<Labels> {
        let mut targets = Vec::new();
        for (file, (_, raw)) in &self.known {
            for g in raw {
                let mut labels = g.labels.clone();
                labels.insert("__meta_filepath".into(), file.to_string_lossy().into_owned());
                if let Some(t) = g.targets.first() {
                    labels.insert("__address__".into(), t.clone());
                }
                targets.push(labels);
            }
        }
        targets
    }
}

/// A target file not taken (or a group of it): said and counted.
fn bad(source: &str, path: &Path, error: &str) {
    tracing::warn!(source = %source, file = %path.display(), error, "target file not taken; its previous targets are kept");
    Metrics::get().file_events.with_label_values(&[source, "bad_target_file"]).inc();
}

impl Lister for TargetFiles {
    fn describe(&self) -> String {
        "the target files".into()
    }

    async fn list(&mut self) -> Result<Vec<Labels>, String> {
        Ok(self.targets())
    }

    /// Looks at the target files every second, and reads them all again
    /// every `every`; returns once a group changed.
    async fn wait(&mut self, every: Duration) {
        loop {
            tokio::time::sleep(LOOK_EVERY).await;
            let full = self.last_full.elapsed() >= every;
            if full {
                self.last_full = Instant::now();
            }
            if self.refresh(full) {
                return;
            }
        }
    }

    fn bad_path(&self, source: &str, labels: &Labels, error: &globset::Error) {
        let file = labels.get("__meta_filepath").map(PathBuf::from).unwrap_or_default();
        bad(source, &file, &format!("bad __path__ or __path_exclude__: {error}"));
    }
}

/// The target files' discovery: the targets they name, read before its
/// start returns (the source's first scan opens their files), then kept
/// current by a task on `at.handle`.
impl super::Discover for FileSdConfig {
    fn start(&self, _: &SourceConfig, at: &Serving) -> Result<Found, String> {
        Ok(start(self, at))
    }
}

/// Reads the target files of `cfg`, then keeps them current (see its [`Discover`](super::Discover)).
fn start(cfg: &FileSdConfig, at: &Serving) -> Found {
    // The plan checked these globs.
    let files = FileMatch::compile(&cfg.files, &[]).unwrap_or_else(|_| FileMatch::empty());
    let mut lister = TargetFiles { name: at.name.clone(), files, last_full: Instant::now(), known: BTreeMap::new() };
    lister.refresh(true);
    let (out, found) = published(at);
    let mut out = out.as_listed();
    out.offer(lister.targets(), &lister.describe(), &mut |source, labels, e| lister.bad_path(source, labels, e));
    let every = cfg.refresh_interval.get();
    // Reading files does not fail as a whole: no backoff to speak of.
    let listed = Listed { lister, out };
    at.handle.spawn(poll(listed, at.name.clone(), every, Backoff::up_to(LOOK_EVERY), at.cancel.clone()));
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_and_yaml_target_files_parse_and_unknown_keys_do_not() {
        let j = r#"[{"targets": ["localhost"], "labels": {"__path__": "/l/*.log", "job": "a"}}]"#;
        let g = parse(Path::new("t.json"), j).unwrap();
        assert_eq!(g[0].labels["job"], "a");
        let y = "- targets: [localhost]\n  labels: { __path__: /l/*.log, job: b, port: 80 }\n";
        let g = parse(Path::new("t.yml"), y).unwrap();
        assert_eq!((g[0].labels["job"].as_str(), g[0].labels["port"].as_str()), ("b", "80"));
        assert!(parse(Path::new("t.json"), r#"[{"label": {}}]"#).is_err());
        assert!(parse(Path::new("t.yaml"), "- [").is_err());
    }
}
