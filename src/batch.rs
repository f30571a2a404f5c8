//! The bounded queue and the batcher.
//!
//! How it works, in plain words: a source fills a [`Chunk`] with processed
//! lines, then takes that chunk's size from the [`Budget`], a semaphore counted
//! in bytes. When the budget is spent the source waits: a file source simply
//! stops reading (its data waits on disk) and stdin stops being read, which
//! blocks its writer. The chunk's permit travels with its lines into a batch
//! and is returned only when that batch is acknowledged or dropped on purpose,
//! so the budget bounds every line held anywhere in the agent: queued,
//! batched, or in flight.
//!
//! The batcher groups lines by tenant, then by stream. Each line is escaped
//! once, straight into its stream's JSON buffer, with timestamps the agent
//! assigned bumped by 1 ns on a tie so they strictly increase within a stream.
//! A tenant's batch is sealed when the next line would take it past
//! `batch.max_bytes`, or when its oldest line has waited `batch.max_wait`.
//! Sealing registers the batch's file offsets with the positions store (in
//! seal order) and hands the body to the pushers, of which at most
//! `batch.max_in_flight` run at once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::alert::AlertTap;
use crate::client::push::{escape_json_into, PushOutcome, Pusher};
use crate::metrics::Metrics;
use crate::pipeline::{AckRef, Chunk, StreamRef};
use crate::pool::{self, Pool};
use crate::positions::Positions;

/// The byte budget shared by every line between reading and acknowledgement.
#[derive(Debug)]
pub struct Budget {
    sem: Arc<Semaphore>,
    max: usize,
    lines: AtomicI64,
}

impl Budget {
    pub fn new(max_bytes: usize) -> Arc<Self> {
        let max = max_bytes.clamp(1, Semaphore::MAX_PERMITS);
        Arc::new(Self { sem: Arc::new(Semaphore::new(max)), max, lines: AtomicI64::new(0) })
    }

    fn permits_for(&self, cost: usize) -> u32 {
        cost.clamp(1, self.max).min(u32::MAX as usize) as u32
    }

    /// Waits for `cost` bytes of budget, or returns `None` if `cancel` fires first.
    pub async fn acquire(&self, cost: usize, cancel: &CancellationToken) -> Option<OwnedSemaphorePermit> {
        let n = self.permits_for(cost);
        tokio::select! {
            p = self.sem.clone().acquire_many_owned(n) => p.ok(),
            _ = cancel.cancelled() => None,
        }
    }

    /// Bytes of budget in use.
    pub fn used(&self) -> usize {
        self.max - self.sem.available_permits()
    }

    pub fn max(&self) -> usize {
        self.max
    }
}

/// Where sources put their chunks: the queue in front of the batcher.
#[derive(Debug, Clone)]
pub struct ChunkSink {
    tx: mpsc::UnboundedSender<Chunk>,
    budget: Arc<Budget>,
}

impl ChunkSink {
    /// Takes budget for the chunk (waiting while the queue is full) and queues it.
    /// Returns false when `cancel` fired or the pipeline is gone: the chunk was not queued.
    pub async fn send(&self, mut chunk: Chunk, cancel: &CancellationToken) -> bool {
        if chunk.is_empty() {
            return true;
        }
        let Some(permit) = self.budget.acquire(chunk.cost(), cancel).await else { return false };
        chunk.permit = Some(permit);
        if chunk.read_at.is_none() {
            chunk.read_at = Some(Instant::now());
        }
        self.budget.lines.fetch_add(chunk.entries.len() as i64, Ordering::Relaxed);
        self.tx.send(chunk).is_ok()
    }

    /// [`ChunkSink::send`] for threads outside the runtime (file and stdin readers).
    pub fn send_blocking(&self, handle: &tokio::runtime::Handle, chunk: Chunk, cancel: &CancellationToken) -> bool {
        handle.block_on(self.send(chunk, cancel))
    }
}

/// A sealed batch on its way to the service.
struct Sealed {
    seq: u64,
    tenant: Option<Arc<str>>,
    /// The JSON body in parts, to be sent (or compressed) back to back.
    body: Vec<Vec<u8>>,
    lines: usize,
    raw_bytes: usize,
    acks: Vec<AckRef>,
    _permits: Vec<OwnedSemaphorePermit>,
    sources: HashMap<Arc<str>, u64>,
    oldest: Instant,
}

