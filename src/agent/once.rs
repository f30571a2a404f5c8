//! A plan run once to the end (`tailship push`): the daemon's lane for its
//! one client, its sources read to their end (standard input to its end of
//! file), every line acknowledged or given up, and the totals returned. No
//! positions file, reload, status page, alerts or network receivers.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::lanes::{Keep, Lane};
use crate::batch::Totals;
use crate::metrics::Health;
use crate::plan::Plan;
use crate::queue::Interner;

/// How a plan is run once.
pub struct Once {
    /// Ends the run early (a signal, a deadline): what is queued is given up.
    pub abort: CancellationToken,
    /// Labels added to every source (`tailship push --label`).
    pub labels: BTreeMap<String, String>,
    /// Push errors, as the daemon's status keeps them (why a run gave up).
    pub health: Arc<Health>,
    /// The run's queue: bytes read ahead of the pushes. None: enough for
    /// every push in flight, the batch being filled and the next chunks.
    pub queue_bytes: Option<usize>,
}

/// What a run once did.
#[derive(Debug)]
pub struct Finished {
    pub totals: Totals,
    /// A refusal no retry cures (a wrong password, URL or prefix) that ended it.
    pub refusal: Option<String>,
}

/// Runs `plan` once to the end, to its one client.
pub async fn once(plan: &Plan, run: Once) -> anyhow::Result<Finished> {
    let [client] = plan.config.clients() else {
        anyhow::bail!("a plan run once ships to one client, not {}", plan.config.clients().len());
    };
    let batch = &client.batch;
    let queue_bytes =
        run.queue_bytes.unwrap_or(((batch.max_in_flight + 2) * batch.max_bytes.get() as usize).max(4 << 20));
    let keep = Keep::Once { abort: run.abort.clone(), labels: run.labels };
    // Nobody serves a run once's status.
    let status = Arc::default();
    let mut lane = Lane::start(client, keep, &run.health, &status, queue_bytes, None).await?;
    let mut stdin: Option<Box<dyn std::io::Read + Send>> = Some(Box::new(std::io::stdin()));
    lane.start_sources(plan, &Interner::new(), &run.abort, &mut stdin, None)?;
    lane.sources_done().await;
    let (totals, refusal) = lane.finish().await;
    Ok(Finished { totals, refusal })
}
