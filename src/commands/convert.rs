//! `tailship convert promtail FILE`: the converted config on stdout, what
//! could not be converted on stderr (numbered, by Promtail key), exit 2 when
//! the file cannot be read or is not YAML.

use std::io::Write;

use anyhow::Context;

use super::CommandError;
use crate::cli::{ConvertArgs, ConvertCommand};
use crate::convert::numbered;

pub fn convert(args: &ConvertArgs) -> anyhow::Result<()> {
    let ConvertCommand::Promtail(a) = &args.command;
    let name = a.file.display().to_string();
    let read = if name == "-" {
        crate::util::yaml::read_bounded(std::io::stdin().lock())
    } else {
        std::fs::File::open(&a.file).and_then(crate::util::yaml::read_bounded)
    };
    let text = read.with_context(|| format!("cannot read {name}")).map_err(CommandError::usage)?;
    let options = crate::convert::Options {
        carry_positions: a.positions.is_some(),
        positions_out: a.positions_out.as_ref().map(|p| p.display().to_string()),
        jaeger: ["JAEGER_AGENT_HOST", "JAEGER_ENDPOINT"]
            .iter()
            .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty())),
    };
    let c =
        crate::convert::promtail_with(&text, &options).with_context(|| name.clone()).map_err(CommandError::usage)?;
    if c.toml.len() > crate::util::yaml::MAX_BYTES {
        return Err(CommandError::usage(anyhow::anyhow!(
            "{name}: the converted config would be {} bytes (at most {}); not written",
            c.toml.len(),
            crate::util::yaml::MAX_BYTES
        ))
        .into());
    }
    std::io::stdout().lock().write_all(c.toml.as_bytes())?;
    let mut err = std::io::stderr().lock();
    if !c.untranslated.is_empty() {
        writeln!(err, "# {name}: {} Promtail key(s) not translated:", c.untranslated.len())?;
        err.write_all(numbered(&c.untranslated).as_bytes())?;
    }
    if !c.notes.is_empty() {
        writeln!(err, "# Translated with a difference:")?;
        for n in &c.notes {
            writeln!(err, "  - {}: {}", n.key, n.message)?;
        }
    }
    if c.untranslated.is_empty() && c.notes.is_empty() {
        writeln!(err, "# {name}: every Promtail key was translated")?;
    }
    if let Some(from) = &a.positions {
        let to = match (&a.positions_out, &c.positions_path) {
            (Some(p), _) => p.clone(),
            (None, Some(p)) => std::path::PathBuf::from(p),
            (None, None) => {
                return Err(CommandError::usage(anyhow::anyhow!(
                    "{name} sets no positions.filename: say where tailship's positions file goes with --positions-out"
                ))
                .into())
            }
        };
        let report = crate::convert::positions::import(from, &to).map_err(CommandError::usage)?;
        writeln!(
            err,
            "# {}: {} file offset(s) and {} journal cursor(s) carried over to {}",
            from.display(),
            report.files,
            report.journals,
            to.display()
        )?;
        if let Some(owner) = &report.owner {
            writeln!(err, "# {}: {owner}", to.display())?;
        }
        if !report.skipped.is_empty() {
            writeln!(err, "# not carried over ({}):", report.skipped.len())?;
            for (key, why) in &report.skipped {
                writeln!(err, "  - {key}: {why}")?;
            }
        }
    }
    Ok(())
}