/// A tenant's batch being filled. Each stream's buffer starts with its own
/// part of the JSON (`{"streams":[{"stream":{..},"values":[` for the first,
/// `,{"stream":{..},"values":[` for the others), so sealing only closes them
/// and a one-stream batch is sent without copying.
struct Pending {
    /// (stream, JSON buffer, values in it)
    streams: Vec<(StreamRef, Vec<u8>, usize)>,
    index: HashMap<usize, usize>,
    size: usize,
    lines: usize,
    raw_bytes: usize,
    acks: Vec<AckRef>,
    permits: Vec<OwnedSemaphorePermit>,
    sources: HashMap<Arc<str>, u64>,
    started: Instant,
    oldest: Instant,
}

impl Pending {
    fn new(now: Instant) -> Self {
        Self {
            streams: Vec::new(),
            index: HashMap::new(),
            size: BODY_OVERHEAD,
            lines: 0,
            raw_bytes: 0,
            acks: Vec::new(),
            permits: Vec::new(),
            sources: HashMap::new(),
            started: now,
            oldest: now,
        }
    }

    /// Index of `stream`'s buffer in this batch, adding it on first use.
    /// The first stream's buffer is sized for a whole batch (it usually is one).
    fn stream_index(&mut self, stream: &StreamRef, key: usize, bodies: &Pool<u8>) -> usize {
        if let Some(i) = self.index.get(&key) {
            return *i;
        }
        let first = self.streams.is_empty();
        let mut buf = if first { bodies.take() } else { Vec::with_capacity(2 << 10) };
        buf.extend_from_slice(if first { b"{\"streams\":[{\"stream\":" } else { b",{\"stream\":" });
        buf.extend_from_slice(stream.labels_json.as_bytes());
        buf.extend_from_slice(b",\"values\":[");
        self.size += buf.len() + STREAM_OVERHEAD;
        self.streams.push((stream.clone(), buf, 0));
        self.index.insert(key, self.streams.len() - 1);
        self.streams.len() - 1
    }

    fn add_ack(&mut self, a: AckRef) {
        match self.acks.iter_mut().find(|x| x.file == a.file) {
            Some(x) => x.offset = x.offset.max(a.offset),
            None => self.acks.push(a),
        }
    }

    /// Closes every stream's JSON and returns the body's parts in order.
    fn into_body(self) -> Vec<Vec<u8>> {
        let n = self.streams.len();
        let mut parts: Vec<Vec<u8>> = self.streams.into_iter().map(|(_, buf, _)| buf).collect();
        for (i, part) in parts.iter_mut().enumerate() {
            part.extend_from_slice(if i + 1 == n { b"]}]}" } else { b"]}" });
        }
        parts
    }
}

const BODY_OVERHEAD: usize = 16;
const STREAM_OVERHEAD: usize = 32;
const VALUE_OVERHEAD: usize = 32;

/// Settings of the batcher and pushers.
#[derive(Debug, Clone, Copy)]
pub struct BatchSettings {
    pub max_bytes: usize,
    pub max_wait: Duration,
    pub max_in_flight: usize,
}

/// What the pipeline delivered, for `tailship push` and the demo.
#[derive(Debug, Default, Clone)]
pub struct Totals {
    pub lines_delivered: u64,
    pub bytes_delivered: u64,
    pub wire_bytes: u64,
    pub lines_rejected: u64,
    pub batches_aborted: u64,
    /// The first refusal message of each status.
    pub refusals: Vec<String>,
}

/// The running batcher and pushers.
pub struct Pipeline {
    pub sink: ChunkSink,
    pub budget: Arc<Budget>,
    pub totals: Arc<Mutex<Totals>>,
    batcher: tokio::task::JoinHandle<()>,
    pushers: tokio::task::JoinHandle<()>,
}

impl Pipeline {
    /// Starts the batcher and the pushers. `abort` gives up on batches not yet
    /// delivered (they stay unacknowledged, so files send them again after a restart).
    pub fn start(
        settings: BatchSettings,
        queue_bytes: usize,
        pusher: Arc<Pusher>,
        positions: Arc<Positions>,
        abort: CancellationToken,
    ) -> Self {
        Self::start_with_alerts(settings, queue_bytes, pusher, positions, abort, None)
    }

