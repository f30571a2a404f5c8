//! The labels of one file: the source's, `filename`, a discovery source's
//! `__meta_*` labels (the file's *target*), then the source's relabel rules.
//!
//! A discovery (`crate::discovery`) implements [`Targets`]: it knows which
//! files belong to a target it found (a container, a pod, a group),
//! and their `__meta_*` labels. The file machinery asks it, through
//! [`FileLabels`], which files to open (a file that is no target, or that a
//! rule drops, is never opened) and with which labels each one ships, once
//! per file when it is opened: a line pays nothing for relabelling.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::discovery::Targets;
use crate::pipeline::SourceStages;
use crate::relabel::{strip_internal, Rules};

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
            strip_internal(&mut labels);
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
        !self.is_active() || self.resolve(stages, Some(&crate::util::pathtext::text(path))).is_some()
    }
}

/// `spec` with its globs narrowed to the files its labels admit (unchanged
/// for a plain source).
pub fn admitting(spec: &crate::source::SourceSpec, stages: &Arc<SourceStages>) -> crate::source::SourceSpec {
    let mut spec = spec.clone();
    if let (true, Some(files)) = (spec.labels.is_active(), &spec.files) {
        let (labels, stages) = (spec.labels.clone(), stages.clone());
        let admit = crate::discovery::glob::Admit(Arc::new(move |p: &Path| labels.admits(&stages, p)));
        spec.files = Some(Arc::new(files.with_admit(admit)));
    }
    spec
}
