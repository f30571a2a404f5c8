//! Compiling one `[[sources]]` entry: its stages, its multiline rule and its
//! globs, each problem reported with the key it concerns.

use std::sync::Arc;

use regex::Regex;

use crate::config::{SourceConfig, SourceType};
use crate::pipeline::{Stage, TimeFormat};
use crate::source::discover::GlobError;
use crate::source::multiline::MultilineRule;
use crate::source::{FileMatch, SourceSpec};
use crate::util::is_valid_label_name;

/// One source, compiled.
#[derive(Debug, Clone)]
pub struct SourcePlan {
    /// `name`, or `file-N` / `stdin-N` by its place in the config.
    pub name: Arc<str>,
    pub spec: SourceSpec,
    pub stages: Vec<Stage>,
}

/// Compiles source `index`; `errors` receives `(key, message)` for each problem.
pub fn compile(index: usize, src: &SourceConfig, errors: &mut Vec<(String, String)>) -> Option<SourcePlan> {
    let key = format!("sources[{index}]");
    let before = errors.len();
    let kind = match src.kind {
        SourceType::File => "file",
        SourceType::Stdin => "stdin",
    };
    let name: Arc<str> = Arc::from(src.name.clone().unwrap_or_else(|| format!("{kind}-{index}")).as_str());
    let files = match src.kind {
        SourceType::File => match FileMatch::compile(&src.include, &src.exclude) {
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
        SourceType::Stdin => None,
    };
    let multiline = match &src.multiline {
        Some(m) if !m.start.is_empty() => match MultilineRule::compile(&m.start, m.max_lines, m.max_wait.get()) {
            Ok(rule) => Some(rule),
            Err(err) => {
                errors.push((format!("{key}.multiline.start"), format!("bad regex: {}", one_line(&err.to_string()))));
                None
            }
        },
        _ => None,
    };
    let stages = compile_stages(&key, src, errors);
    (errors.len() == before).then(|| SourcePlan {
        name,
        spec: SourceSpec { config: src.clone(), multiline, files },
        stages,
    })
}

/// The `stages` list of a source, in order.
fn compile_stages(key: &str, s: &SourceConfig, errors: &mut Vec<(String, String)>) -> Vec<Stage> {
    let mut e = |k: String, m: String| errors.push((k, m));
    let mut out = Vec::new();
    let mut extracted: Vec<String> = Vec::new();
    for (i, st) in s.stages.iter().enumerate() {
        let sk = format!("{key}.stages[{i}]");
        let set = [st.regex.is_some(), st.drop.is_some(), st.timestamp.is_some()].iter().filter(|b| **b).count();
        if set != 1 {
            e(sk, "a stage needs exactly one of `regex`, `drop` or `timestamp`".into());
            continue;
        }
        if st.labels.is_some() && st.regex.is_none() {
            e(format!("{sk}.labels"), "`labels` goes with a `regex` stage".into());
        }
        if let Some(r) = &st.regex {
            match Regex::new(r) {
                Err(err) => e(format!("{sk}.regex"), format!("bad regex: {}", one_line(&err.to_string()))),
                Ok(re) => {
                    let names: Vec<String> = re.capture_names().flatten().map(String::from).collect();
                    if names.is_empty() {
                        e(format!("{sk}.regex"), "has no named capture (?P<name>...) to extract".into());
                    }
                    for l in st.labels.iter().flatten() {
                        if !is_valid_label_name(l) {
                            e(format!("{sk}.labels"), format!("`{l}` is not a valid label name"));
                        } else if !names.contains(l) {
                            e(format!("{sk}.labels"), format!("`{l}` is not a named capture of the regex"));
                        }
                    }
                    extracted.extend(names.iter().cloned());
                    let labels = st.labels.clone().unwrap_or_else(|| names.clone());
                    out.push(Stage::Regex { re, names, labels });
                }
            }
        }
        if let Some(d) = &st.drop {
            match Regex::new(d) {
                Ok(re) => out.push(Stage::Drop(re)),
                Err(err) => e(format!("{sk}.drop"), format!("bad regex: {}", one_line(&err.to_string()))),
            }
        }
        if let Some(t) = &st.timestamp {
            if !extracted.contains(&t.source) {
                e(
                    format!("{sk}.timestamp.source"),
                    format!("`{}` is not captured by an earlier regex stage", t.source),
                );
            }
            match TimeFormat::parse(&t.format) {
                Ok(format) => out.push(Stage::Timestamp { source: t.source.clone(), format }),
                Err(m) => e(format!("{sk}.timestamp.format"), m),
            }
        }
    }
    out
}

/// A multi-line message (a regex error) on one line.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