    /// [`Pipeline::start`] with an alert tap that sees every line the batcher
    /// takes (it never blocks; see `crate::alert`). The tap is dropped when the
    /// batcher ends, which tells the alert engine to flush.
    pub fn start_with_alerts(
        settings: BatchSettings,
        queue_bytes: usize,
        pusher: Arc<Pusher>,
        positions: Arc<Positions>,
        abort: CancellationToken,
        alerts: Option<AlertTap>,
    ) -> Self {
        let budget = Budget::new(queue_bytes);
        let (tx, rx) = mpsc::unbounded_channel();
        let (sealed_tx, sealed_rx) = mpsc::channel(1);
        let totals = Arc::new(Mutex::new(Totals::default()));
        let batcher = tokio::spawn(run_batcher(rx, sealed_tx, settings, positions.clone(), alerts));
        let pushers = tokio::spawn(run_pushers(
            sealed_rx,
            pusher,
            positions,
            settings.max_in_flight,
            abort,
            budget.clone(),
            totals.clone(),
        ));
        Self { sink: ChunkSink { tx, budget: budget.clone() }, budget, totals, batcher, pushers }
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

async fn run_batcher(
    mut rx: mpsc::UnboundedReceiver<Chunk>,
    out: mpsc::Sender<Sealed>,
    s: BatchSettings,
    positions: Arc<Positions>,
    mut alerts: Option<AlertTap>,
) {
    let mut pending: HashMap<Option<Arc<str>>, Pending> = HashMap::new();
    let mut last_ts: HashMap<usize, i64> = HashMap::new();
    let mut seq: u64 = 0;
    let bodies = pool::bodies(s.max_bytes, s.max_in_flight);
    let mut digits = TsDigits::new();
    loop {
        let deadline = pending.values().map(|p| p.started + s.max_wait).min();
        let chunk = tokio::select! {
            c = rx.recv() => c,
            _ = sleep_until_opt(deadline) => {
                let now = Instant::now();
                let due: Vec<_> = pending.iter().filter(|(_, p)| p.started + s.max_wait <= now).map(|(k, _)| k.clone()).collect();
                for k in due {
                    if let Some(p) = pending.remove(&k) {
                        seal(p, k, &mut seq, &positions, &out).await;
                    }
                }
                continue;
            }
        };
        let Some(mut chunk) = chunk else { break };
        pool::note_activity();
        let now = Instant::now();
        let read_at = chunk.read_at.unwrap_or(now);
        let mut last_tenant: Option<Option<Arc<str>>> = None;
        let entries = std::mem::take(&mut chunk.entries);
        // Entries come in runs of one stream (a file's lines): look the stream,
        // its batch and its last timestamp up once per run, not once per line.
        let mut i = 0;
        while i < entries.len() {
            let sid = entries[i].stream;
            let stream = chunk.stream(&entries[i]).clone();
            let run_end = entries[i..].iter().position(|e| e.stream != sid).map_or(entries.len(), |n| i + n);
            let tenant = stream.tenant.clone();
            let key = Arc::as_ptr(&stream) as usize;
            let mut last = last_ts.get(&key).copied().unwrap_or(i64::MIN);
            while i < run_end {
                let p = pending.entry(tenant.clone()).or_insert_with(|| Pending::new(now));
                let idx = p.stream_index(&stream, key, bodies);
                let (_, values, count) = &mut p.streams[idx];
                let mut size = p.size;
                let mut raw = 0usize;
                let first_i = i;
                while i < run_end {
                    let e = &entries[i];
                    let line = chunk.line(e);
                    if p.lines + (i - first_i) > 0 && size + line.len() + VALUE_OVERHEAD > s.max_bytes {
                        break;
                    }
                    if let Some(tap) = alerts.as_mut() {
                        tap.observe(&stream, line);
                    }
                    let ts = if e.assigned_ts && e.ts <= last { last + 1 } else { e.ts };
                    last = last.max(ts);
                    let before = values.len();
                    values.extend_from_slice(if *count == 0 { b"[\"" } else { b",[\"" });
                    *count += 1;
                    values.extend_from_slice(digits.format(ts.max(0) as u64));
                    values.extend_from_slice(b"\",\"");
                    escape_json_into(values, line);
                    values.extend_from_slice(b"\"]");
                    size += values.len() - before;
                    raw += line.len();
                    i += 1;
                }
                let added = (i - first_i) as u64;
                p.size = size;
                p.lines += added as usize;
                p.raw_bytes += raw;
                if added > 0 {
                    p.oldest = p.oldest.min(read_at);
                    match p.sources.get_mut(&chunk.source) {
                        Some(n) => *n += added,
                        None => {
                            p.sources.insert(chunk.source.clone(), added);
                        }
                    }
                }
                if i < run_end {
                    // The batch is full: seal it and go on with a new one. It holds
                    // part of this chunk, whose position goes with a later batch: a
                    // mark at offset 0 keeps the file's position from passing this
                    // batch's lines until it, too, is acknowledged (batches in flight
                    // are acknowledged in any order).
                    let mut full = std::mem::replace(p, Pending::new(now));
                    if let Some(a) = chunk.ack {
                        full.add_ack(AckRef { file: a.file, offset: 0 });
                    }
                    seal(full, tenant.clone(), &mut seq, &positions, &out).await;
                }
            }
            last_ts.insert(key, last);
            last_tenant = Some(tenant);
        }
        if let Some(tap) = alerts.as_mut() {
            tap.flush();
        }
        pool::CHUNK_TEXT.give(std::mem::take(&mut chunk.buf).into_bytes());
        // The chunk's position and budget go with the batch holding its last line
        // (or, for a chunk whose lines were all dropped, the batch of its tenant-less
        // default): acknowledging that batch proves every earlier line was handled.
        let tenant = last_tenant.unwrap_or_else(|| chunk_tenant_hint(&pending));
        let p = pending.entry(tenant).or_insert_with(|| Pending::new(now));
        if let Some(a) = chunk.ack {
            p.add_ack(a);
        }
        if let Some(permit) = chunk.permit.take() {
            p.permits.push(permit);
        }
    }
    for (k, p) in pending.drain() {
        seal(p, k, &mut seq, &positions, &out).await;
    }
}

/// A chunk with no lines left (all dropped) still carries a position: attach it
/// to any open batch, or to a new empty one, so it is acknowledged in order.
fn chunk_tenant_hint(pending: &HashMap<Option<Arc<str>>, Pending>) -> Option<Arc<str>> {
    pending.keys().next().cloned().unwrap_or(None)
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d.into()).await,
        None => std::future::pending().await,
    }
}

