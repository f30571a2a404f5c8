//! The batcher: chunks in, sealed batches out. Lines are grouped by tenant,
//! then by stream, with agent-assigned timestamps bumped by 1 ns on a tie so
//! they strictly increase within a stream. A line stays where it was read:
//! a batch holds its chunks' texts and where each line sits (see `body`),
//! and its JSON is written once, when it is pushed.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{mpsc, OwnedSemaphorePermit};

use super::body::{Streams, Text};
use super::reconcile::{lines_read_again, Reconciler};
use super::{BatchSettings, LineTap};
use crate::client::body::Body;
use crate::pool;
use crate::positions::{AckRef, Positions, Run};
use crate::queue::{Budget, Chunk, Entry, PerStream, StreamRef};
use crate::util::sleep_until_opt;

/// A sealed batch on its way to the service.
pub(super) struct Sealed {
    pub(super) seq: u64,
    pub(super) tenant: Option<Arc<str>>,
    /// The lines, encoded as JSON when pushed; `None` for a batch of no lines.
    pub(super) body: Option<Body>,
    pub(super) lines: usize,
    pub(super) raw_bytes: usize,
    pub(super) acks: Vec<AckRef>,
    /// This batch's share of the queue budget, returned when it is acknowledged or given up.
    pub(super) permits: Vec<OwnedSemaphorePermit>,
    pub(super) sources: HashMap<Arc<str>, u64>,
    pub(super) oldest: Instant,
    /// Its streams, by a hash of their labels: a batch holding one of them
    /// waits for this one to be over (see `deliver`).
    pub(super) streams: Vec<u64>,
}

