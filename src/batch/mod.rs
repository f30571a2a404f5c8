//! The batcher and the pushers: from queued chunks to acknowledged batches.
//!
//! How it works, in plain words. The batcher (`batcher.rs`) groups lines by tenant, then by stream, with
//! timestamps the agent assigned bumped by 1 ns on a tie so they strictly
//! increase within a stream. A batch keeps its lines where they were read
//! (`body.rs`: the chunks' texts and where each line sits); each line is
//! escaped once, straight into the push body (or the compressor), when the
//! batch is pushed.
//! A tenant's batch is sealed when the next line would take it past
//! `batch.max_bytes`, or when its oldest line has waited `batch.max_wait`.
//! Sealing registers the batch's file offsets with the positions store (in
//! seal order) and hands the body to the pushers, of which at most
//! `batch.max_in_flight` run at once, in one lane per tenant (`deliver.rs`). Two batches
//! that hold one stream are never on their way together: the later waits for
//! the earlier to be over, as Promtail's one batch at a time does (Loki 3.7's
//! WAL replay drops entries of one of two parallel pushes of a stream as
//! duplicates after a restart, though it acknowledged both). An acknowledgement
//! moves the files' positions and returns the batch's queue budget.
//!
//! Not here: the HTTP push itself (`crate::client::push`), the queue budget
//! (`crate::queue`), the offsets (`crate::positions`).

mod batcher;
mod body;
mod deliver;
mod reconcile;

pub use reconcile::Reconciler;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::client::push::Pusher;
use crate::config::ClientConfig;
use crate::positions::Positions;
use crate::queue::{Budget, ChunkSink, StreamRef};

/// A stream's key for "one push of it at a time": a hash of its tenant and
/// labels, so two sources with the same labels count as one stream (as the
/// service sees them).
fn stream_key(stream: &StreamRef) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    stream.tenant.hash(&mut h);
    stream.labels_json.hash(&mut h);
    h.finish()
}

/// Settings of the batcher and pushers.
#[derive(Debug, Clone, Copy)]
pub struct BatchSettings {
    pub max_bytes: usize,
    pub max_wait: Duration,
    pub max_in_flight: usize,
}

impl BatchSettings {
    /// `client.batch`.
    pub fn of(client: &ClientConfig) -> Self {
        Self {
            max_bytes: client.batch.max_bytes.get() as usize,
            max_wait: client.batch.max_wait.get(),
            max_in_flight: client.batch.max_in_flight,
        }
    }
}

/// What sees every line the batcher takes, before it is batched (the alert
/// engine's tap). It must never block: the batcher runs it inline.
pub trait LineTap: Send {
    fn observe(&mut self, stream: &StreamRef, line: &str);
    /// The end of a chunk: a good moment to hand on what was gathered.
    fn flush(&mut self);
}

/// What the pipeline delivered, for `tailship push` and the demo.
#[derive(Debug, Default, Clone)]
pub struct Totals {
    pub lines_delivered: u64,
    pub bytes_delivered: u64,
    pub wire_bytes: u64,
    /// Refused by the service (a 4xx other than 429).
    pub lines_rejected: u64,
    /// Not delivered when `client.retry.max_retries` ran out.
    pub lines_given_up: u64,
    pub batches_aborted: u64,
    /// The first refusal message of each status.
    pub refusals: Vec<String>,
    /// The last error of each batch given up (at most a few, each once).
    pub give_ups: Vec<String>,
}

/// What rides along a [`Shipper`] beyond its queue and pushes.
#[derive(Default)]
pub struct Along {
    /// Sees every line the batcher takes (the alert engine's); dropped when
    /// the batcher ends, which tells the alert engine to flush.
    pub tap: Option<Box<dyn LineTap>>,
    /// Looks lines read again after a restart up in the service first.
    pub reconciler: Option<Reconciler>,
    /// Where the batches in flight are shown (the agent's status).
    pub status: Option<Arc<crate::status::Status>>,
}

/// The running batcher and pushers: the way out of the agent.
pub struct Shipper {
    pub sink: ChunkSink,
    pub budget: Arc<Budget>,
    pub totals: Arc<Mutex<Totals>>,
    batcher: tokio::task::JoinHandle<()>,
    pushers: tokio::task::JoinHandle<()>,
}

impl Shipper {
    /// Starts the batcher and the pushers. `abort` gives up on batches not yet
    /// delivered (they stay unacknowledged, so files send them again after a restart).
    pub fn start(
        settings: BatchSettings,
        queue_bytes: usize,
        pusher: Arc<Pusher>,
        positions: Arc<Positions>,
        abort: CancellationToken,
    ) -> Self {
        Self::start_with(settings, queue_bytes, pusher, positions, abort, Along::default())
    }

    /// [`Shipper::start`] with what rides `along`.
    pub fn start_with(
        settings: BatchSettings,
        queue_bytes: usize,
        pusher: Arc<Pusher>,
        positions: Arc<Positions>,
        abort: CancellationToken,
        along: Along,
    ) -> Self {
        let Along { tap, reconciler, status } = along;
        let budget = Budget::new(queue_bytes);
        let (sink, rx) = ChunkSink::new(budget.clone());
        let (sealed_tx, sealed_rx) = mpsc::channel(1);
        let totals = Arc::new(Mutex::new(Totals::default()));
        let batcher =
            tokio::spawn(batcher::run(rx, sealed_tx, settings, positions.clone(), tap, reconciler, budget.clone()));
        let books = deliver::Books { budget: budget.clone(), totals: totals.clone(), status };
        let pushers = tokio::spawn(deliver::run(sealed_rx, pusher, positions, settings.max_in_flight, abort, books));
        Self { sink, budget, totals, batcher, pushers }
    }

    /// Waits until every queued line was pushed (or given up). Every clone of
    /// the sink must be dropped first, or this waits for ever.
    pub async fn finish(self) -> Totals {
        drop(self.sink);
        let _ = self.batcher.await;
        let _ = self.pushers.await;
        let t = self.totals.lock().map(|t| t.clone()).unwrap_or_default();
        t
    }
}