/// Decimal timestamps. Lines of one read share the read time, bumped by 1 ns
/// each to keep them in order, so most timestamps are the previous one plus
/// one: those are made by incrementing the previous digits in place instead
/// of formatting all nineteen again.
struct TsDigits {
    /// The last value formatted, `None` before the first.
    last: Option<u64>,
    /// Its digits, right-aligned: `buf[start..]`.
    buf: [u8; 20],
    start: usize,
}

impl TsDigits {
    fn new() -> Self {
        Self { last: None, buf: [b'0'; 20], start: 19 }
    }

    #[inline]
    fn format(&mut self, v: u64) -> &[u8] {
        if self.last.is_some_and(|last| last.checked_add(1) == Some(v)) {
            let mut i = self.buf.len() - 1;
            loop {
                if self.buf[i] != b'9' {
                    self.buf[i] += 1;
                    self.last = Some(v);
                    return &self.buf[self.start..];
                }
                self.buf[i] = b'0';
                if i == self.start {
                    // 99..9 + 1 gains a digit: format it whole.
                    break;
                }
                i -= 1;
            }
        }
        let mut b = itoa::Buffer::new();
        let digits = b.format(v).as_bytes();
        self.start = self.buf.len() - digits.len();
        self.buf[self.start..].copy_from_slice(digits);
        self.last = Some(v);
        &self.buf[self.start..]
    }
}

async fn seal(
    mut p: Pending,
    tenant: Option<Arc<str>>,
    seq: &mut u64,
    positions: &Positions,
    out: &mpsc::Sender<Sealed>,
) {
    *seq += 1;
    positions.register(*seq, &p.acks);
    let (lines, raw_bytes, acks, permits, sources, oldest) = (
        p.lines,
        p.raw_bytes,
        std::mem::take(&mut p.acks),
        std::mem::take(&mut p.permits),
        std::mem::take(&mut p.sources),
        p.oldest,
    );
    let body = if lines > 0 { p.into_body() } else { Vec::new() };
    let sealed = Sealed { seq: *seq, tenant, body, lines, raw_bytes, acks, _permits: permits, sources, oldest };
    // The pushers end only after this channel closes, so a send cannot fail
    // while the batcher runs; if it did, the batch stays unacknowledged.
    let _ = out.send(sealed).await;
}

