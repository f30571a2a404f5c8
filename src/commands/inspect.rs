//! `tailship inspect [FILE...]`: lines through a config's stages (or a
//! Promtail config's, converted in memory), reported stage by stage on
//! stdout; nothing is sent, no positions are written. Exit 2 for a bad
//! config, an unreadable input or an unknown `--source`.

use crate::cli::{InspectArgs, InspectFormat};
use crate::commands::CommandError;
use crate::inspect::{Format, InspectError, Request};

pub fn inspect(args: &InspectArgs) -> anyhow::Result<()> {
    let plan = match &args.promtail {
        Some(p) => crate::inspect::load(p, true),
        None => crate::inspect::load(&crate::cli::config_or_default(&args.config), false),
    }
    .map_err(edge)?;
    let format = match args.output {
        InspectFormat::Text => Format::Text,
        InspectFormat::Json => Format::Json,
    };
    let req = Request { inputs: &args.files, source: args.source.as_deref(), format };
    crate::inspect::inspect(&plan, &req, Box::new(std::io::stdout())).map_err(edge)?;
    Ok(())
}

/// A problem with what was asked exits 2; a failed write (a closed pipe: success) does not.
fn edge(e: InspectError) -> anyhow::Error {
    match e {
        InspectError::Config(c) => c.into(),
        e if e.is_usage() => CommandError::usage(e).into(),
        e => e.into(),
    }
}
