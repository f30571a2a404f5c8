//! The agent's network sources: their receivers (started with the agent;
//! a reload restarts those whose settings changed). Each client's readers
//! of their spools start with its other sources (`sources.rs`), and so do
//! the readers of spools whose source is no longer configured ([`drains`]).

use crate::plan::{Plan, SourcePlan};
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

/// The spools of network sources no longer configured (removed by a
/// reload, or while the agent was down), each retired and compiled from its
/// `source.json`: the lanes deliver them as their source would have (its
/// labels, its stages, those of its clients still configured, else every
/// client) and then remove them.
pub(super) fn drains(plan: &Plan, spools: &Spools) -> Vec<SourcePlan> {
    let configured: Vec<&str> =
        plan.sources.iter().filter(|s| s.spec.config.kind.receives()).map(|s| &*s.name).collect();
    let clients: Vec<&str> = plan.config.clients().iter().map(|c| c.name.as_str()).collect();
    let metadata_on = plan.config.client.structured_metadata;
    let mut out = Vec::new();
    for (about, spool) in spools.orphans(&configured) {
        let mut config = about.config.clone();
        config.name = Some(about.name.clone());
        config.clients = about.clients.iter().filter(|c| clients.contains(&c.as_str())).cloned().collect();
        let compiled = crate::plan::compile_recorded(&config, metadata_on).or_else(|problems| {
            tracing::warn!(source = %about.name, problems = problems.join("; "),
                "the stages of a source no longer configured do not compile now; its spool goes on without them");
            config.stages.clear();
            crate::plan::compile_recorded(&config, metadata_on)
        });
        let source = match compiled {
            Ok(s) => s,
            Err(problems) => {
                tracing::error!(source = %about.name, dir = %spool.dir.display(), problems = problems.join("; "),
                    "the spool of a source no longer configured cannot be delivered; it stays on disk");
                continue;
            }
        };
        let to: Vec<String> = plan.config.clients_of(&config).map(|c| c.name.clone()).collect();
        tracing::info!(source = %about.name, bytes = spool.bytes(), clients = to.join(","),
            "delivering the spool of a source no longer configured");
        spool.set_clients(to);
        out.push(source);
    }
    out
}

/// `plan` with the `drains` to read: what the lanes start.
pub(super) fn with_drains(plan: &Plan, drains: Vec<SourcePlan>) -> Plan {
    let mut p = plan.clone();
    p.sources.extend(drains);
    p
}
