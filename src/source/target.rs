//! The labels of one file: the source's, `filename`, a discovery source's
//! `__meta_*` labels (the file's *target*), then the source's relabel rules.
//!
//! A discovery source (`docker`, later `kubernetes` metadata) implements
//! [`Targets`]: it knows which files belong to a container or pod it found,
//! and their `__meta_*` labels. The file machinery asks it, through
//! [`FileLabels`], which files to open (a file that is no target, or that a
//! rule drops, is never opened) and with which labels each one ships, once
//! per file when it is opened: a line pays nothing for relabelling.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::pipeline::SourceStages;
use crate::relabel::{strip_internal, Rules};

/// Files found by a discovery source, with their labels.
pub trait Targets: Send + Sync + std::fmt::Debug {
    /// The `__meta_*` labels of the file at `path`, or None when no known
    /// target owns it (yet). An empty set: read the file anyway, with the
    /// labels it has before the rules (its target stayed unknown too long).
    fn meta(&self, path: &Path) -> Option<BTreeMap<String, String>>;

    /// Whether the labels of [`Targets::meta`] went through the source's
    /// relabel rules already (they are then not applied again per file).
    fn relabelled(&self) -> bool {
        false
    }

    /// Whether files keep the `filename` label (Promtail's docker targets have none).
    fn filename_label(&self) -> bool {
        true
    }
}

/// What a discovered file is the log of, by its target's labels: a
/// Kubernetes pod's container (`namespace/pod/container`) or a Docker
/// container (its name), for `/status` and `top`. `None` for other files.
pub fn target_name(meta: &BTreeMap<String, String>) -> Option<String> {
    let get = |k: &str| meta.get(k).map(String::as_str).filter(|v| !v.is_empty());
    let pod = get("__meta_kubernetes_pod_name")
        .map(|pod| (get("__meta_kubernetes_namespace"), pod, get("__meta_kubernetes_pod_container_name")));
    let pod = pod.or_else(|| get("pod").map(|pod| (get("namespace"), pod, get("container"))));
    if let Some((ns, pod, container)) = pod {
        let mut name = ns.map(|ns| format!("{ns}/{pod}")).unwrap_or_else(|| pod.to_string());
        if let Some(c) = container {
            name.push('/');
            name.push_str(c);
        }
        return Some(format!("pod {name}"));
    }
    let container = get("__meta_docker_container_name").or_else(|| get("__meta_dockerswarm_container_name"));
    container.map(|c| format!("container {}", c.trim_start_matches('/')))
}

/// What decides a file's labels beyond the source's own: its relabel rules
/// and, for a discovery source, its targets. Empty for a plain source.
#[derive(Debug, Clone, Default)]
pub struct FileLabels {
    pub relabel: Option<Arc<Rules>>,
    pub targets: Option<Arc<dyn Targets>>,
}

impl FileLabels {
    /// True when files need more than the source's labels and `filename`.
    pub fn is_active(&self) -> bool {
        self.relabel.is_some() || self.targets.is_some()
    }

    /// The labels the file at `filename` ships with (stdin: `None`), or
    /// None when it is no target or a rule drops it.
    pub fn resolve(&self, stages: &SourceStages, filename: Option<&str>) -> Option<BTreeMap<String, String>> {
        let mut labels = stages.labels_of(filename);
        if !self.is_active() {
            return Some(labels);
        }
        let mut relabelled = false;
        if let Some(f) = filename {
            if let Some(t) = &self.targets {
                relabelled = t.relabelled();
                let meta = t.meta(Path::new(f))?;
                if !t.filename_label() {
                    labels.remove("filename");
                }
                if meta.is_empty() {
                    strip_internal(&mut labels);
                    return Some(labels);
                }
                labels.extend(meta);
            }
            labels.insert("__path__".into(), f.to_string());
        }
        if let Some(rules) = self.relabel.as_ref().filter(|_| !relabelled) {
            if !rules.apply(&mut labels) {
                return None;
            }
        }
        strip_internal(&mut labels);
        Some(labels)
    }

    /// The labels of a target known by its `__meta_*` labels alone (a
    /// container whose log is read through the Engine API), or None when a
    /// rule drops it.
    pub fn resolve_meta(
        &self,
        stages: &SourceStages,
        meta: BTreeMap<String, String>,
    ) -> Option<BTreeMap<String, String>> {
        let mut labels = stages.labels_of(None);
        labels.extend(meta);
        if let Some(rules) = &self.relabel {
            if !rules.apply(&mut labels) {
                return None;
            }
        }
        strip_internal(&mut labels);
        Some(labels)
    }

    /// Whether the file at `path` is read at all (see [`FileLabels::resolve`]).
    pub fn admits(&self, stages: &SourceStages, path: &Path) -> bool {
        !self.is_active() || self.resolve(stages, Some(&path.to_string_lossy())).is_some()
    }
}

/// `spec` with its globs narrowed to the files its labels admit (unchanged
/// for a plain source).
pub fn admitting(spec: &crate::source::SourceSpec, stages: &Arc<SourceStages>) -> crate::source::SourceSpec {
    let mut spec = spec.clone();
    if let (true, Some(files)) = (spec.labels.is_active(), &spec.files) {
        let (labels, stages) = (spec.labels.clone(), stages.clone());
        let admit = crate::source::discover::Admit(Arc::new(move |p: &Path| labels.admits(&stages, p)));
        spec.files = Some(Arc::new(files.with_admit(admit)));
    }
    spec
}