/// A tenant's batch being filled.
struct Pending {
    /// The batch's sequence number.
    seq: u64,
    /// The lines, by stream.
    body: Streams,
    /// Streams' indexes in `body`, by stream pointer.
    index: HashMap<usize, usize>,
    /// The hashes of the streams' labels (see [`Sealed::streams`]).
    streams: Vec<u64>,
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
    fn new(now: Instant, seq: &mut u64) -> Self {
        *seq += 1;
        Self {
            seq: *seq,
            body: Streams::default(),
            index: HashMap::new(),
            streams: Vec::new(),
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

    /// Index of `stream` in this batch, adding it on first use.
    fn stream_index(&mut self, stream: &StreamRef, key: usize) -> usize {
        if let Some(i) = self.index.get(&key) {
            return *i;
        }
        let (i, framing) = self.body.add_stream(stream);
        self.size += framing + STREAM_OVERHEAD;
        self.index.insert(key, i);
        self.streams.push(super::stream_key(stream));
        i
    }

    fn add_ack(&mut self, a: AckRef) {
        match self.acks.iter_mut().find(|x| x.file == a.file) {
            Some(x) => x.offset = x.offset.max(a.offset),
            None => self.acks.push(a),
        }
    }
}

const BODY_OVERHEAD: usize = 16;
const STREAM_OVERHEAD: usize = 32;
const VALUE_OVERHEAD: usize = 32;

/// The batcher task: see the module documentation of `batch`.
pub(super) async fn run(
    mut rx: mpsc::UnboundedReceiver<Chunk>,
    out: mpsc::Sender<Sealed>,
    s: BatchSettings,
    positions: Arc<Positions>,
    tap: Option<Box<dyn LineTap>>,
    reconciler: Option<Reconciler>,
    budget: Arc<Budget>,
) {
    let mut b =
        Batcher { pending: HashMap::new(), last_ts: PerStream::default(), seq: first_seq(), s, positions, out, tap };
    loop {
        let deadline = b.pending.values().map(|p| p.started + b.s.max_wait).min();
        let chunk = tokio::select! {
            c = rx.recv() => c,
            _ = sleep_until_opt(deadline.map(Into::into)) => {
                b.seal_due().await;
                if let Some(r) = reconciler.as_ref() {
                    r.tidy();
                }
                continue;
            }
        };
        let Some(mut chunk) = chunk else { break };
        if chunk.replayed > 0 {
            lines_read_again(reconciler.as_ref(), &mut chunk, &budget).await;
        }
        b.take(chunk).await;
    }
    b.seal_all().await;
}

/// The first batch's sequence number: the time in ms, times 65,536, so a
/// restarted agent's batches never take numbers of an earlier one's (the
/// positions log names batches of both; see `positions::flight`).
fn first_seq() -> u64 {
    let ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    ms << 16
}

/// The batcher's state: the tenants' batches being filled.
struct Batcher {
    pending: HashMap<Option<Arc<str>>, Pending>,
    /// Per stream (by pointer, while it lives), the last timestamp batched.
    last_ts: PerStream<i64>,
    seq: u64,
    s: BatchSettings,
    positions: Arc<Positions>,
    out: mpsc::Sender<Sealed>,
    tap: Option<Box<dyn LineTap>>,
}

impl Batcher {
    /// Seals the batches whose oldest line waited `max_wait`.
    async fn seal_due(&mut self) {
        let now = Instant::now();
        let max_wait = self.s.max_wait;
        let due: Vec<_> =
            self.pending.iter().filter(|(_, p)| p.started + max_wait <= now).map(|(k, _)| k.clone()).collect();
        for k in due {
            if let Some(p) = self.pending.remove(&k) {
                seal(p, k, &self.positions, &self.out).await;
            }
        }
    }

    /// Seals every batch (the queue closed).
    async fn seal_all(&mut self) {
        let pending: Vec<_> = self.pending.drain().collect();
        for (k, p) in pending {
            seal(p, k, &self.positions, &self.out).await;
        }
    }

    /// Batches a chunk's lines; its position and budget go with the batch of its last line.
    async fn take(&mut self, mut chunk: Chunk) {
        pool::note_activity();
        let now = Instant::now();
        let entries = std::mem::take(&mut chunk.entries);
        let record = chunk.ack.filter(|_| !entries.is_empty());
        let mut c = Taking {
            text: Text::new(std::mem::take(&mut chunk.buf)),
            now,
            read_at: chunk.read_at.unwrap_or(now),
            record,
            lines: u32::try_from(entries.len()).unwrap_or(u32::MAX),
            replayed: chunk.replayed > 0,
            // A copy another client's reader also reads is not shown to the alert tap twice.
            tap: !chunk.echo,
            runs: Vec::new(),
            last: i64::MIN,
            tenants: Vec::new(),
        };
        let mut last_tenant: Option<Option<Arc<str>>> = None;
        // Entries come in runs of one stream (a file's lines): look the stream,
        // its batch and its last timestamp up once per run, not once per line.
        let mut i = 0;
        while i < entries.len() {
            let sid = entries[i].stream;
            let stream = chunk.stream(&entries[i]).clone();
            let run_end = entries[i..].iter().position(|e| e.stream != sid).map_or(entries.len(), |n| i + n);
            self.take_run(&chunk, &stream, &entries[i..run_end], &mut c).await;
            last_tenant = Some(stream.tenant.clone());
            i = run_end;
        }
        if let Some(tap) = self.tap.as_mut().filter(|_| c.tap) {
            tap.flush();
        }
        self.finish_chunk(chunk, c, last_tenant).await;
    }

    /// Batches a run of one stream's lines, sealing batches that fill up.
    async fn take_run(&mut self, chunk: &Chunk, stream: &StreamRef, run: &[Entry], c: &mut Taking) {
        let tenant = stream.tenant.clone();
        c.last = self.last_ts.get(stream).copied().unwrap_or(i64::MIN);
        let mut i = 0;
        while i < run.len() {
            // Lines read again and not sent are recorded, so the file's
            // records count every line (see `positions::Replay`).
            while i < run.len() && run[i].skip {
                c.skipped();
                i += 1;
            }
            if i == run.len() {
                break;
            }
            let p = self.pending.entry(tenant.clone()).or_insert_with(|| Pending::new(c.now, &mut self.seq));
            let tap = self.tap.as_deref_mut().filter(|_| c.tap);
            let from = i;
            i = fill(p, tap, self.s.max_bytes, chunk, stream, (run, i), c);
            if i > from && !c.tenants.contains(&tenant) {
                c.tenants.push(tenant.clone());
            }
            if i < run.len() {
                // The batch is full: seal it and go on with a new one. It holds
                // part of this chunk, whose position goes with a later batch: a
                // mark at offset 0 keeps the file's position from passing this
                // batch's lines until it, too, is acknowledged (batches in flight
                // are acknowledged in any order).
                let full = std::mem::replace(p, Pending::new(c.now, &mut self.seq));
                if let Some(a) = c.record.filter(|_| !c.runs.is_empty()) {
                    self.positions.flight(a.file, a.offset, c.lines, std::mem::take(&mut c.runs));
                }
                seal(full, tenant.clone(), &self.positions, &self.out).await;
            }
        }
        let last = c.last;
        *self.last_ts.get_or_insert_with(stream, || last) = last;
    }

    /// The chunk's position and budget go with the batch holding its last line
    /// (or, for a chunk whose lines were all dropped, the batch of its tenant-less
    /// default): acknowledging that batch proves every earlier line was handled.
    ///
    /// A chunk whose lines went to other tenants' open batches too has those
    /// sealed first: their marks (offset 0) must be registered before the
    /// batch with the chunk's position, or acknowledging it would move the
    /// position past their lines while they are still on their way (found
    /// when `regression::a_chunk_split_across_batches_...` moved to two
    /// tenants: the position passed 10 lines never acknowledged).
    async fn finish_chunk(&mut self, mut chunk: Chunk, c: Taking, last_tenant: Option<Option<Arc<str>>>) {
        if let Some(a) = c.record.filter(|_| !c.runs.is_empty()) {
            self.positions.flight(a.file, a.offset, c.lines, c.runs);
        }
        if chunk.ack.is_some() {
            for t in c.tenants.iter().filter(|t| last_tenant.as_ref() != Some(*t)) {
                if let Some(p) = self.pending.remove(t) {
                    seal(p, t.clone(), &self.positions, &self.out).await;
                }
            }
        }
        let tenant = last_tenant.unwrap_or_else(|| chunk_tenant_hint(&self.pending));
        let p = self.pending.entry(tenant).or_insert_with(|| Pending::new(c.now, &mut self.seq));
        if let Some(a) = chunk.ack {
            p.add_ack(a);
        }
        if let Some(permit) = chunk.permit.take() {
            p.permits.push(permit);
        }
    }
}

/// What batching one chunk keeps track of.
struct Taking {
    /// The chunk's text, held by the batches with its lines until they are encoded.
    text: Arc<Text>,
    now: Instant,
    read_at: Instant,
    /// The chunk's position, when its lines are recorded (see `positions::flight`).
    record: Option<AckRef>,
    lines: u32,
    /// Lines read again keep their timestamps.
    replayed: bool,
    /// Whether the alert tap sees this chunk's lines.
    tap: bool,
    /// How the file's lines go out, recorded before their batches are sent.
    runs: Vec<Run>,
    /// The last timestamp of the stream being batched.
    last: i64,
    /// The tenants whose open batch took lines of this chunk.
    tenants: Vec<Option<Arc<str>>>,
}

impl Taking {
    /// Records a line read again and not sent.
    fn skipped(&mut self) {
        if self.record.is_some() {
            Run::push_skipped(&mut self.runs);
        }
    }
}

/// Adds `run[from..]`'s lines to `p` until the run ends or the batch is
/// full (past `max_bytes`); returns where it stopped.
fn fill(
    p: &mut Pending,
    mut tap: Option<&mut (dyn LineTap + 'static)>,
    max_bytes: usize,
    chunk: &Chunk,
    stream: &StreamRef,
    (run, from): (&[Entry], usize),
    c: &mut Taking,
) -> usize {
    let idx = p.stream_index(stream, Arc::as_ptr(stream) as usize);
    let mut text = None;
    let mut size = p.size;
    let mut raw = 0usize;
    let mut added = 0usize;
    let mut i = from;
    while i < run.len() {
        let e = &run[i];
        if e.skip {
            c.skipped();
            i += 1;
            continue;
        }
        let line = c.text.line(e);
        if p.lines + added > 0 && size + line.len() + VALUE_OVERHEAD > max_bytes {
            break;
        }
        if let Some(tap) = tap.as_deref_mut() {
            tap.observe(stream, line);
        }
        let ts = if e.assigned_ts && e.ts <= c.last { c.last + 1 } else { e.ts };
        c.last = c.last.max(ts);
        if c.record.is_some() {
            Run::push(&mut c.runs, p.seq, (e.assigned_ts || c.replayed).then_some(ts));
        }
        let t = *text.get_or_insert_with(|| p.body.text_index(&c.text));
        size += p.body.push(idx, t, e, line, ts);
        raw += line.len();
        added += 1;
        i += 1;
    }
    p.size = size;
    p.lines += added;
    p.raw_bytes += raw;
    if added > 0 {
        // This batch's acknowledgement alone does not deliver the
        // chunk: a mark at offset 0 holds the file's position until
        // every batch with its lines is acknowledged (another
        // tenant's batch may have them too).
        if let Some(a) = c.record {
            p.add_ack(AckRef { file: a.file, offset: 0 });
        }
        p.oldest = p.oldest.min(c.read_at);
        match p.sources.get_mut(&chunk.source) {
            Some(n) => *n += added as u64,
            None => {
                p.sources.insert(chunk.source.clone(), added as u64);
            }
        }
    }
    i
}

/// A chunk with no lines left (all dropped) still carries a position: attach it
/// to any open batch, or to a new empty one, so it is acknowledged in order.
fn chunk_tenant_hint(pending: &HashMap<Option<Arc<str>>, Pending>) -> Option<Arc<str>> {
    pending.keys().next().cloned().unwrap_or(None)
}

async fn seal(mut p: Pending, tenant: Option<Arc<str>>, positions: &Positions, out: &mpsc::Sender<Sealed>) {
    let seq = p.seq;
    positions.register(seq, &p.acks);
    let (lines, raw_bytes, acks, permits, sources, oldest) = (
        p.lines,
        p.raw_bytes,
        std::mem::take(&mut p.acks),
        std::mem::take(&mut p.permits),
        std::mem::take(&mut p.sources),
        p.oldest,
    );
    let body = (lines > 0).then(|| Box::new(p.body) as Body);
    let streams = std::mem::take(&mut p.streams);
    let sealed = Sealed { seq, tenant, body, lines, raw_bytes, acks, permits, sources, oldest, streams };
    // The pushers end only after this channel closes, so a send cannot fail
    // while the batcher runs; if it did, the batch stays unacknowledged.
    let _ = out.send(sealed).await;
}
