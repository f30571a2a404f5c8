//! `tailship run`: the daemon (see [`crate::agent`]).

use crate::cli::RunArgs;

pub fn run(args: &RunArgs) -> anyhow::Result<()> {
    let path = crate::cli::config_or_default(&args.config);
    let plan = crate::plan::load(&path)?;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let done = rt.block_on(async { crate::agent::run(plan, crate::shutdown::on_signals()).await });
    // The agent saved its positions: a source thread still busy past
    // `shutdown_timeout` (a blocked read) is not waited for.
    rt.shutdown_background();
    done
}
