//! Delivering sealed batches: a compression turn, then a push slot, then the
//! push with its retries; the outcome acknowledges positions, returns the
//! queue budget and feeds the metrics and totals.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::batcher::Sealed;
use super::Totals;
use crate::client::push::{PushOutcome, Pusher};
use crate::client::slot::PushSlot;
use crate::metrics::Metrics;
use crate::pool;
use crate::positions::Positions;
use crate::queue::Budget;
use crate::status::Status;

/// How long a tenant's lane waits for a batch, with none on its way, before
/// it ends (the tenant's next batch starts it again).
const LANE_IDLE: Duration = Duration::from_secs(60);

/// Where delivery accounts besides the positions: the queue budget
/// returned, the totals, the batches in flight (the agent's status).
pub(super) struct Books {
    pub budget: Arc<Budget>,
    pub totals: Arc<Mutex<Totals>>,
    pub status: Option<Arc<Status>>,
}

/// What every lane and push shares.
struct Shared {
    pusher: Arc<Pusher>,
    positions: Arc<Positions>,
    abort: CancellationToken,
    budget: Arc<Budget>,
    totals: Arc<Mutex<Totals>>,
    outstanding: Arc<Mutex<std::collections::BTreeMap<u64, Instant>>>,
    client: Arc<str>,
    /// The client's push slots (`batch.max_in_flight`).
    slots: Arc<Semaphore>,
    max_in_flight: usize,
}

/// The pushers: at most `max_in_flight` batches on their way at once, in
/// one lane per tenant. A lane takes its tenant's batches in order, at most
/// `max_in_flight` of them on their way; a batch waiting out a 429 gives its
/// push slot back meanwhile (see [`crate::client::slot`]), so a tenant the
/// service keeps refusing holds back no other tenant's pushes.
pub(super) async fn run(
    mut rx: mpsc::Receiver<Sealed>,
    pusher: Arc<Pusher>,
    positions: Arc<Positions>,
    max_in_flight: usize,
    abort: CancellationToken,
    books: Books,
) {
    let Books { budget, totals, status } = books;
    let max_in_flight = max_in_flight.max(1);
    let outstanding: Arc<Mutex<std::collections::BTreeMap<u64, Instant>>> = Arc::default();
    let client = pusher.name().clone();
    let gauges = spawn_gauges(client.clone(), budget.clone(), outstanding.clone(), status.clone());
    let shared = Arc::new(Shared {
        pusher,
        positions,
        abort,
        budget: budget.clone(),
        totals,
        outstanding,
        client: client.clone(),
        slots: Arc::new(Semaphore::new(max_in_flight)),
        max_in_flight,
    });
    let mut lanes: HashMap<Option<Arc<str>>, mpsc::UnboundedSender<Sealed>> = HashMap::new();
    let mut running = JoinSet::new();
    while let Some(batch) = rx.recv().await {
        let batch = match lanes.get(&batch.tenant) {
            Some(lane) => match lane.send(batch) {
                Ok(()) => continue,
                // The lane ended while idle: a new one takes the batch.
                Err(mpsc::error::SendError(batch)) => batch,
            },
            None => batch,
        };
        lanes.retain(|_, lane| !lane.is_closed());
        let (tx, lane_rx) = mpsc::unbounded_channel();
        let tenant = batch.tenant.clone();
        // The receiver is alive: it is moved into the lane just below.
        let _ = tx.send(batch);
        lanes.insert(tenant, tx);
        running.spawn(lane(lane_rx, shared.clone()));
        while let Some(r) = running.try_join_next() {
            if let Err(e) = r {
                tracing::error!(error = %e, "push lane failed");
            }
        }
    }
    drop(lanes);
    while let Some(r) = running.join_next().await {
        if let Err(e) = r {
            tracing::error!(error = %e, "push lane failed");
        }
    }
    gauges.abort();
    let m = Metrics::get();
    m.queue_bytes.with_label_values(&[&client]).set(budget.used() as i64);
    m.queue_lines.with_label_values(&[&client]).set(budget.lines());
    m.oldest_unacked_seconds.with_label_values(&[&client]).set(0);
    if let Some(s) = &status {
        s.batches_in_flight(&client, 0);
    }
}

/// The streams of a lane's batches on their way: a batch that holds one
/// of them waits until it is free (one push of a stream at a time).
#[derive(Default)]
struct Busy {
    streams: Mutex<std::collections::HashSet<u64>>,
    freed: tokio::sync::Notify,
}

