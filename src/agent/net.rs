//! The agent's network sources: their receivers (started with the agent;
//! a reload restarts those whose settings changed). Each client's readers
//! of their spools start with its other sources (`sources.rs`).

use crate::plan::Plan;
use crate::source::net::{NetSource, Receivers};
use crate::spool::Spools;

/// The plan's network sources, each with the names of its clients.
pub(super) fn net_sources(plan: &Plan) -> Vec<NetSource> {
    plan.sources
        .iter()
        .filter(|s| s.spec.config.kind.receives())
        .map(|s| NetSource {
            name: s.name.clone(),
            config: s.spec.config.clone(),
            clients: plan.config.clients_of(&s.spec.config).map(|c| c.name.clone()).collect(),
            relabel: s.spec.labels.relabel.clone(),
        })
        .collect()
}

/// Starts the receivers of the plan's network sources (none at all is
/// fine: a reload may add some).
pub(super) async fn start_receivers(plan: &Plan) -> anyhow::Result<Receivers> {
    let spools = Spools::new(&plan.config.spool);
    Receivers::start(spools, net_sources(plan)).await
}

/// Applies a reload to the receivers (see [`Receivers::reload`]).
pub(super) async fn reload(receivers: &mut Receivers, old: &Plan, new: &Plan) {
    if old.config.spool != new.config.spool {
        tracing::warn!("[spool] changes need a restart; the running spool is kept");
    }
    receivers.reload(net_sources(new)).await;
}
