//! Where a discovery's targets go: the file source's targets ([`SdTargets`],
//! groups of labels with the `__path__` glob that names their files) and its
//! include globs ([`LiveGlobs`]), replaced together when the targets change.
//! A file source asks [`SdTargets`] for a file's labels when it opens it
//! (see [`super::Targets`]); its next scan takes the new globs.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use globset::GlobMatcher;

use super::glob::{FileMatch, LiveGlobs};
use super::{Labels, Targets};
use crate::relabel::Rules;

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
    /// How many times the groups were replaced (see [`Targets::changes`]).
    changes: AtomicU64,
    /// The groups' labels went through the source's relabel rules already
    /// (discovery of Kubernetes objects), as Promtail relabels a target once.
    relabelled: bool,
}

impl SdTargets {
    /// Targets whose labels are relabelled before they are set.
    pub fn relabelled() -> Self {
        Self { groups: RwLock::default(), changes: AtomicU64::new(0), relabelled: true }
    }

    /// Replaces the groups.
    pub fn set(&self, groups: Vec<Group>) {
        if let Ok(mut g) = self.groups.write() {
            *g = groups;
        }
    }

    /// Counts a change, once the groups and the globs naming their files are both set.
    fn changed(&self) {
        self.changes.fetch_add(1, Ordering::Release);
    }
}

impl Targets for SdTargets {
    fn relabelled(&self) -> bool {
        self.relabelled
    }

    fn changes(&self) -> u64 {
        self.changes.load(Ordering::Acquire)
    }

    fn meta(&self, path: &Path) -> Option<BTreeMap<String, String>> {
        let groups = self.groups.read().ok()?;
        let g = groups
            .iter()
            .find(|g| g.include.is_match(path) && !g.exclude.as_ref().is_some_and(|e| e.is_match(path)))?;
        Some(g.labels.clone())
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
    targets.changed();
}

/// Where a discovery's targets go: the ones that name files (a `__path__`)
/// become the source's targets and globs when they change.
pub struct Published {
    pub name: Arc<str>,
    /// The source's relabel rules, which find each target's `__path__`.
    rules: Option<Arc<Rules>>,
    how: How,
    targets: Arc<SdTargets>,
    live: Arc<LiveGlobs>,
    last: Option<Vec<Labels>>,
    /// This machine as Promtail names it: a target whose relabelled
    /// `__host__` names another is left out.
    host: String,
}

/// How the targets offered become the ones published.
enum How {
    /// The rules find each target's `__path__`; the target keeps its
    /// discovered labels, and the source relabels them when it opens a file.
    Rules,
    /// Targets name their files themselves, and the first one naming a file
    /// gives its labels (target files): no rules, no reordering.
    AsListed,
    /// Relabelled once here, under the source's static labels (Kubernetes
    /// objects, as Promtail relabels a target once); the targets must be
    /// [`SdTargets::relabelled`].
    Relabelled(Labels),
}

impl Published {
    pub fn new(name: Arc<str>, rules: Option<Arc<Rules>>, targets: Arc<SdTargets>, live: Arc<LiveGlobs>) -> Self {
        Self { name, rules, targets, live, how: How::Rules, last: None, host: promtail_host() }
    }

    /// Targets whose `__host__` is not `host` are left out (the node a
    /// Kubernetes pod discovery watches; else [`promtail_host`]).
    pub fn on_host(mut self, host: String) -> Self {
        self.host = host;
        self
    }

    /// Targets whose own `__path__` names their files, kept in the order listed.
    pub fn as_listed(mut self) -> Self {
        self.how = How::AsListed;
        self
    }

    /// Targets published with the labels the rules give them, over `statics`.
    pub fn relabelled(mut self, statics: Labels) -> Self {
        self.how = How::Relabelled(statics);
        self
    }

    /// Takes the targets found now (`from` names the discovery in
    /// messages); one whose `__path__` is no glob is given to `bad`.
    pub fn offer(&mut self, found: Vec<Labels>, from: &str, bad: &mut dyn FnMut(&str, &Labels, &globset::Error)) {
        let host = Some(self.host.as_str());
        let tailed = match &self.how {
            How::AsListed => found.into_iter().filter(|l| l.contains_key("__path__")).collect(),
            How::Rules => with_paths(self.rules.as_deref(), found, host),
            How::Relabelled(statics) => relabel(found, statics, self.rules.as_deref(), host),
        };
        if self.last.as_ref() == Some(&tailed) {
            return;
        }
        tracing::info!(source = %self.name, from, targets = tailed.len(), "targets read");
        let name = self.name.clone();
        let (groups, include) = compile_targets(tailed.clone(), &mut |l, e| bad(&name, l, e));
        publish(&self.targets, &self.live, groups, include);
        self.last = Some(tailed);
    }
}

/// This machine's name as Promtail compares a target's `__host__` with it:
/// `$HOSTNAME`, else the host name.
pub fn promtail_host() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| gethostname::gethostname().to_string_lossy().into_owned())
}

/// Whether relabelled `labels` name another host than `host` in `__host__`
/// (Promtail leaves such a target out: "wrong host").
fn other_host(labels: &Labels, host: Option<&str>) -> bool {
    matches!((labels.get("__host__"), host), (Some(h), Some(host)) if h != host)
}

/// Each target's labels (with the source's static labels under them) after
/// the rules; the targets the rules drop, give no `__path__` or give another
/// host's `__host__` are left out. Targets that differ only by labels the
/// file does not ship with (`__` ones but `__path__`, `__path_exclude__`)
/// are one, as in Promtail.
fn relabel(found: Vec<Labels>, statics: &Labels, rules: Option<&Rules>, host: Option<&str>) -> Vec<Labels> {
    let mut out: Vec<Labels> = found
        .into_iter()
        .filter_map(|t| {
            let mut l = statics.clone();
            l.extend(t);
            if rules.is_some_and(|r| !r.apply(&mut l)) || other_host(&l, host) {
                return None;
            }
            l.get("__path__").is_some_and(|p| !p.is_empty()).then_some(l)
        })
        .collect();
    out.sort();
    let shipped = |l: &Labels| -> Labels {
        l.iter()
            .filter(|(k, _)| !k.starts_with("__") || *k == "__path__" || *k == "__path_exclude__")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|l| seen.insert(shipped(l)));
    out
}

/// The targets `rules` give a `__path__`: their discovered labels with it
/// (and `__path_exclude__`), as a target file would list them.
pub fn with_paths(rules: Option<&Rules>, found: Vec<Labels>, host: Option<&str>) -> Vec<Labels> {
    let mut out = Vec::new();
    for meta in found {
        let mut labels = meta.clone();
        if let Some(rules) = rules {
            if !rules.apply(&mut labels) {
                continue;
            }
        }
        if other_host(&labels, host) {
            continue;
        }
        let Some(path) = labels.get("__path__").filter(|p| !p.is_empty()) else { continue };
        let mut t = meta;
        t.insert("__path__".into(), path.clone());
        if let Some(x) = labels.get("__path_exclude__") {
            t.insert("__path_exclude__".into(), x.clone());
        }
        out.push(t);
    }
    out.sort();
    out.dedup();
    out
}
