//! `tailship run`: the daemon (see [`crate::agent`]).

use crate::cli::RunArgs;

pub fn run(args: &RunArgs) -> anyhow::Result<()> {
    let path = crate::cli::config_or_default(&args.config);
    let mut plan = crate::plan::load(&path)?;
    if args.fresh_positions {
        plan.config.positions.on_unreadable = crate::config::OnUnreadable::StartFresh;
    }
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let done = rt.block_on(async { crate::agent::run(plan, crate::shutdown::on_signals()).await });
    // The agent saved its positions: a source thread still busy past
    // `shutdown_timeout` (a blocked read) is not waited for.
    rt.shutdown_background();
    // A positions file that cannot be read is for the operator to settle
    // (exit 2: systemd's unit does not restart it), not a crash to retry.
    done.map_err(|e| match e.downcast::<crate::positions::PositionsError>() {
        Ok(p @ crate::positions::PositionsError::Unreadable { .. }) => super::CommandError::usage(p).into(),
        Ok(p) => p.into(),
        Err(e) => e,
    })
}
