//! Config -> Plan: everything the config names that must be compiled, compiled
//! once, into the types of the layers below.
//!
//! [`crate::config`] reads a file into plain data (and reads secret files);
//! this module turns that data into a [`Plan`]: every source's stages
//! ([`crate::pipeline::Stage`]), multiline rule and globs
//! ([`crate::source::SourceSpec`]), and every alert rule
//! ([`crate::alert::rule::Rule`], with its selector, pattern and templates).
//! A `Plan` cannot hold an invalid value, and nothing downstream compiles a
//! regex again or swallows a compile error: what `tailship check` accepts is
//! exactly what `run` starts and what SIGHUP reloads, because all three call
//! [`load`].
//!
//! Errors name the file and the key, and one load reports every problem at
//! once (config problems and compile problems together).

mod names;
mod source;
mod stages;
mod warnings;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use source::SourcePlan;
pub use warnings::{warnings, SERVICE_MAX_LINE_BYTES};

use crate::alert::rule::Rule;
use crate::config::{Config, ConfigError, ConfigErrors};

/// A config with everything compiled.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The config as read (secrets read into their values).
    pub config: Config,
    /// The file it came from (for reload and messages).
    pub file: PathBuf,
    pub sources: Vec<SourcePlan>,
    pub rules: Arc<[Rule]>,
    /// `(key, message)` of sources left out here (an `optional` journal
    /// source without journalctl); `warnings` says them.
    pub skipped: Vec<(String, String)>,
}

/// Loads and compiles the config at `path` with the process environment.
pub fn load(path: &Path) -> Result<Plan, ConfigErrors> {
    load_with_env(path, &std::env::vars().collect::<Vec<_>>())
}

/// [`load`] with an explicit environment.
pub fn load_with_env(path: &Path, env: &[(String, String)]) -> Result<Plan, ConfigErrors> {
    let text = crate::config::read_file(path)?;
    load_text(path, &text, env)
}

/// Loads and compiles config `text` (TOML, or YAML by `path`'s extension),
/// as if read from `path` (named in errors): a config made in memory, such
/// as a Promtail config converted by `tailship inspect`.
pub fn load_text(path: &Path, text: &str, env: &[(String, String)]) -> Result<Plan, ConfigErrors> {
    let (config, mut errors) = crate::config::load_parts(path, text, env);
    let Some(config) = config else { return Err(ConfigErrors(errors)) };
    match compile(config, path) {
        Ok(plan) if errors.is_empty() => Ok(plan),
        Ok(_) => Err(ConfigErrors(errors)),
        Err(ConfigErrors(more)) => {
            // One problem per key: a value already reported (an unset
            // variable, say) is not reported again for failing to compile.
            let known: Vec<String> = errors.iter().map(|e| e.key.clone()).collect();
            errors.extend(more.into_iter().filter(|e| !known.contains(&e.key)));
            Err(ConfigErrors(errors))
        }
    }
}

/// Compiles sources made on the command line (`tailship push`), not read from a file.
pub fn compile_sources(sources: &[crate::config::SourceConfig]) -> Result<Vec<SourcePlan>, ConfigErrors> {
    let mut problems = Vec::new();
    let plans: Vec<SourcePlan> =
        sources.iter().enumerate().filter_map(|(i, s)| source::compile(i, s, false, &mut problems)).collect();
    if problems.is_empty() {
        return Ok(plans);
    }
    let file = PathBuf::from("<command line>");
    Err(ConfigErrors(
        problems.into_iter().map(|(key, message)| ConfigError { file: file.clone(), key, message }).collect(),
    ))
}

/// Compiles one source recorded elsewhere (a spool's `source.json`):
/// `Err` holds each problem as `key: message`.
pub fn compile_recorded(src: &crate::config::SourceConfig, metadata_on: bool) -> Result<SourcePlan, Vec<String>> {
    let mut problems = Vec::new();
    match source::compile(0, src, metadata_on, &mut problems) {
        Some(p) if problems.is_empty() => Ok(p),
        _ => Err(problems.into_iter().map(|(k, m)| format!("{k}: {m}")).collect()),
    }
}

/// Compiles a config read from `file` (named in errors).
pub fn compile(config: Config, file: &Path) -> Result<Plan, ConfigErrors> {
    let mut problems: Vec<(String, String)> = Vec::new();
    if config.sources.is_empty() {
        problems.push((
            "sources".into(),
            "no [[sources]]: the agent would read nothing; add one with type = \"file\" and include = [...], \
             or type = \"stdin\""
                .into(),
        ));
    }
    let metadata_on = config.client.structured_metadata;
    let sources: Vec<SourcePlan> = config
        .sources
        .iter()
        .enumerate()
        .filter_map(|(i, s)| source::compile(i, s, metadata_on, &mut problems))
        .collect();
    stages::metrics::one_type_per_name(&config, &mut problems);
    let mut rules = Vec::new();
    for (i, a) in config.alerts.iter().enumerate() {
        match Rule::compile(a) {
            Ok(r) => rules.push(r),
            Err(errs) => {
                for (k, m) in errs {
                    // An unreadable token file was reported by config; do not report the missing value twice.
                    if k == "annotations.token_file" && a.annotations.as_ref().is_some_and(|x| x.token_file.is_some()) {
                        continue;
                    }
                    problems.push((format!("alerts[{i}].{k}"), m));
                }
            }
        }
    }
    if !problems.is_empty() {
        return Err(ConfigErrors(
            problems.into_iter().map(|(key, message)| ConfigError { file: file.to_path_buf(), key, message }).collect(),
        ));
    }
    let (config, sources, skipped) = skip_optional(config, sources);
    Ok(Plan { config, file: file.to_path_buf(), sources, rules: rules.into(), skipped })
}

/// Leaves out `optional` journal sources when journalctl is not on `PATH`
/// (the Debian package's config reads the journal where there is one), and
/// file sources whose static `__host__` names another host (Promtail reads
/// no target of another host), from the config and the compiled sources
/// alike, after errors were reported under the keys as written.
fn skip_optional(mut config: Config, sources: Vec<SourcePlan>) -> (Config, Vec<SourcePlan>, Vec<(String, String)>) {
    let why = |s: &crate::config::SourceConfig, name: &str| -> Option<(&'static str, String)> {
        if s.kind == crate::config::SourceType::Journal
            && s.optional
            && crate::source::journal::find_journalctl().is_none()
        {
            let text = format!("journalctl is not on PATH here: the optional journal source {name} is left out");
            return Some(("optional", text));
        }
        // A static target of another host's (Promtail's `__host__`), read by none but that host.
        let host = s.labels.get("__host__").filter(|_| s.kind == crate::config::SourceType::File)?;
        let here = crate::discovery::promtail_host();
        (*host != here).then(|| {
            let text = format!(
                "`{host}` is not this host (`{here}`: $HOSTNAME, else the host name): the source {name} reads \
                 nothing here, as Promtail reads no target of another host"
            );
            ("labels.__host__", text)
        })
    };
    if !config.sources.iter().zip(&sources).any(|(s, p)| why(s, &p.name).is_some()) {
        return (config, sources, Vec::new());
    }
    let mut skipped = Vec::new();
    let mut kept_configs = Vec::new();
    let mut kept = Vec::new();
    for (i, (c, p)) in config.sources.drain(..).zip(sources).enumerate() {
        match why(&c, &p.name) {
            Some((key, message)) => skipped.push((format!("sources[{i}].{key}"), message)),
            None => {
                kept_configs.push(c);
                kept.push(p);
            }
        }
    }
    config.sources = kept_configs;
    (config, kept, skipped)
}