impl Busy {
    /// Waits until none of `streams` is on its way, then marks them so.
    async fn claim(&self, streams: &[u64]) {
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if let Ok(mut busy) = self.streams.lock() {
                if !streams.iter().any(|k| busy.contains(k)) {
                    busy.extend(streams.iter().copied());
                    return;
                }
            } else {
                return;
            }
            freed.await;
        }
    }

    fn release(&self, streams: &[u64]) {
        if let Ok(mut busy) = self.streams.lock() {
            for k in streams {
                busy.remove(k);
            }
        }
        self.freed.notify_waiters();
    }
}

/// One tenant's lane: its batches in order, each waiting until no batch
/// on its way holds one of its streams, then a turn of the lane's own
/// slots, then a turn to compress, then a push slot. Ends when the batches
/// end, or after [`LANE_IDLE`] with nothing on its way.
async fn lane(mut rx: mpsc::UnboundedReceiver<Sealed>, s: Arc<Shared>) {
    let own_slots = Arc::new(Semaphore::new(s.max_in_flight));
    let busy = Arc::new(Busy::default());
    let mut tasks = JoinSet::new();
    loop {
        tokio::select! {
            batch = rx.recv() => match batch {
                Some(batch) => {
                    if !start(batch, &s, &own_slots, &busy, &mut tasks).await {
                        break;
                    }
                }
                None => break,
            },
            Some(r) = tasks.join_next(), if !tasks.is_empty() => {
                if let Err(e) = r {
                    tracing::error!(error = %e, "push task failed");
                }
            }
            // What was sent before the close is still received; after it,
            // a new lane takes the tenant's batches.
            _ = tokio::time::sleep(LANE_IDLE), if tasks.is_empty() => rx.close(),
        }
    }
    while let Some(r) = tasks.join_next().await {
        if let Err(e) = r {
            tracing::error!(error = %e, "push task failed");
        }
    }
}

/// Starts `batch`'s push once it has its turns. False when the slots closed.
async fn start(
    mut batch: Sealed,
    s: &Arc<Shared>,
    own_slots: &Arc<Semaphore>,
    busy: &Arc<Busy>,
    tasks: &mut JoinSet<()>,
) -> bool {
    // Its streams free first: a batch of a stream goes only once the one
    // before it is over (delivered, refused or given up).
    busy.claim(&batch.streams).await;
    // The lane's slot next: a lane whose batches all wait out 429s holds
    // no turn to compress and no push slot another tenant could use.
    let Ok(own) = own_slots.clone().acquire_owned().await else { return false };
    // A turn to compress, then a push slot: a batch waiting for either
    // waits here, uncompressed, one at a time.
    let compress = if batch.lines > 0 { s.pusher.compress_permit().await } else { None };
    let Ok(permit) = s.slots.clone().acquire_owned().await else { return false };
    let slot = PushSlot::new(s.slots.clone(), permit);
    if let Ok(mut o) = s.outstanding.lock() {
        o.insert(batch.seq, batch.oldest);
    }
    // The batch's share of the queue budget goes with the push and returns
    // only when it is over. (A closure captures only the fields it uses:
    // without this move, the permits would be dropped here, when the push
    // starts, and the budget would not bound batches in flight.)
    let permits = std::mem::take(&mut batch.permits);
    let s = s.clone();
    let busy = busy.clone();
    tasks.spawn(async move {
        let _own = own;
        let outcome = match batch.body.take() {
            Some(body) if batch.lines > 0 => {
                s.pusher.push(batch.tenant.as_deref(), body, &s.abort, compress, Some(&slot)).await
            }
            _ => (PushOutcome::Delivered, 0),
        };
        drop(slot);
        busy.release(&batch.streams);
        if batch.lines > 0 {
            promtail_counts(&s.pusher, &outcome, &batch);
        }
        settle(&s.client, outcome, &batch, &s.positions, &s.totals);
        s.budget.lines_done(batch.lines);
        drop(permits);
        if let Ok(mut o) = s.outstanding.lock() {
            o.remove(&batch.seq);
        }
    });
    true
}

/// Samples the queue and the batches in flight into the metrics and the
/// status twice a second, and frees pooled buffers when the pipeline idles.
fn spawn_gauges(
    client: Arc<str>,
    budget: Arc<Budget>,
    outstanding: Arc<Mutex<std::collections::BTreeMap<u64, Instant>>>,
    status: Option<Arc<Status>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let m = Metrics::get();
        let (queue_bytes, queue_lines, oldest_unacked) = (
            m.queue_bytes.with_label_values(&[&client]),
            m.queue_lines.with_label_values(&[&client]),
            m.oldest_unacked_seconds.with_label_values(&[&client]),
        );
        loop {
            queue_bytes.set(budget.used() as i64);
            queue_lines.set(budget.lines());
            let oldest = outstanding.lock().ok().and_then(|o| o.values().min().copied());
            oldest_unacked.set(oldest.map(|t| t.elapsed().as_secs() as i64).unwrap_or(0));
            if let Some(s) = &status {
                s.batches_in_flight(&client, outstanding.lock().map(|o| o.len() as u64).unwrap_or(0));
            }
            if pool::trim_idle() {
                tracing::debug!("pipeline idle: pooled buffers freed, free memory returned to the system");
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    })
}

