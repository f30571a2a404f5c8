//! The batcher: chunks in, sealed batches out. Lines are grouped by tenant,
//! then by stream; each line is escaped once, straight into its stream's JSON
//! buffer, with agent-assigned timestamps bumped by 1 ns on a tie so they
//! strictly increase within a stream.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{mpsc, OwnedSemaphorePermit};

use super::reconcile::{lines_read_again, Reconciler};
use super::{BatchSettings, LineTap};
use crate::client::json::escape_json_into;
use crate::pool::{self, Pool};
use crate::positions::{AckRef, Positions, Run};
use crate::queue::{Budget, Chunk, Entry, PerStream, StreamRef};
use crate::util::sleep_until_opt;

/// A sealed batch on its way to the service.
pub(super) struct Sealed {
    pub(super) seq: u64,
    pub(super) tenant: Option<Arc<str>>,
    /// The JSON body in parts, to be sent (or compressed) back to back.
    pub(super) body: Vec<Vec<u8>>,
    pub(super) lines: usize,
    pub(super) raw_bytes: usize,
    pub(super) acks: Vec<AckRef>,
    /// This batch's share of the queue budget, returned when it is acknowledged or given up.
    pub(super) permits: Vec<OwnedSemaphorePermit>,
    pub(super) sources: HashMap<Arc<str>, u64>,
    pub(super) oldest: Instant,
}

/// A tenant's batch being filled. Each stream's buffer starts with its own
/// part of the JSON (`{"streams":[{"stream":{..},"values":[` for the first,
/// `,{"stream":{..},"values":[` for the others), so sealing only closes them
/// and a one-stream batch is sent without copying.
struct Pending {
    /// The batch's sequence number.
    seq: u64,
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
    fn new(now: Instant, seq: &mut u64) -> Self {
        *seq += 1;
        Self {
            seq: *seq,
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
        // Others start small: a batch of many files' first lines has as
        // many streams (10,000 files: 20 MiB at 2 KiB each).
        let mut buf = if first { bodies.take() } else { Vec::with_capacity(stream.labels_json.len() + 256) };
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
    let mut b = Batcher {
        pending: HashMap::new(),
        last_ts: PerStream::default(),
        seq: first_seq(),
        bodies: pool::bodies(s.max_bytes, s.max_in_flight),
        digits: TsDigits::new(),
        s,
        positions,
        out,
        tap,
    };
    loop {
        let deadline = b.pending.values().map(|p| p.started + b.s.max_wait).min();
        let chunk = tokio::select! {
            c = rx.recv() => c,
            _ = sleep_until_opt(deadline.map(Into::into)) => {
                b.seal_due().await;
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
    bodies: &'static Pool<u8>,
    digits: TsDigits,
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
            now,
            read_at: chunk.read_at.unwrap_or(now),
            record,
            lines: u32::try_from(entries.len()).unwrap_or(u32::MAX),
            replayed: chunk.replayed > 0,
            // A copy another client's reader also reads is not shown to the alert tap twice.
            tap: !chunk.echo,
            runs: Vec::new(),
            last: i64::MIN,
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
        pool::CHUNK_TEXT.give(std::mem::take(&mut chunk.buf).into_bytes());
        self.finish_chunk(chunk, c, last_tenant);
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
            let mut enc = Encoder { digits: &mut self.digits, bodies: self.bodies, max_bytes: self.s.max_bytes, tap };
            i = fill(p, &mut enc, chunk, stream, run, i, c);
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
    fn finish_chunk(&mut self, mut chunk: Chunk, c: Taking, last_tenant: Option<Option<Arc<str>>>) {
        if let Some(a) = c.record.filter(|_| !c.runs.is_empty()) {
            self.positions.flight(a.file, a.offset, c.lines, c.runs);
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
}

impl Taking {
    /// Records a line read again and not sent.
    fn skipped(&mut self) {
        if self.record.is_some() {
            Run::push_skipped(&mut self.runs);
        }
    }
}

/// What encodes lines into a batch.
struct Encoder<'a> {
    digits: &'a mut TsDigits,
    bodies: &'static Pool<u8>,
    max_bytes: usize,
    tap: Option<&'a mut (dyn LineTap + 'static)>,
}

/// Adds `run[from..]`'s lines to `p` until the run ends or the batch is
/// full; returns where it stopped.
fn fill(
    p: &mut Pending,
    enc: &mut Encoder<'_>,
    chunk: &Chunk,
    stream: &StreamRef,
    run: &[Entry],
    from: usize,
    c: &mut Taking,
) -> usize {
    let key = Arc::as_ptr(stream) as usize;
    let idx = p.stream_index(stream, key, enc.bodies);
    let (_, values, count) = &mut p.streams[idx];
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
        let line = chunk.line(e);
        if p.lines + added > 0 && size + line.len() + VALUE_OVERHEAD > enc.max_bytes {
            break;
        }
        if let Some(tap) = enc.tap.as_deref_mut() {
            tap.observe(stream, line);
        }
        let ts = if e.assigned_ts && e.ts <= c.last { c.last + 1 } else { e.ts };
        c.last = c.last.max(ts);
        if c.record.is_some() {
            Run::push(&mut c.runs, p.seq, (e.assigned_ts || c.replayed).then_some(ts));
        }
        let before = values.len();
        values.extend_from_slice(if *count == 0 { b"[\"" } else { b",[\"" });
        *count += 1;
        values.extend_from_slice(enc.digits.format(ts.max(0) as u64));
        values.extend_from_slice(b"\",\"");
        escape_json_into(values, line);
        match chunk.metadata(e) {
            // Structured metadata: `[ts, line, {"name": "value"}]`.
            Some(meta) => {
                values.extend_from_slice(b"\",");
                values.extend_from_slice(meta.as_bytes());
                values.push(b']');
            }
            None => values.extend_from_slice(b"\"]"),
        }
        size += values.len() - before;
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
    let body = if lines > 0 { p.into_body() } else { Vec::new() };
    let sealed = Sealed { seq, tenant, body, lines, raw_bytes, acks, permits, sources, oldest };
    // The pushers end only after this channel closes, so a send cannot fail
    // while the batcher runs; if it did, the batch stays unacknowledged.
    let _ = out.send(sealed).await;
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
