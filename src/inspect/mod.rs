//! `tailship inspect`: lines of files (or standard input) through a
//! config's stages, printed stage by stage (see [`print`]): what each stage
//! changed (extracted values, labels, structured metadata, tenant,
//! timestamp, line), and whether the line was sent, with which labels and
//! time, dropped, or held until more lines came. The config may be a
//! Promtail config, converted in memory as `tailship convert promtail`
//! converts it.
//!
//! Nothing is sent and nothing is written: the lines go through the same
//! compiled stages as in the agent (`plan`, then each source's
//! [`SourceStages`] with its multiline rule and relabel rules), with an
//! [`Inspector`](crate::pipeline::Inspector) told what happens, and the
//! chunks they fill are thrown away. No client, positions file, endpoint or
//! listener is opened. Each input is read from its start, once.

mod print;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::config::{ConfigErrors, SourceType};
use crate::pipeline::SourceStages;
use crate::plan::{Plan, SourcePlan};
use crate::queue::{Chunk, Interner};
use crate::source::LineFeed;

pub use print::Format;

/// Why inspection could not run.
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    #[error(transparent)]
    Config(#[from] ConfigErrors),
    #[error("cannot read {0}")]
    Read(String, #[source] std::io::Error),
    #[error("{0}: not converted")]
    Convert(String, #[source] crate::convert::ConvertError),
    #[error("{file} has no source named `{name}` (its sources: {names})")]
    NoSource { file: String, name: String, names: String },
    #[error("{0} has no source")]
    NoSources(String),
    /// Writing the report failed (a closed pipe, say).
    #[error("cannot write the report")]
    Write(#[source] std::io::Error),
}

impl InspectError {
    /// True for a problem with what was asked (exit 2); false for a failure while writing.
    pub fn is_usage(&self) -> bool {
        !matches!(self, Self::Write(_))
    }
}

/// The plan of the config at `path`; with `promtail`, of the Promtail
/// config at `path` as `convert promtail` converts it (errors then name
/// `PATH (converted)` and the converted keys).
pub fn load(path: &Path, promtail: bool) -> Result<Plan, InspectError> {
    let env: Vec<(String, String)> = std::env::vars().collect();
    if !promtail {
        return Ok(crate::plan::load_with_env(path, &env)?);
    }
    let name = path.display().to_string();
    let text = std::fs::File::open(path)
        .and_then(crate::util::yaml::read_bounded)
        .map_err(|e| InspectError::Read(name.clone(), e))?;
    let converted = crate::convert::promtail(&text).map_err(|e| InspectError::Convert(name.clone(), e))?;
    Ok(crate::plan::load_text(&PathBuf::from(format!("{name} (converted)")), &converted.toml, &env)?)
}

/// What to inspect: inputs (`-` for standard input) and how to print.
pub struct Request<'a> {
    pub inputs: &'a [PathBuf],
    /// The source (a Promtail config's job) whose stages run; `None`: for
    /// each file the source whose globs match it, else the first.
    pub source: Option<&'a str>,
    pub format: Format,
}

/// Runs every input of `req` through `plan`'s stages, reporting to `out`.
/// Returns how many lines were sent, dropped and still held at the end.
pub fn inspect(plan: &Plan, req: &Request<'_>, out: Box<dyn Write + Send>) -> Result<print::Totals, InspectError> {
    let file = plan.file.display().to_string();
    if plan.sources.is_empty() {
        return Err(InspectError::NoSources(file));
    }
    if let Some(name) = req.source {
        if !plan.sources.iter().any(|s| &*s.name == name) {
            let names: Vec<&str> = plan.sources.iter().map(|s| &*s.name).collect();
            return Err(InspectError::NoSource { file, name: name.to_string(), names: names.join(", ") });
        }
    }
    let printer = Arc::new(print::Printer::new(out, req.format));
    let stdin = [PathBuf::from("-")];
    let inputs = if req.inputs.is_empty() { &stdin[..] } else { req.inputs };
    for input in inputs {
        let source = pick(plan, req.source, input);
        one_input(plan, source, input, &printer)?;
    }
    printer.finish().map_err(InspectError::Write)
}

/// The source whose stages `input` goes through: the one named, else the
/// file source whose globs match it (standard input: a stdin source), else the first.
fn pick<'p>(plan: &'p Plan, name: Option<&str>, input: &Path) -> &'p SourcePlan {
    let named = name.and_then(|n| plan.sources.iter().find(|s| &*s.name == n));
    let stdin = input == Path::new("-");
    let matching = plan.sources.iter().find(|s| match &s.spec.files {
        Some(files) if !stdin => std::path::absolute(input).is_ok_and(|p| files.matches(&p)),
        _ => stdin && s.spec.config.kind == SourceType::Stdin,
    });
    named.or(matching).unwrap_or(&plan.sources[0])
}

/// Reads `input` from its start through `source`'s stages, to its end.
fn one_input(
    plan: &Plan,
    source: &SourcePlan,
    input: &Path,
    printer: &Arc<print::Printer>,
) -> Result<(), InspectError> {
    let stdin = input == Path::new("-");
    let shown = if stdin { "standard input".to_string() } else { input.display().to_string() };
    let mut reader: Box<dyn Read> = if stdin {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::fs::File::open(input).map_err(|e| InspectError::Read(shown.clone(), e))?)
    };
    let tenant = plan.config.clients_of(&source.spec.config).next().and_then(|c| c.tenant_id.as_deref());
    let stages = SourceStages::new(
        source.name.clone(),
        &source.spec.config,
        source.stages.clone(),
        tenant,
        Interner::new(),
        &Default::default(),
    )
    .with_inspector(printer.clone());
    // The file's labels as the agent gives them: `filename` is the path as
    // the globs see it (absolute), then the source's relabel rules.
    let filename = (!stdin).then(|| std::path::absolute(input).unwrap_or_else(|_| input.to_path_buf()));
    let filename = filename.as_ref().map(|p| crate::util::pathtext::text(p).into_owned());
    printer.input(&shown, &source.name, source.stages.len());
    let Some(labels) = source.spec.labels.resolve(&stages, filename.as_deref()) else {
        printer.note("a relabel rule drops this file: the agent would not read it");
        return printer.check().map_err(InspectError::Write);
    };
    let mut feed = LineFeed::with_context(&source.spec, stages.context_for(labels), 0);
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(InspectError::Read(shown, e)),
        };
        let mut chunk = Chunk::default();
        feed.feed(&stages, &buf[..n], crate::util::now_ns() as i64, Instant::now(), &mut chunk);
        printer.check().map_err(InspectError::Write)?;
    }
    if feed.has_pending() {
        printer.end_of_input();
    }
    let mut chunk = Chunk::default();
    feed.flush_idle(&stages, crate::util::now_ns() as i64, Instant::now(), true, &mut chunk);
    printer.check().map_err(InspectError::Write)
}
