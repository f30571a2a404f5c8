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
//! source ([`LiveGlobs`]) and its labels the `__meta`-like labels of the files
//! it names ([`SdTargets`], through `super::target`: the source's relabel
//! rules see them, as Promtail's `relabel_configs` do, and labels starting
//! `__` are removed after them). Prometheus' `__meta_filepath` (the target
//! file) and `__address__` (the group's first target) come along. A task
//! then looks at the target files every second (by modification time and
//! size) and reads them all again every `refresh_interval`: a changed set
//! takes effect at the source's next scan, so files are added, and files no
//! target names any more are read to their end and closed, without a
//! restart. A target file that does not parse (or a `__path__` that is no
//! glob) is logged, counted in `tailship_file_events_total{event="bad_target_file"}`,
//! and its previous targets are kept. Positions are those of any file source.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime};

use globset::GlobMatcher;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::discover::{FileMatch, LiveGlobs};
use super::target::Targets;
use super::SourceSpec;
use crate::config::FileSdConfig;
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

/// A group whose `__path__` compiled: which files it names, with which labels.
#[derive(Debug)]
pub struct Group {
    include: GlobMatcher,
    exclude: Option<GlobMatcher>,
    labels: BTreeMap<String, String>,
}

impl Group {
    /// The group of `labels`, naming the files of its `__path__` glob but
    /// those of `__path_exclude__`; None without a `__path__`.
    pub fn new(labels: BTreeMap<String, String>) -> Option<Result<Self, globset::Error>> {
        let glob = labels.get("__path__").filter(|p| !p.is_empty())?;
        let compile = |p: &str| globset::GlobBuilder::new(p).literal_separator(true).build();
        let exclude = labels.get("__path_exclude__").filter(|p| !p.is_empty());
        Some(match (compile(glob), exclude.map(|e| compile(e)).transpose()) {
            (Ok(i), Ok(e)) => {
                Ok(Group { include: i.compile_matcher(), exclude: e.map(|e| e.compile_matcher()), labels })
            }
            (Err(e), _) | (_, Err(e)) => Err(e),
        })
    }

    /// Its `__path__` glob.
    pub fn glob(&self) -> &str {
        self.include.glob().glob()
    }
}

/// The current target groups of a source; see the module documentation.
#[derive(Debug, Default)]
pub struct SdTargets {
    groups: RwLock<Vec<Group>>,
    /// The groups' labels went through the source's relabel rules already
    /// (discovery of Kubernetes objects), as Promtail relabels a target once.
    relabelled: bool,
}

impl SdTargets {
    /// Targets whose labels are relabelled before they are set.
    pub fn relabelled() -> Self {
        Self { groups: RwLock::default(), relabelled: true }
    }

    /// Replaces the groups.
    pub fn set(&self, groups: Vec<Group>) {
        if let Ok(mut g) = self.groups.write() {
            *g = groups;
        }
    }
}

impl Targets for SdTargets {
    fn relabelled(&self) -> bool {
        self.relabelled
    }

    fn meta(&self, path: &Path) -> Option<BTreeMap<String, String>> {
        let groups = self.groups.read().ok()?;
        let g = groups
            .iter()
            .find(|g| g.include.is_match(path) && !g.exclude.as_ref().is_some_and(|e| e.is_match(path)))?;
        Some(g.labels.clone())
    }
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

/// What each target file held when last read, and when it was last looked at.
struct Watcher {
    name: Arc<str>,
    files: FileMatch,
    refresh: Duration,
    last_full: Instant,
    /// By target file: its modification time and size, and its groups.
    known: BTreeMap<PathBuf, (Stamp, Vec<RawGroup>)>,
}

impl Watcher {
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
                    self.bad(&path, &e.to_string());
                    // Its previous targets stay; it is read again once it changes.
                    let previous = self.known.remove(&path).map(|(_, g)| g).unwrap_or_default();
                    self.known.insert(path, (stamp, previous));
                }
            }
        }
        changed
    }

    fn bad(&self, path: &Path, error: &str) {
        tracing::warn!(source = %self.name, file = %path.display(), error, "target file not taken; its previous targets are kept");
        Metrics::get().file_events.with_label_values(&[&self.name, "bad_target_file"]).inc();
    }

    /// The groups known now, compiled, and the include globs they make.
    fn compile(&self) -> (Vec<Group>, Vec<String>) {
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
        compile_targets(targets, &mut |labels, e| {
            let file = labels.get("__meta_filepath").map(PathBuf::from).unwrap_or_default();
            self.bad(&file, &format!("bad __path__ or __path_exclude__: {e}"));
        })
    }

    fn apply(&self, targets: &SdTargets, live: &LiveGlobs) {
        let (groups, include) = self.compile();
        tracing::info!(source = %self.name, groups = groups.len(), "targets read from the target files");
        publish(targets, live, groups, include);
    }
}

/// Targets (labels with their `__path__` glob, maybe `__path_exclude__`)
/// compiled, and the include globs they make; one without `__path__` names
/// no file; one whose glob does not compile is given to `bad`.
pub fn compile_targets(
    targets: Vec<BTreeMap<String, String>>,
    bad: &mut dyn FnMut(&BTreeMap<String, String>, &globset::Error),
) -> (Vec<Group>, Vec<String>) {
    let mut groups = Vec::new();
    let mut include = Vec::new();
    for labels in targets {
        match Group::new(labels.clone()) {
            None => {}
            Some(Ok(group)) => {
                include.push(group.glob().to_string());
                groups.push(group);
            }
            Some(Err(e)) => bad(&labels, &e),
        }
    }
    include.sort();
    include.dedup();
    (groups, include)
}

/// Makes `groups` the source's targets and `include` its globs (the next scan takes them).
pub fn publish(targets: &SdTargets, live: &LiveGlobs, groups: Vec<Group>, include: Vec<String>) {
    targets.set(groups);
    // Each glob compiled on its own.
    live.set(FileMatch::compile(&include, &[]).unwrap_or_else(|_| FileMatch::empty()));
}

/// `spec` reading the files its target files name, kept current by a task
/// on `handle` until `cancel` (unchanged without `targets_from`).
pub fn attach(
    spec: &SourceSpec,
    name: &Arc<str>,
    handle: &tokio::runtime::Handle,
    cancel: &CancellationToken,
) -> SourceSpec {
    let mut spec = spec.clone();
    let Some(cfg) = spec.config.targets_from.clone() else { return spec };
    let Some(base) = spec.files.clone() else { return spec };
    // The plan checked these globs.
    let files = FileMatch::compile(&cfg.files, &[]).unwrap_or_else(|_| FileMatch::empty());
    let mut watcher = new_watcher(name, files, &cfg);
    let targets = Arc::new(SdTargets::default());
    let live = Arc::new(LiveGlobs::default());
    watcher.refresh(true);
    watcher.apply(&targets, &live);
    spec.labels.targets = Some(targets.clone());
    spec.files = Some(Arc::new(base.with_live(live.clone())));
    let cancel = cancel.clone();
    handle.spawn(async move {
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(LOOK_EVERY) => {}
            }
            let full = watcher.last_full.elapsed() >= watcher.refresh;
            if full {
                watcher.last_full = Instant::now();
            }
            if watcher.refresh(full) {
                watcher.apply(&targets, &live);
            }
        }
    });
    spec
}

fn new_watcher(name: &Arc<str>, files: FileMatch, cfg: &FileSdConfig) -> Watcher {
    Watcher {
        name: name.clone(),
        files,
        refresh: cfg.refresh_interval.get(),
        last_full: Instant::now(),
        known: BTreeMap::new(),
    }
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