async fn run_pushers(
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
    let gauges = {
        let budget = budget.clone();
        let outstanding = outstanding.clone();
        tokio::spawn(async move {
            let m = Metrics::get();
            loop {
                m.queue_bytes.set(budget.used() as i64);
                m.queue_lines.set(budget.lines.load(Ordering::Relaxed));
                let oldest = outstanding.lock().ok().and_then(|o| o.values().min().copied());
                m.oldest_unacked_seconds.set(oldest.map(|t| t.elapsed().as_secs() as i64).unwrap_or(0));
                if pool::trim_idle() {
                    tracing::debug!("pipeline idle: pooled buffers freed, free memory returned to the system");
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        })
    };
    while let Some(batch) = rx.recv().await {
        // A turn to compress first, then a push slot: a batch waiting for
        // either waits here, uncompressed, one at a time.
        let compress = if batch.lines > 0 { pusher.compress_permit().await } else { None };
        let Ok(slot) = slots.clone().acquire_owned().await else { break };
        if let Ok(mut o) = outstanding.lock() {
            o.insert(batch.seq, batch.oldest);
        }
        let (pusher, positions, abort, budget, totals, outstanding) =
            (pusher.clone(), positions.clone(), abort.clone(), budget.clone(), totals.clone(), outstanding.clone());
        tasks.spawn(async move {
            let _slot = slot;
            let outcome = if batch.lines == 0 {
                (PushOutcome::Delivered, 0)
            } else {
                pusher.push(batch.tenant.as_deref(), batch.body, &abort, compress).await
            };
            let m = Metrics::get();
            match outcome {
                (PushOutcome::Delivered, wire) => {
                    positions.ack(batch.seq, &batch.acks);
                    m.lines_pushed.inc_by(batch.lines as u64);
                    m.bytes_pushed.with_label_values(&["raw"]).inc_by(batch.raw_bytes as u64);
                    m.bytes_pushed.with_label_values(&["wire"]).inc_by(wire as u64);
                    if let Ok(mut t) = totals.lock() {
                        t.lines_delivered += batch.lines as u64;
                        t.bytes_delivered += batch.raw_bytes as u64;
                        t.wire_bytes += wire as u64;
                    }
                }
                (PushOutcome::Rejected { status, message }, _) => {
                    positions.ack(batch.seq, &batch.acks);
                    let reason = if status.is_some_and(|s| s == 429 || s >= 500) || status.is_none() {
                        "retries_exhausted"
                    } else {
                        "rejected"
                    };
                    for (source, n) in &batch.sources {
                        m.lines_dropped.with_label_values(&[source, reason]).inc_by(*n);
                    }
                    if let Ok(mut t) = totals.lock() {
                        t.lines_rejected += batch.lines as u64;
                        if t.refusals.len() < 8 && !t.refusals.contains(&message) {
                            t.refusals.push(message);
                        }
                    }
                }
                (PushOutcome::Aborted, _) => {
                    if let Ok(mut t) = totals.lock() {
                        t.batches_aborted += 1;
                    }
                }
            }
            budget.lines.fetch_sub(batch.lines as i64, Ordering::Relaxed);
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
    m.queue_bytes.set(budget.used() as i64);
    m.queue_lines.set(budget.lines.load(Ordering::Relaxed));
    m.oldest_unacked_seconds.set(0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamp_digits_match_plain_formatting_across_carries_and_jumps() {
        let mut d = TsDigits::new();
        let mut check = |v: u64| {
            let ours = String::from_utf8(d.format(v).to_vec()).unwrap();
            assert_eq!(ours, v.to_string());
        };
        // Runs of +1 through every kind of carry, and jumps between them.
        for start in [0u64, 7, 95, 998, 1_700_000_000_123_456_789, 1_699_999_999_999_999_990, u64::MAX - 3] {
            for k in 0..=12u64 {
                if let Some(v) = start.checked_add(k) {
                    check(v);
                }
            }
        }
        for v in [5u64, 4, 10, 9_999, 10_000, 10_001, 3, 4] {
            check(v);
        }
    }
}
