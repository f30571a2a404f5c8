//! Compiling one `[[sources]]` entry: its stages, its multiline rule and its
//! globs, each problem reported with the key it concerns.

use std::sync::Arc;

use super::names::one_line;
use crate::config::{Reading, SourceConfig, SourceType};
use crate::discovery::glob::GlobError;
use crate::pipeline::re2;
use crate::pipeline::{Op, Stage};
use crate::relabel::Rules;
use crate::source::multiline::MultilineRule;
use crate::source::target::FileLabels;
use crate::source::{FileMatch, SourceSpec};

/// One source, compiled.
#[derive(Debug, Clone)]
pub struct SourcePlan {
    /// `name`, or `file-N` / `stdin-N` / `journal-N` by its place in the config.
    pub name: Arc<str>,
    pub spec: SourceSpec,
    pub stages: Vec<Stage>,
    /// The labels a line of this source may carry, as far as the config
    /// says (relabel rules and labels named per line by a `json = {}` aside).
    pub label_names: Vec<String>,
}

/// Compiles source `index`; `errors` receives `(key, message)` for each
/// problem. `metadata_on` is `client.structured_metadata`.
pub fn compile(
    index: usize,
    src: &SourceConfig,
    metadata_on: bool,
    errors: &mut Vec<(String, String)>,
) -> Option<SourcePlan> {
    let key = format!("sources[{index}]");
    let before = errors.len();
    let kind = src.kind.as_str();
    let name: Arc<str> = Arc::from(src.name.clone().unwrap_or_else(|| format!("{kind}-{index}")).as_str());
    let mut src = src.clone();
    if src.kind == SourceType::Kubernetes {
        // Every container's current log; kubelet's rotated siblings
        // (`0.log.20240501-100000`) are found by the rotation logic.
        src.include = vec![format!("{}/*/*/*.log", src.pod_root().display())];
    }
    let files = file_match(&key, &src, errors);
    if src.decompression.is_some() && src.kind != SourceType::File {
        errors
            .push((format!("{key}.decompression"), format!("only a file source reads compressed files, not `{kind}`")));
    }
    if let Some(sd) = &src.targets_from {
        check_targets_from(&key, &src, sd, errors);
    }
    if src.kind == SourceType::Journal {
        for (i, m) in src.matches.iter().enumerate() {
            if let Err(message) = crate::source::journal::check_match(m) {
                errors.push((format!("{key}.matches[{i}]"), message));
            }
        }
    }
    let multiline = match &src.multiline {
        Some(m) if !m.start.is_empty() => {
            match MultilineRule::compile(&re2::translate(&m.start).pattern, m.max_lines, m.max_wait.get()) {
                Ok(rule) => Some(rule),
                Err(err) => {
                    errors
                        .push((format!("{key}.multiline.start"), format!("bad regex: {}", one_line(&err.to_string()))));
                    None
                }
            }
        }
        _ => None,
    };
    let relabel = compile_relabel(&key, &src, errors);
    let (mut stages, mut label_names) = super::stages::compile(&key, &src, metadata_on, errors);
    label_names.extend(automatic_labels(&src).iter().map(|l| l.to_string()));
    label_names.sort();
    label_names.dedup();
    if src.kind == SourceType::Kubernetes {
        stages.insert(
            0,
            Stage { op: Op::Cri(None, 100), labels: vec![("stream".into(), "stream".into())], metadata: Vec::new() },
        );
    }
    if src.kind == SourceType::Docker {
        // json-file lines: the message, Docker's time, `stream`, long lines joined.
        stages.insert(
            0,
            Stage { op: Op::Docker, labels: vec![("stream".into(), "stream".into())], metadata: Vec::new() },
        );
    }
    let labels = FileLabels { relabel, targets: None };
    (errors.len() == before).then(|| SourcePlan {
        name,
        spec: SourceSpec { config: src, multiline, files, labels },
        stages,
        label_names,
    })
}

/// The compiled `include`/`exclude` globs of a source that reads files by
/// them; their errors go to `errors` under `key`.
fn file_match(key: &str, src: &SourceConfig, errors: &mut Vec<(String, String)>) -> Option<Arc<FileMatch>> {
    match src.kind.reading() {
        Reading::Globs => match FileMatch::compile(&src.include, &src.exclude) {
            Ok(m) => Some(Arc::new(m)),
            Err(errs) => {
                for e in errs {
                    let field = match &e {
                        GlobError::Include { index, .. } => format!("{key}.include[{index}]"),
                        GlobError::Exclude { index, .. } => format!("{key}.exclude[{index}]"),
                    };
                    errors.push((field, e.to_string()));
                }
                None
            }
        },
        // A docker source's files are known once the Engine says where it
        // keeps them (`source::docker`).
        Reading::Docker | Reading::Journal | Reading::Stdin | Reading::Spooled => None,
    }
}

/// The labels a source adds to its lines itself.
fn automatic_labels(src: &SourceConfig) -> Vec<&'static str> {
    let mut out = match src.kind {
        SourceType::File => vec!["filename"],
        SourceType::Kubernetes => vec!["namespace", "pod", "container", "stream"],
        SourceType::Docker => vec!["stream"],
        SourceType::Journal => vec!["unit", "level"],
        _ => Vec::new(),
    };
    if src.host_label {
        out.push("host");
    }
    out
}

/// A source's relabel rules; `None` without any.
fn compile_relabel(key: &str, src: &SourceConfig, errors: &mut Vec<(String, String)>) -> Option<Arc<Rules>> {
    let defaults;
    let configs = if src.relabel.is_empty() && src.kind == SourceType::Kubernetes && src.kubernetes.is_some() {
        // Pod metadata without rules of its own: the Promtail Helm chart's labels.
        defaults = crate::discovery::helm_chart_rules();
        &defaults
    } else {
        &src.relabel
    };
    if configs.is_empty() {
        return None;
    }
    match Rules::compile(configs) {
        Ok(r) => Some(Arc::new(r)),
        Err(errs) => {
            for (i, e) in errs {
                errors.push((format!("{key}.relabel[{i}].{}", e.field), e.message));
            }
            None
        }
    }
}

/// A file source's `targets_from`: its files' globs compile, and the source
/// names its files one way (the target files' `__path__`, not `include`).
fn check_targets_from(
    key: &str,
    src: &SourceConfig,
    sd: &crate::config::FileSdConfig,
    errors: &mut Vec<(String, String)>,
) {
    if src.kind != SourceType::File {
        errors.push((
            format!("{key}.targets_from"),
            format!("only a file source reads target files, not `{}`", src.kind.as_str()),
        ));
    }
    if !src.include.is_empty() {
        errors.push((
            format!("{key}.include"),
            "a source with `targets_from` reads the files its targets' `__path__` name; leave `include` out".into(),
        ));
    }
    if sd.files.is_empty() {
        errors.push((format!("{key}.targets_from.files"), "names no target file".into()));
    }
    if let Err(errs) = FileMatch::compile(&sd.files, &[]) {
        for e in errs {
            if let GlobError::Include { index, .. } = &e {
                errors.push((format!("{key}.targets_from.files[{index}]"), e.to_string()));
            }
        }
    }
    if sd.refresh_interval.get().is_zero() {
        errors.push((format!("{key}.targets_from.refresh_interval"), "must be more than 0".into()));
    }
}
