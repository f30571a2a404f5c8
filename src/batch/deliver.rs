//! Delivering sealed batches: a compression turn, then a push slot, then the
//! push with its retries; the outcome acknowledges positions, returns the
//! queue budget and feeds the metrics and totals.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::batcher::Sealed;
use super::Totals;
use crate::client::push::{PushOutcome, Pusher};
use crate::metrics::Metrics;
use crate::pool;
use crate::positions::Positions;
use crate::queue::Budget;

/// The pushers: at most `max_in_flight` batches on their way at once.
pub(super) async fn run(
    mut rx: mpsc::Receiver<Sealed>,
    pusher: Arc<Pusher>,
    positions: Arc<Positions>,
    max_in_flight: usize,
    abort: CancellationToken,
    budget: Arc<Budget>,
    totals: Arc<Mutex<Totals>>,
) {
    let slots = Arc::new(Semaphore::new(max_in_flight.max(1)));
    let outstanding: Arc<Mutex<std::collections::BTreeMap<u64, Instant>>> = Arc::default();
    let mut tasks = JoinSet::new();
    let client = pusher.name().clone();
    let gauges = spawn_gauges(client.clone(), budget.clone(), outstanding.clone());
    while let Some(mut batch) = rx.recv().await {
        // A turn to compress first, then a push slot: a batch waiting for
        // either waits here, uncompressed, one at a time.
        let compress = if batch.lines > 0 { pusher.compress_permit().await } else { None };
        let Ok(slot) = slots.clone().acquire_owned().await else { break };
        if let Ok(mut o) = outstanding.lock() {
            o.insert(batch.seq, batch.oldest);
        }
        let (pusher, positions, abort, budget, totals, outstanding, client) = (
            pusher.clone(),
            positions.clone(),
            abort.clone(),
            budget.clone(),
            totals.clone(),
            outstanding.clone(),
            client.clone(),
        );
        // The batch's share of the queue budget goes with the push and returns
        // only when it is over. (A closure captures only the fields it uses:
        // without this move, the permits would be dropped here, when the push
        // starts, and the budget would not bound batches in flight.)
        let permits = std::mem::take(&mut batch.permits);
        tasks.spawn(async move {
            let _slot = slot;
            let outcome = if batch.lines == 0 {
                (PushOutcome::Delivered, 0)
            } else {
                pusher.push(batch.tenant.as_deref(), std::mem::take(&mut batch.body), &abort, compress).await
            };
            settle(&client, outcome, &batch, &positions, &totals);
            budget.lines_done(batch.lines);
            drop(permits);
            if let Ok(mut o) = outstanding.lock() {
                o.remove(&batch.seq);
            }
        });
        while let Some(r) = tasks.try_join_next() {
            if let Err(e) = r {
                tracing::error!(error = %e, "push task failed");
            }
        }
    }
    while let Some(r) = tasks.join_next().await {
        if let Err(e) = r {
            tracing::error!(error = %e, "push task failed");
        }
    }
    gauges.abort();
    let m = Metrics::get();
    m.queue_bytes.with_label_values(&[&client]).set(budget.used() as i64);
    m.queue_lines.with_label_values(&[&client]).set(budget.lines());
    m.oldest_unacked_seconds.with_label_values(&[&client]).set(0);
    crate::status::Status::get().batches_in_flight(&client, 0);
}

/// Samples the queue and the batches in flight into the metrics and the
/// status twice a second, and frees pooled buffers when the pipeline idles.
fn spawn_gauges(
    client: Arc<str>,
    budget: Arc<Budget>,
    outstanding: Arc<Mutex<std::collections::BTreeMap<u64, Instant>>>,
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
            let in_flight = outstanding.lock().map(|o| o.len() as u64).unwrap_or(0);
            crate::status::Status::get().batches_in_flight(&client, in_flight);
            if pool::trim_idle() {
                tracing::debug!("pipeline idle: pooled buffers freed, free memory returned to the system");
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    })
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
        (PushOutcome::GaveUp { message }, _) => {
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
