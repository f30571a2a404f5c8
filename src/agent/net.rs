//! The agent's network sources: their receivers (started once, kept across
//! reloads). Each client's readers of their spools start with its other
//! sources (`sources.rs`).

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

/// Starts the receivers of the plan's network sources (none: `None`).
pub(super) async fn start_receivers(plan: &Plan) -> anyhow::Result<Option<Receivers>> {
    let sources = net_sources(plan);
    if sources.is_empty() {
        return Ok(None);
    }
    let spools = Spools::new(&plan.config.spool);
    Ok(Some(Receivers::start(spools, sources).await?))
}

/// Says which network source changes a reload does not apply, and updates
/// which clients each spool's segments wait for.
pub(super) fn reload(receivers: Option<&Receivers>, old: &Plan, new: &Plan) {
    let (before, after) = (net_sources(old), net_sources(new));
    let key = |s: &NetSource| (s.name.clone(), s.config.kind, s.config.listen.clone(), s.config.receiver.clone());
    if before.iter().map(key).ne(after.iter().map(key)) {
        tracing::warn!("network sources (listen, receiver, added or removed) change with a restart; their stages, labels and clients apply now");
    }
    if let Some(r) = receivers {
        r.set_clients(&after);
    }
}