/// Promtail's client metrics of a push's outcome, when they are on: what
/// was sent, and what was dropped and why (Promtail's reasons: a refusal or
/// retries run out are `ingester_error`, or `rate_limited` when the last
/// answer was 429). Once per batch.
fn promtail_counts(pusher: &Pusher, outcome: &(PushOutcome, usize), batch: &Sealed) {
    let Some(p) = crate::metrics::promtail::get() else { return };
    let host = pusher.host();
    let tenant = batch.tenant.as_deref().unwrap_or("");
    let (lines, wire) = (batch.lines as u64, outcome.1 as u64);
    match &outcome.0 {
        PushOutcome::Delivered => p.sent(&host, lines, outcome.1),
        PushOutcome::Rejected { ignored, .. } => {
            let refused = match ignored {
                Some((n, total)) if *total == lines => *n,
                _ => lines,
            };
            let stored = lines - refused;
            if stored > 0 {
                p.sent(&host, stored, (wire * stored / lines.max(1)) as usize);
            }
            p.dropped(&host, tenant, "ingester_error", refused, wire * refused / lines.max(1));
        }
        PushOutcome::GaveUp { status, .. } => {
            let reason = if *status == Some(429) { "rate_limited" } else { "ingester_error" };
            p.dropped(&host, tenant, reason, lines, wire);
        }
        PushOutcome::Aborted => {}
    }
}

/// What a push's outcome does: acknowledges positions (unless aborted: the
/// lines are sent again after a restart), counts, and keeps the totals.
fn settle(client: &str, outcome: (PushOutcome, usize), batch: &Sealed, positions: &Positions, totals: &Mutex<Totals>) {
    let m = Metrics::get();
    match outcome {
        (PushOutcome::Delivered, wire) => {
            positions.ack(batch.seq, &batch.acks);
            m.lines_pushed.with_label_values(&[client]).inc_by(batch.lines as u64);
            m.bytes_pushed.with_label_values(&[client, "raw"]).inc_by(batch.raw_bytes as u64);
            m.bytes_pushed.with_label_values(&[client, "wire"]).inc_by(wire as u64);
            if let Ok(mut t) = totals.lock() {
                t.lines_delivered += batch.lines as u64;
                t.bytes_delivered += batch.raw_bytes as u64;
                t.wire_bytes += wire as u64;
            }
        }
        (PushOutcome::Rejected { message, ignored, .. }, wire) => {
            positions.ack(batch.seq, &batch.acks);
            // The service may have stored part of the batch (Loki
            // refuses only the entries it ignored): count those as
            // delivered. Ignored lines are charged to the batch's
            // sources in order.
            let lines = batch.lines as u64;
            let refused = match ignored {
                Some((n, total)) if total == lines => n,
                _ => lines,
            };
            let mut left = refused;
            for (source, n) in &batch.sources {
                let here = left.min(*n);
                left -= here;
                if here > 0 {
                    m.lines_dropped.with_label_values(&[source, "rejected"]).inc_by(here);
                }
            }
            let stored = lines - refused;
            if stored > 0 {
                m.lines_pushed.with_label_values(&[client]).inc_by(stored);
                m.bytes_pushed.with_label_values(&[client, "wire"]).inc_by(wire as u64);
            }
            if let Ok(mut t) = totals.lock() {
                t.lines_delivered += stored;
                t.lines_rejected += refused;
                if t.refusals.len() < 8 && !t.refusals.contains(&message) {
                    t.refusals.push(message);
                }
            }
        }
        (PushOutcome::GaveUp { message, .. }, _) => {
            positions.ack(batch.seq, &batch.acks);
            for (source, n) in &batch.sources {
                m.lines_dropped.with_label_values(&[source, "retries_exhausted"]).inc_by(*n);
            }
            if let Ok(mut t) = totals.lock() {
                t.lines_given_up += batch.lines as u64;
                if t.give_ups.len() < 8 && !t.give_ups.contains(&message) {
                    t.give_ups.push(message);
                }
            }
        }
        (PushOutcome::Aborted, _) => {
            if let Ok(mut t) = totals.lock() {
                t.batches_aborted += 1;
            }
        }
    }
}
